#include "tenex/backend/cuda/allocator.hpp"

#include <algorithm>
#include <limits>
#include <new>

namespace tenex::detail::cuda {

CachingAllocator::CachingAllocator(DeviceMemory memory) : memory_(memory) {}

CachingAllocator::~CachingAllocator() { release_cached(); }

std::size_t CachingAllocator::size_class(std::size_t bytes) {
  constexpr std::size_t small = 512, large = std::size_t{1} << 20;
  if (bytes == 0) return small;
  if (bytes > std::numeric_limits<std::size_t>::max() / 2) throw std::bad_alloc();
  if (bytes <= large) return (bytes + small - 1) / small * small;
  // Steps of 1/8 of the power of two below: at most an eighth more than asked.
  std::size_t power = large;
  while (power * 2 <= bytes) power *= 2;
  const std::size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

void CachingAllocator::collect_passed() {
  auto keep = pending_.begin();
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (!it->fence || memory_.passed(it->fence)) {
      if (it->fence) memory_.drop(it->fence);
      ready_.emplace(it->bytes, it->data);
    } else {
      *keep++ = *it;
    }
  }
  pending_.erase(keep, pending_.end());
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto hand_out = [&](void* data) {
    stats_.in_use += size;
    stats_.peak = std::max(stats_.peak, stats_.in_use);
    return data;
  };
  for (int attempt = 0; attempt < 2; ++attempt) {
    collect_passed();
    if (auto it = ready_.find(size); it != ready_.end()) {
      void* data = it->second;
      ready_.erase(it);
      stats_.cached -= size;
      ++stats_.reuses;
      return hand_out(data);
    }
    if (void* data = memory_.allocate(size)) {
      ++stats_.device_allocations;
      return hand_out(data);
    }
    // Out of memory: wait for the work in flight, give the cache back, try once more.
    release_cached_locked();
  }
  throw std::bad_alloc();
}

void CachingAllocator::free(void* data, std::size_t bytes) noexcept {
  if (!data) return;
  const std::size_t size = size_class(bytes);
  void* fence = memory_.fence ? memory_.fence() : nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.in_use -= size;
  stats_.cached += size;
  try {
    pending_.push_back({data, size, fence});
  } catch (...) {  // no memory for the bookkeeping: give the block back instead
    if (fence) memory_.drop(fence);
    if (memory_.wait_all) memory_.wait_all();
    memory_.free(data);
    stats_.cached -= size;
  }
}

void CachingAllocator::release_cached_locked() noexcept {
  if (memory_.wait_all) memory_.wait_all();
  for (const Pending& p : pending_) {
    if (p.fence) memory_.drop(p.fence);
    memory_.free(p.data);
    stats_.cached -= p.bytes;
  }
  pending_.clear();
  for (const auto& [size, data] : ready_) {
    memory_.free(data);
    stats_.cached -= size;
  }
  ready_.clear();
}

void CachingAllocator::release_cached() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak = stats_.in_use;
}

}  // namespace tenex::detail::cuda
