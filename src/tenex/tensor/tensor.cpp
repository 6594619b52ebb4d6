#include "tenex/tensor/tensor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>

#include "tenex/error.hpp"
#include "tenex/labels.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex {

namespace detail {

std::recursive_mutex& sets_mutex() {
  static std::recursive_mutex* mutex = new std::recursive_mutex;  // never destroyed: sets may run at exit
  return *mutex;
}

template <class T>
Storage<T>::Storage(Shape shape, Init init) : shape_(std::move(shape)) {
  if (init == Init::deferred) return;
  try {
    allocate();
  } catch (const std::bad_alloc&) {
    throw BackendError("tenex: Tensor: cannot allocate " + std::to_string(shape_.size()) + " elements of " +
                       std::to_string(sizeof(T)) + " bytes for shape " + shape_.to_string());
  }
  if (init == Init::zero && shape_.size() > 0)
    std::memset(static_cast<void*>(elements()), 0, shape_.size() * sizeof(T));
}

template <class T>
void Storage<T>::allocate() {
  const std::size_t n = shape_.size();
  if (n > 0 && (!host_ || host_.bytes() < n * sizeof(T))) {
    if (n > (std::numeric_limits<std::size_t>::max() - 63) / sizeof(T)) throw std::bad_alloc();
    host_ = allocate_host_buffer(n * sizeof(T));
  }
  device_valid_ = false;
  host_valid_.store(true, std::memory_order_release);
}

template <class T>
void Storage<T>::adopt(Buffer&& buffer) {
  host_ = std::move(buffer);
  device_valid_ = false;
  host_valid_.store(true, std::memory_order_release);
}

namespace {
std::mutex& residency_lock(const void* storage) {
  static std::array<std::mutex, 64>* locks = new std::array<std::mutex, 64>;  // never destroyed
  return (*locks)[(reinterpret_cast<std::uintptr_t>(storage) / alignof(std::max_align_t)) % locks->size()];
}
}  // namespace

template <class T>
std::mutex& Storage<T>::residency_mutex() const {
  return residency_lock(this);
}

template <class T>
void Storage<T>::adopt_device(Buffer&& buffer, Download download) {
  device_ = std::move(buffer);
  device_valid_ = true;
  download_ = download;
  host_ = Buffer();
  host_valid_.store(shape_.size() == 0, std::memory_order_release);
}

template <class T>
void Storage<T>::bind(std::shared_ptr<ViewBinding> binding, bool direct) {
  binding_ = std::move(binding);
  direct_ = direct;
  if (direct_) {
    host_ = Buffer(binding_->data, shape_.size() * sizeof(T), Device::host, nullptr);
  } else if (!pending()) {
    host_valid_.store(shape_.size() == 0, std::memory_order_release);  // gathered when first read
  }
}

template <class T>
void Storage<T>::copy_out() {
  ensure_host();
  const ViewBinding& view = *binding_;
  if (!view.contiguous) {
    view.scatter(elements());
  } else if (elements() != view.data) {
    const std::size_t bytes = shape_.size() * sizeof(T);
    if (bytes) std::memcpy(view.data, elements(), bytes);
    host_ = Buffer(view.data, bytes, Device::host, nullptr);
    direct_ = true;
  }
}

template <class T>
void Storage<T>::ensure_host() {
  if (host_valid_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(residency_mutex());
  if (host_valid_.load(std::memory_order_relaxed)) return;
  const std::size_t bytes = shape_.size() * sizeof(T);
  Buffer host;
  if (binding_ && binding_->contiguous && bytes) {
    // A view's result comes back from the device straight into the user's memory.
    host = Buffer(binding_->data, bytes, Device::host, nullptr);
    direct_ = true;
  } else {
    try {
      host = allocate_host_buffer(bytes);
    } catch (const std::bad_alloc&) {
      throw BackendError("tenex: out of host memory while copying " + std::to_string(bytes) + " bytes (shape " +
                         shape_.to_string() + ") to the host");
    }
  }
  if (binding_ && !download_) {
    // A strided view read for the first time: its elements gathered into row-major order.
    binding_->gather(static_cast<T*>(host.data()));
    host_ = std::move(host);
    host_valid_.store(true, std::memory_order_release);
    return;
  }
  download_(host.data(), device_.data(), bytes);
  host_ = std::move(host);
  host_valid_.store(true, std::memory_order_release);
}

template <class T>
void Storage<T>::resolve(bool to_host) {
  if (pending_.load(std::memory_order_acquire)) {
    if (auto p = producer()) p->flush();
    // Flushing ran the set here, or another thread took it first and is running it: every
    // storage of a set that was taken is fulfilled, with the set's error if it failed.
    while (pending_.load(std::memory_order_acquire)) pending_.wait(true, std::memory_order_acquire);
  }
  if (error_) std::rethrow_exception(error_);
  // A strided view's value is on the host only, gathered when first read.
  if ((to_host || (binding_ && !download_)) && !host_valid_.load(std::memory_order_acquire)) ensure_host();
}

template <class T>
void Storage<T>::fulfil(std::exception_ptr error) {
  {
    std::lock_guard<std::recursive_mutex> lock(sets_mutex());
    error_ = std::move(error);
    producer_.reset();
    pending_.store(false, std::memory_order_release);
  }
  pending_.notify_all();
}

}  // namespace detail

namespace {

template <class T>
detail::Storage<T>& require_value(detail::Storage<T>* storage, const char* operation) {
  if (!storage) throw Error(std::string("tenex: ") + operation + ": the tensor has no value");
  return *storage;
}

// The locks that serialise copying a shared storage in the non-const data() with taking the
// storage on other threads (copies, captures by expressions), striped by the tensor's address.
std::mutex& tensor_lock(const void* tensor) {
  static std::array<std::mutex, 64>* locks = new std::array<std::mutex, 64>;  // never destroyed
  return (*locks)[(reinterpret_cast<std::uintptr_t>(tensor) / alignof(std::max_align_t)) % locks->size()];
}

}  // namespace

template <class T>
void Tensor<T>::replace(std::shared_ptr<detail::Storage<T>> storage, bool unshared) noexcept {
  storage_ = std::move(storage);
  retired_.reset();
  current_.store(storage_.get(), std::memory_order_release);
  unshared_.store(unshared, std::memory_order_release);
}

template <class T>
std::shared_ptr<detail::Storage<T>> Tensor<T>::share() const {
  std::lock_guard<std::mutex> lock(tensor_lock(this));
  unshared_.store(false, std::memory_order_relaxed);
  return storage_;
}

template <class T>
Tensor<T>::Tensor() = default;

template <class T>
Tensor<T>::Tensor(Shape shape) {
  replace(std::make_shared<detail::Storage<T>>(std::move(shape), detail::Storage<T>::Init::zero), true);
}

template <class T>
Tensor<T>::Tensor(Shape shape, std::vector<T> row_major) {
  if (row_major.size() != shape.size()) {
    throw ShapeError("tenex: Tensor: " + std::to_string(row_major.size()) + " values given for shape " +
                     shape.to_string() + " of size " + std::to_string(shape.size()));
  }
  auto storage = std::make_shared<detail::Storage<T>>(std::move(shape), detail::Storage<T>::Init::uninitialised);
  std::copy(row_major.begin(), row_major.end(), storage->elements());
  replace(std::move(storage), true);
}

template <class T>
Tensor<T>::Tensor(const Tensor& other) {
  if (detail::Storage<T>* s = other.current_.load(std::memory_order_acquire)) s->resolve();
  replace(other.share(), false);
}

template <class T>
Tensor<T>::Tensor(Tensor&& other) noexcept {
  const bool unshared = other.unshared_.load(std::memory_order_relaxed);
  replace(std::move(other.storage_), unshared);
  other.replace(nullptr, false);
}

template <class T>
Tensor<T>& Tensor<T>::operator=(const Tensor& other) {
  if (this == &other) return *this;
  if (detail::Storage<T>* s = other.current_.load(std::memory_order_acquire)) s->resolve();
  replace(other.share(), false);
  return *this;
}

template <class T>
Tensor<T>& Tensor<T>::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  const bool unshared = other.unshared_.load(std::memory_order_relaxed);
  replace(std::move(other.storage_), unshared);
  other.replace(nullptr, false);
  return *this;
}

