#include <bit>
#include <cstdlib>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <new>

#include "tenex/tensor/buffer.hpp"
#include "tenex/tensor/host_memory.hpp"
#include "tenex/tensor/memory.hpp"

namespace tenex {

namespace detail {

namespace {

// Blocks below this size are left to malloc, which keeps them cheaply itself. Under
// AddressSanitizer nothing is cached, so a use after free stays visible to it.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t min_cached_bytes = static_cast<std::size_t>(-1);
#else
constexpr std::size_t min_cached_bytes = std::size_t{1} << 20;
#endif
// At most this much memory waits in the cache.
constexpr std::size_t max_cached_bytes = std::size_t{2} << 30;

bool cacheable(std::size_t bytes) { return bytes >= min_cached_bytes && bytes <= max_cached_bytes; }

// The bytes a block is allocated with: a cacheable size rounds up to the next of eight evenly
// spaced sizes per doubling, so that blocks of nearly the same size serve each other.
std::size_t size_class(std::size_t bytes) {
  if (!cacheable(bytes)) return bytes;
  const std::size_t step = std::bit_floor(bytes) / 8;
  return (bytes + step - 1) / step * step;
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

}  // namespace

void* allocate_block(std::size_t bytes) {
  bytes = size_class(bytes);
  if (cacheable(bytes)) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (void* block = c.take(bytes)) return block;
  }
  void* block = std::aligned_alloc(64, bytes);
  if (!block) {
    // Memory held for reuse is the first thing to give back.
    release_cached_memory();
    block = std::aligned_alloc(64, bytes);
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
