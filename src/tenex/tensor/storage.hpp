// Storage: the elements behind a Tensor, and the state of a pending result.
//
// A Storage is never written once other objects can see it, except by the
// evaluation that fulfils it: an assignment makes a new Storage for its
// target, and a write through Tensor::data() first copies a shared Storage.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <new>

#include "tenex/tensor/host_memory.hpp"
#include "tenex/tensor/shape.hpp"

namespace tenex::detail {

class LinkedState;

/// 64-byte aligned, uninitialised array of T.
template <class T>
class AlignedArray {
 public:
  AlignedArray() = default;
  explicit AlignedArray(std::size_t n) : size_(n) {
    if (n == 0) return;
    if (n > (std::numeric_limits<std::size_t>::max() - 63) / sizeof(T)) throw std::bad_alloc();
    data_ = static_cast<T*>(allocate_block(bytes()));
  }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  AlignedArray(AlignedArray&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr; o.size_ = 0; }
  AlignedArray& operator=(AlignedArray&& o) noexcept {
    if (this != &o) {
      release();
      data_ = o.data_;
      size_ = o.size_;
      o.data_ = nullptr;
      o.size_ = 0;
    }
    return *this;
  }
  ~AlignedArray() { release(); }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::size_t bytes() const { return (size_ * sizeof(T) + 63) / 64 * 64; }
  void release() noexcept {
    if (data_) free_block(data_, bytes());
    data_ = nullptr;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

template <class T>
class Storage {
 public:
  enum class Init { zero, uninitialised, deferred };
  /// zero / uninitialised: elements allocated now. deferred: allocated by allocate(),
  /// which the evaluation that fulfils a pending storage calls.
  Storage(Shape shape, Init init);
  void allocate();
  /// Takes `elements` (of shape().size() elements) as the value.
  void adopt(AlignedArray<T>&& elements);

  const Shape& shape() const { return shape_; }
  /// Elements; only valid once resolved.
  T* elements() { return elements_.data(); }
  const T* elements() const { return elements_.data(); }

  /// True while an evaluation still has to fill this storage.
  bool pending() const { return pending_; }
  /// Evaluates the producing set if pending, then rethrows a stored error.
  void resolve();

  // Used by the linked state.
  void mark_pending(const std::shared_ptr<LinkedState>& producer) { pending_ = true; producer_ = producer; }
  void set_producer(const std::shared_ptr<LinkedState>& producer) { producer_ = producer; }
  std::shared_ptr<LinkedState> producer() const { return producer_.lock(); }
  /// Called by the evaluation: the elements are written, or `error` says why not.
  void fulfil(std::exception_ptr error);
  std::exception_ptr error() const { return error_; }

 private:
  Shape shape_;
  AlignedArray<T> elements_;
  bool pending_ = false;
  std::weak_ptr<LinkedState> producer_;
  std::exception_ptr error_;
};

}  // namespace tenex::detail