template <class T>
Tensor<T>::~Tensor() = default;

template <class T>
std::shared_ptr<detail::Storage<T>> Tensor<T>::storage() const {
  return share();
}

template <class T>
void Tensor<T>::set_storage(std::shared_ptr<detail::Storage<T>> storage) {
  replace(std::move(storage), false);
}

template <class T>
std::weak_ptr<const void> Tensor<T>::lifetime() const {
  std::lock_guard<std::mutex> lock(tensor_lock(this));
  if (!lifetime_) lifetime_ = std::make_shared<char>(0);
  return lifetime_;
}

template <class T>
bool Tensor<T>::has_value() const {
  return current_.load(std::memory_order_acquire) != nullptr;
}

template <class T>
const Shape& Tensor<T>::shape() const {
  auto& s = require_value(current_.load(std::memory_order_acquire), "Tensor::shape");
  // A truncated decomposition's kept rank is known once its set has run: run it (as data() does).
  if (s.pending()) {
    if (const auto producer = s.producer(); producer && producer->decides_extents()) s.resolve();
  }
  return s.shape();
}

template <class T>
const T* Tensor<T>::data() const {
  auto& s = require_value(current_.load(std::memory_order_acquire), "Tensor::data");
  s.resolve();
  return s.elements();
}

template <class T>
T* Tensor<T>::data() {
  // The storage is this tensor's alone and evaluated: one atomic load.
  if (unshared_.load(std::memory_order_acquire)) return current_.load(std::memory_order_relaxed)->writable_elements();
  return detach();
}

