// Scratch memory of the CPU kernels: 64-byte aligned and left uninitialised (it is always
// written first).
//
// It comes from the host block cache (tenex/tensor/host_memory.hpp), which keeps large freed
// blocks for the next call: fresh pages cost a page fault and the kernel's zeroing on first
// touch, milliseconds for the tens of megabytes a permuted operand takes, on every call.
#pragma once

#include <cstddef>
#include <limits>
#include <new>

#include "tenex/tensor/host_memory.hpp"

namespace tenex::detail::cpu {

template <class T>
class Scratch {
 public:
  explicit Scratch(std::size_t n) {
    if (n == 0) return;
    if (n > (std::numeric_limits<std::size_t>::max() - 63) / sizeof(T)) throw std::bad_alloc();
    bytes_ = (n * sizeof(T) + 63) / 64 * 64;
    data_ = static_cast<T*>(allocate_block(bytes_));
  }
  ~Scratch() {
    if (data_) free_block(data_, bytes_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace tenex::detail::cpu
