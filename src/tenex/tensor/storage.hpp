// Storage: the elements behind a Tensor, and the state of a pending result.
//
// A Storage is never written once other objects can see it, except by the
// evaluation that fulfils it: an assignment makes a new Storage for its
// target, and a write through Tensor::data() first copies a shared Storage.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <utility>

#include "tenex/export.hpp"
#include "tenex/tensor/buffer.hpp"
#include "tenex/tensor/host_memory.hpp"
#include "tenex/tensor/producer.hpp"
#include "tenex/tensor/shape.hpp"
#include "tenex/tensor/view_binding.hpp"

namespace tenex::detail {


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
  AlignedArray(AlignedArray&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
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
  /// zero / uninitialised: elements allocated now. deferred: the evaluation that fulfils
  /// a pending storage hands it a buffer (adopt) or asks for one (allocate).
  TENEX_API Storage(Shape shape, Init init);
  TENEX_API void allocate();
  /// Takes `buffer` (host memory of at least shape().size() elements) as the value.
  void adopt(Buffer&& buffer);

  const Shape& shape() const { return shape_; }
  /// Host elements; only valid once resolved.
  T* elements() { return static_cast<T*>(host_.data()); }
  const T* elements() const { return static_cast<const T*>(host_.data()); }
  /// The buffer holding the host copy of the value.
  const Buffer& host_buffer() const { return host_; }
  /// A copy of the value on another device (a GPU backend keeps it here between sets);
  /// valid while no one wrote the host copy since. Empty when there is none.
  Buffer& device_copy() { return device_; }
  bool device_copy_valid() const { return device_valid_.load(std::memory_order_acquire); }
  void set_device_copy_valid(bool valid) { device_valid_.store(valid, std::memory_order_release); }

  /// Copies `bytes` of a device buffer to host memory (given by the device backend).
  using Download = void (*)(void* host, const void* device, std::size_t bytes);
  /// Takes `buffer` (device memory of at least shape().size() elements) as the value: a result
  /// stays on the device until the host reads it; resolve() then copies it back once.
  TENEX_API void adopt_device(Buffer&& buffer, Download download);
  /// Whether elements() holds the value (false while it lives on the device only).
  bool host_valid() const { return host_valid_.load(std::memory_order_acquire); }
  /// Copies the device value to the host once, if it lives there only (several threads may
  /// call it at once).
  void ensure_host();
  /// Host elements about to be written: the device copy is no longer the value. Readers on
  /// several threads call it at once (the non-const data()), so the flag is atomic and only
  /// written when it changes.
  T* writable_elements() {
    if (device_valid_.load(std::memory_order_relaxed)) device_valid_.store(false, std::memory_order_release);
    return elements();
  }
  /// The lock of device_copy() while a backend fills it (striped by address).
  TENEX_API std::mutex& residency_mutex() const;

  /// True while an evaluation still has to fill this storage.
  bool pending() const { return pending_.load(std::memory_order_acquire); }
  /// Evaluates the producing set if pending (or waits for the thread that evaluates it), then
  /// rethrows a stored error, then (`to_host`) copies a value that lives on a device only to
  /// the host. Safe on several threads at once.
  void resolve(bool to_host = true);

  // Used by the linked state (under sets_mutex()).
  void mark_pending(const std::shared_ptr<Producer>& producer) {
    std::lock_guard<std::recursive_mutex> lock(sets_mutex());
    producer_ = producer;
    pending_.store(true, std::memory_order_release);
  }
  void set_producer(const std::shared_ptr<Producer>& producer) {
    std::lock_guard<std::recursive_mutex> lock(sets_mutex());
    producer_ = producer;
  }
  std::shared_ptr<Producer> producer() const {
    std::lock_guard<std::recursive_mutex> lock(sets_mutex());
    return producer_.lock();
  }
  /// The extents of a result whose truncated modes (svd or eigen_solve with a Truncation) took
  /// their kept rank: set by the evaluation before fulfil(), once the elements of `shape` are
  /// at the front of the host buffer.
  void set_truncated_shape(Shape shape) { shape_ = std::move(shape); }
  /// Called by the evaluation: the elements are written, or `error` says why not. Wakes the
  /// threads waiting in resolve().
  void fulfil(std::exception_ptr error);
  /// Valid once not pending.
  std::exception_ptr error() const { return error_; }

  /// Binds the storage to a view's memory (view_binding.hpp). `direct`: the elements are the
  /// user's memory (a contiguous view); else a value is gathered from it when first read, and a
  /// result computed apart and scattered into it. Before the storage is shared.
  TENEX_API void bind(std::shared_ptr<ViewBinding> binding, bool direct);
  /// The view this storage belongs to, or null.
  const std::shared_ptr<ViewBinding>& binding() const { return binding_; }
  /// Whether the elements are the view's memory itself.
  bool direct() const { return direct_; }
  /// A pending result of a view that a later statement of its own set writes again: it becomes
  /// a private result (the view's memory takes the later value).
  void unbind() {
    host_ = Buffer();
    binding_.reset();
    direct_ = false;
  }
  /// A bound result computed apart (strided view, memory that overlaps an operand, a device
  /// backend): copies the value into the view's memory; a contiguous view's storage then
  /// holds the user's memory again.
  TENEX_API void copy_out();

 private:
  Shape shape_;
  Buffer host_;
  Buffer device_;
  std::atomic<bool> device_valid_{false};
  std::atomic<bool> host_valid_{true};
  Download download_ = nullptr;
  std::atomic<bool> pending_{false};  // set under sets_mutex(); cleared (release) after the value
  std::weak_ptr<Producer> producer_;  // under sets_mutex()
  std::exception_ptr error_;
  std::shared_ptr<ViewBinding> binding_;  // a TensorView's memory (null for a tensor's own)
  bool direct_ = false;
};

}  // namespace tenex::detail
