// The caching device allocator of the CUDA backend.
//
// cudaMalloc and cudaFree synchronize the device and take tens of microseconds: a set that
// frees its intermediates and a loop that runs the same set again would pay them for every
// node. Blocks are rounded up to a size class and, once freed, kept for the next request of
// that class. A freed block may still be read by kernels in flight on the backend's streams,
// so it is kept with a fence (events recorded on those streams) and reused once the fence
// has passed. When the device is out of memory, the allocator waits for the fences, returns
// every cached block to the device and tries once more; then it throws std::bad_alloc, which
// the executor turns into a tenex::BackendError naming the node and its bytes.
//
// The device is reached through DeviceMemory's functions, so the bookkeeping is tested
// without a device (tests/backend/cuda/).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace tenex::detail::cuda {

struct DeviceMemory {
  /// Returns null when the device is out of memory; throws on any other failure.
  void* (*allocate)(std::size_t bytes) = nullptr;
  void (*free)(void* data) noexcept = nullptr;
  /// A fence after the work queued so far (null: none needed), whether it has passed,
  /// and its release. wait_all() waits for all queued work.
  void* (*fence)() noexcept = nullptr;
  bool (*passed)(void* fence) noexcept = nullptr;
  void (*drop)(void* fence) noexcept = nullptr;
  void (*wait_all)() noexcept = nullptr;
};

struct AllocatorStats {
  std::size_t in_use = 0;              // bytes handed out and not freed
  std::size_t cached = 0;              // bytes freed and kept (waiting for a fence or ready)
  std::size_t peak = 0;                // largest in_use since reset_peak()
  std::size_t device_allocations = 0;  // calls of DeviceMemory::allocate that succeeded
  std::size_t reuses = 0;              // requests served from the cache
};

class CachingAllocator {
 public:
  explicit CachingAllocator(DeviceMemory memory);
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  ~CachingAllocator();

  /// The bytes a request of `bytes` takes: 512-byte steps up to 1 MiB, then at most an
  /// eighth more than asked (steps of a power of two).
  static std::size_t size_class(std::size_t bytes);

  /// A block of at least `bytes` (size_class(bytes)); throws std::bad_alloc when the device
  /// has no room even after the cache is returned to it.
  void* allocate(std::size_t bytes);
  /// Returns a block from allocate(bytes) to the cache, behind a fence.
  void free(void* data, std::size_t bytes) noexcept;
  /// Returns every cached block to the device (waiting for the fences).
  void release_cached() noexcept;

  AllocatorStats stats() const;
  /// Starts a new peak at the bytes in use now.
  void reset_peak();

 private:
  struct Pending {
    void* data;
    std::size_t bytes;
    void* fence;
  };
  void collect_passed();  // under mutex_
  void release_cached_locked() noexcept;

  DeviceMemory memory_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> ready_;  // by size class
  std::vector<Pending> pending_;
  AllocatorStats stats_;
};

}  // namespace tenex::detail::cuda