template <class T>
T* Tensor<T>::detach() {
  // Waiting for a pending value may run its set: not under the lock.
  require_value(current_.load(std::memory_order_acquire), "Tensor::data").resolve();
  std::lock_guard<std::mutex> lock(tensor_lock(this));
  if (!unshared_.load(std::memory_order_relaxed)) {
    // Expressions written earlier, or copies, hold this storage as the value they read: copy
    // before handing out writable elements. Another thread that got here first made the copy.
    if (storage_.use_count() > 1) {
      const detail::Storage<T>& s = *storage_;
      auto copy = std::make_shared<detail::Storage<T>>(s.shape(), detail::Storage<T>::Init::uninitialised);
      if (s.shape().size() > 0) std::memcpy(copy->elements(), s.elements(), s.shape().size() * sizeof(T));
      retired_ = std::exchange(storage_, std::move(copy));
      current_.store(storage_.get(), std::memory_order_release);
    }
    unshared_.store(true, std::memory_order_release);
  }
  return storage_->writable_elements();
}

template <class T>
std::vector<T> Tensor<T>::to_vector() const {
  std::shared_ptr<detail::Storage<T>> owned;
  {
    // Owned while copied: a copy on another thread may replace the storage meanwhile.
    std::lock_guard<std::mutex> lock(tensor_lock(this));
    owned = storage_;
  }
  auto& s = require_value(owned.get(), "Tensor::to_vector");
  s.resolve();
  return std::vector<T>(s.elements(), s.elements() + s.shape().size());
}

template <class T>
std::size_t Tensor<T>::offset(const AtIndex* index, std::size_t count) const {
  const Shape& s = require_value(current_.load(std::memory_order_acquire), "Tensor::at").shape();
  if (count != s.rank()) {
    throw Error("tenex: Tensor::at: " + std::to_string(count) + " indices given for a tensor of rank " +
                std::to_string(s.rank()) + " (shape " + s.to_string() + ")");
  }
  std::size_t off = 0;
  for (std::size_t d = 0; d < count; ++d) {
    const AtIndex& i = index[d];
    if (i.negative || i.magnitude >= s.extent(d)) {
      // Appended, not (i.negative ? "-" : "") + std::to_string(...): GCC 12 inlines that
      // operator+ into a false -Wrestrict warning (GCC bug 105329).
      std::string shown = i.negative ? "-" : "";
      shown += std::to_string(i.magnitude);
      throw Error("tenex: Tensor::at: index " + shown + " is out of range for mode " + std::to_string(d) +
                  " of extent " + std::to_string(s.extent(d)) + " (shape " + s.to_string() + ")");
    }
    off = off * s.extent(d) + static_cast<std::size_t>(i.magnitude);
  }
  return off;
}

template <class T>
bool Tensor<T>::pending() const {
  const detail::Storage<T>* s = current_.load(std::memory_order_acquire);
  return s && s->pending();
}

template <class T>
void Tensor<T>::wait() const {
  if (detail::Storage<T>* s = current_.load(std::memory_order_acquire)) s->resolve();
}

template <class T>
void fill_random(Tensor<T>& t, std::uint64_t seed) {
  if (!t.has_value()) throw Error("tenex: fill_random: the tensor has no value: give it a shape first");
  T* p = t.data();
  // splitmix64: reproducible across platforms and standard libraries.
  std::uint64_t state = seed + 0x9E3779B97F4A7C15ULL;
  auto next = [&state] {  // uniform in [-1, 1)
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return 2.0 * (static_cast<double>(z >> 11) * 0x1.0p-53) - 1.0;
  };
  for (std::size_t i = 0, n = t.size(); i < n; ++i) {
    if constexpr (is_complex_v<T>) {
      using R = real_type_t<T>;
      const double re = next();  // both parts random, the real part first
      p[i] = T(static_cast<R>(re), static_cast<R>(next()));
    } else {
      p[i] = static_cast<T>(next());
    }
  }
}

template <class T>
bool allclose(const Tensor<T>& a, const Tensor<T>& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  // Owned while compared (see to_vector).
  a.wait();
  b.wait();
  const auto sa = detail::Access::storage(a), sb = detail::Access::storage(b);
  const T* pa = sa->elements();
  const T* pb = sb->elements();
  for (std::size_t i = 0, n = a.size(); i < n; ++i) {
    if constexpr (is_complex_v<T>) {
      // |x - y| <= atol + rtol |y|, numpy's rule on the complex modulus.
      const std::complex<double> x(pa[i]), y(pb[i]);
      if (std::isnan(x.real()) || std::isnan(x.imag()) || std::isnan(y.real()) || std::isnan(y.imag())) return false;
      if (std::abs(x - y) > atol + rtol * std::abs(y)) return false;
    } else {
      double x = pa[i], y = pb[i];
      if (std::isnan(x) || std::isnan(y)) return false;
      if (std::abs(x - y) > atol + rtol * std::abs(y)) return false;
    }
  }
  return true;
}

#define TENEX_INSTANTIATE_TENSOR(T)                                  \
  template class detail::Storage<T>;                                 \
  template class Tensor<T>;                                          \
  template TENEX_API void fill_random<T>(Tensor<T>&, std::uint64_t); \
  template TENEX_API bool allclose<T>(const Tensor<T>&, const Tensor<T>&, double, double);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_TENSOR)
#undef TENEX_INSTANTIATE_TENSOR

}  // namespace tenex
