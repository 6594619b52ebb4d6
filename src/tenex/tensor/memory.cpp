#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "tenex/tensor/memory.hpp"
#include "tenex/tensor/storage.hpp"

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

struct BlockCache {
  std::mutex mutex;
  std::multimap<std::size_t, void*> blocks;
  std::size_t bytes = 0;

  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [size, block] : blocks) std::free(block);
    blocks.clear();
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
  if (bytes >= min_cached_bytes) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.blocks.find(bytes);
    if (it != c.blocks.end()) {
      void* block = it->second;
      c.blocks.erase(it);
      c.bytes -= bytes;
      return block;
    }
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
  if (bytes >= min_cached_bytes) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.bytes + bytes <= max_cached_bytes) {
      c.blocks.emplace(bytes, block);
      c.bytes += bytes;
      return;
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
