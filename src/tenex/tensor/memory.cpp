#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "tenex/tensor/buffer.hpp"
#include "tenex/tensor/host_memory.hpp"
#include "tenex/tensor/memory.hpp"

namespace tenex {

namespace detail {

namespace {

// Blocks below min_cached_bytes are left to malloc, which keeps them cheaply itself; from
// 64 KiB on, glibc's malloc maps and unmaps them (or trims its heap), so a result of a few
// hundred KiB written in a loop faulted in every page afresh on every statement (a contraction
// writing a 553 KB c: 120 page faults a call, 0.04 ms of 0.7). Blocks
// of at least huge_block_bytes are made of whole 2 MiB pages where the system offers them
// (transparent huge pages on request, Linux's "madvise" mode): a page fault then maps 2 MiB
// instead of 4 KiB, so first touch of a fresh block costs a fraction of the faults, and the
// kernels' strided reads miss the TLB far less. Under AddressSanitizer neither: nothing is
// cached, so a use after free stays visible to it.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t min_cached_bytes = static_cast<std::size_t>(-1);
constexpr std::size_t huge_block_bytes = static_cast<std::size_t>(-1);
#else
constexpr std::size_t min_cached_bytes = std::size_t{64} << 10;
constexpr std::size_t huge_block_bytes = std::size_t{8} << 20;
#endif
constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;
// At most this much memory waits in the cache.
constexpr std::size_t max_cached_bytes = std::size_t{2} << 30;

bool cacheable(std::size_t bytes) { return bytes >= min_cached_bytes && bytes <= max_cached_bytes; }

// The bytes a block is allocated with: a cacheable size rounds up to the next of eight evenly
// spaced sizes per doubling, so that blocks of nearly the same size serve each other; a huge
// block to whole huge pages as well (at most 1 MiB more, an eighth of the smallest).
std::size_t size_class(std::size_t bytes) {
  if (!cacheable(bytes)) return bytes;
  std::size_t step = std::bit_floor(bytes) / 8;
  if (bytes >= huge_block_bytes) step = std::max(step, huge_page_bytes);
  return (bytes + step - 1) / step * step;
}

// A fresh block from the system (null if there is none): huge ones aligned to, and asking
// for, huge pages.
void* fresh_block(std::size_t bytes) {
  if (bytes < huge_block_bytes || bytes % huge_page_bytes != 0) return std::aligned_alloc(64, bytes);
  void* block = std::aligned_alloc(huge_page_bytes, bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: where the system declines, the block still works with small pages.
  if (block) static_cast<void>(madvise(block, bytes, MADV_HUGEPAGE));
#endif
  return block;
}

struct BlockCache {
  struct Idle {
    void* block;
    std::size_t bytes;
  };

  std::mutex mutex;
  std::list<Idle> idle;                                           // least recently freed first
  std::multimap<std::size_t, std::list<Idle>::iterator> by_size;  // equal sizes in the order freed
  std::size_t bytes = 0;

  // The most recently freed block of `size` bytes (its pages are the likeliest to be in
  // cache), or null. Called with the mutex held.
  void* take(std::size_t size) {
    const auto [first, last] = by_size.equal_range(size);
    if (first == last) return nullptr;
    const auto it = std::prev(last);
    void* block = it->second->block;
    idle.erase(it->second);
    by_size.erase(it);
    bytes -= size;
    return block;
  }

  // Frees the block freed longest ago. Called with the mutex held.
  void drop_oldest() {
    auto it = by_size.lower_bound(idle.front().bytes);
    while (it->second != idle.begin()) ++it;
    std::free(idle.front().block);
    bytes -= idle.front().bytes;
    by_size.erase(it);
    idle.pop_front();
  }

  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Idle& b : idle) std::free(b.block);
    idle.clear();
    by_size.clear();
    bytes = 0;
  }
};

// Never destroyed: tensors with static storage may free their blocks after main returns.
BlockCache& cache() {
  static BlockCache* instance = new BlockCache;
  return *instance;
}

// Small blocks (a few cache lines: the buffers of tiny tensors written in a loop) are kept
// a few per size and thread, without a lock: aligned_alloc takes longer to find one than a
// small statement takes to run. A block freed on another thread than the one that made it
// joins that thread's list; what a thread keeps is freed when it ends.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t small_block_max = 0;
#else
constexpr std::size_t small_block_max = 1024;
#endif
constexpr std::size_t small_block_step = 64;
constexpr std::size_t small_blocks_kept = 8;

thread_local bool small_blocks_gone = false;  // set once this thread's lists are destroyed

struct SmallBlocks {
  static constexpr std::size_t classes = small_block_max / small_block_step + 1;
  std::array<std::array<void*, small_blocks_kept>, classes> blocks{};
  std::array<std::size_t, classes> count{};
  ~SmallBlocks() {
    small_blocks_gone = true;
    for (std::size_t k = 0; k < classes; ++k) {
      for (std::size_t i = 0; i < count[k]; ++i) std::free(blocks[k][i]);
    }
  }
};

SmallBlocks* small_blocks() {
  if (small_blocks_gone) return nullptr;
  thread_local SmallBlocks lists;
  return &lists;
}

// The list of a small size, or npos.
std::size_t small_class(std::size_t bytes) {
  return bytes == 0 || bytes > small_block_max ? static_cast<std::size_t>(-1)
                                               : (bytes + small_block_step - 1) / small_block_step;
}

}  // namespace

void* allocate_block(std::size_t bytes) {
  if (const std::size_t k = small_class(bytes); k != static_cast<std::size_t>(-1)) {
    if (SmallBlocks* lists = small_blocks(); lists && lists->count[k] > 0) return lists->blocks[k][--lists->count[k]];
    // Every block of a class has the class's size, so that any of them serves any request.
    bytes = k * small_block_step;
  }
  bytes = size_class(bytes);
  if (cacheable(bytes)) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (void* block = c.take(bytes)) return block;
  }
  void* block = fresh_block(bytes);
  if (!block) {
    // Memory held for reuse is the first thing to give back.
    release_cached_memory();
    block = fresh_block(bytes);
  }
  if (!block) throw std::bad_alloc();
  return block;
}

namespace {
void release_host_block(void* data, std::size_t bytes, void*) noexcept { free_block(data, bytes); }
}  // namespace

Buffer allocate_host_buffer(std::size_t bytes) {
  if (bytes == 0) return Buffer();
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  return Buffer(allocate_block(rounded), rounded, Device::host, &release_host_block);
}

void free_block(void* block, std::size_t bytes) noexcept {
  if (const std::size_t k = small_class(bytes); k != static_cast<std::size_t>(-1)) {
    if (SmallBlocks* lists = small_blocks(); lists && lists->count[k] < small_blocks_kept) {
      lists->blocks[k][lists->count[k]++] = block;
      return;
    }
    std::free(block);
    return;
  }
  bytes = size_class(bytes);
  if (cacheable(bytes)) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    // Recent blocks are the likeliest to be asked for again: the oldest make room.
    while (c.bytes + bytes > max_cached_bytes) c.drop_oldest();
    try {
      const auto it = c.idle.insert(c.idle.end(), {block, bytes});
      try {
        c.by_size.emplace(bytes, it);
      } catch (...) {
        c.idle.erase(it);
        throw;
      }
      c.bytes += bytes;
      return;
    } catch (const std::bad_alloc&) {
      // No memory for the bookkeeping: the block goes back instead.
    }
  }
  std::free(block);
}

}  // namespace detail

void release_cached_memory() { detail::cache().release(); }

std::size_t cached_memory_bytes() {
  auto& c = detail::cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.bytes;
}

}  // namespace tenex
