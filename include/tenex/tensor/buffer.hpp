// tenex/tensor/buffer.hpp — bytes on one device, freed by whoever allocated them (for those who
// write a backend: tenex/backend/plugin.hpp).
//
// Backends own their memory: a backend allocates the buffers of a set's intermediates and
// results (the CPU from the host block cache, a GPU backend from its device allocator),
// and a tensor's Storage refers to the buffers that hold its value, with where valid
// copies live. Kernels receive views of buffers, never the buffers themselves.
#pragma once

#include <cstddef>
#include <utility>

#include "tenex/export.hpp"

namespace tenex::detail {

enum class Device { host, cuda };

/// Returns a buffer's bytes to the allocator that made them.
using BufferRelease = void (*)(void* data, std::size_t bytes, void* context) noexcept;

class Buffer {
 public:
  Buffer() = default;
  Buffer(void* data, std::size_t bytes, Device device, BufferRelease release, void* context = nullptr)
      : data_(data), bytes_(bytes), device_(device), release_(release), context_(context) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      device_ = o.device_;
      release_ = std::exchange(o.release_, nullptr);
      context_ = std::exchange(o.context_, nullptr);
    }
    return *this;
  }
  ~Buffer() { reset(); }

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset() noexcept {
    if (data_ && release_) release_(data_, bytes_, context_);
    data_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_ = Device::host;
  BufferRelease release_ = nullptr;
  void* context_ = nullptr;
};

/// A 64-byte aligned host buffer from the block cache (uninitialised).
TENEX_API Buffer allocate_host_buffer(std::size_t bytes);

/// What a kernel sees of a buffer: typed elements on one device.
template <class T>
struct View {
  T* data = nullptr;
  std::size_t size = 0;  // elements
  Device device = Device::host;
};

}  // namespace tenex::detail
