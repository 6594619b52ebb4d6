#include "tenex/tensor/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "tenex/error.hpp"
#include "tenex/labels.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex {

namespace detail {

template <class T>
Storage<T>::Storage(Shape shape, Init init) : shape_(std::move(shape)) {
  if (init == Init::deferred) return;
  try {
    allocate();
  } catch (const std::bad_alloc&) {
    throw BackendError("tenex: Tensor: cannot allocate " + std::to_string(shape_.size()) + " elements of " +
                       std::to_string(sizeof(T)) + " bytes for shape " + shape_.to_string());
  }
  if (init == Init::zero && shape_.size() > 0) std::memset(elements(), 0, shape_.size() * sizeof(T));
}

template <class T>
void Storage<T>::allocate() {
  const std::size_t n = shape_.size();
  if (n > 0 && (!host_ || host_.bytes() < n * sizeof(T))) {
    if (n > (std::numeric_limits<std::size_t>::max() - 63) / sizeof(T)) throw std::bad_alloc();
    host_ = allocate_host_buffer(n * sizeof(T));
  }
  device_valid_ = false;
}

template <class T>
void Storage<T>::adopt(Buffer&& buffer) {
  host_ = std::move(buffer);
  device_valid_ = false;
}

template <class T>
void Storage<T>::resolve() {
  if (pending_) {
    if (auto producer = producer_.lock()) producer->flush();
    if (pending_) {
      throw InternalError("tenex: a pending result lost the set that was to produce it");
    }
  }
  if (error_) std::rethrow_exception(error_);
}

template <class T>
void Storage<T>::fulfil(std::exception_ptr error) {
  error_ = std::move(error);
  pending_ = false;
  producer_.reset();
}

}  // namespace detail

namespace {

template <class T>
detail::Storage<T>& require_value(const std::shared_ptr<detail::Storage<T>>& storage, const char* operation) {
  if (!storage) throw Error(std::string("tenex: ") + operation + ": the tensor has no value");
  return *storage;
}

}  // namespace

template <class T>
Tensor<T>::Tensor() = default;

template <class T>
Tensor<T>::Tensor(Shape shape)
    : storage_(std::make_shared<detail::Storage<T>>(std::move(shape), detail::Storage<T>::Init::zero)) {}

template <class T>
Tensor<T>::Tensor(Shape shape, std::vector<T> row_major) {
  if (row_major.size() != shape.size()) {
    throw ShapeError("tenex: Tensor: " + std::to_string(row_major.size()) + " values given for shape " +
                     shape.to_string() + " of size " + std::to_string(shape.size()));
  }
  storage_ = std::make_shared<detail::Storage<T>>(std::move(shape), detail::Storage<T>::Init::uninitialised);
  std::copy(row_major.begin(), row_major.end(), storage_->elements());
}

template <class T>
Tensor<T>::Tensor(const Tensor& other) : storage_(other.storage_) {
  if (storage_) storage_->resolve();
}

template <class T>
Tensor<T>::Tensor(Tensor&& other) noexcept : storage_(std::move(other.storage_)) {}

template <class T>
Tensor<T>& Tensor<T>::operator=(const Tensor& other) {
  if (other.storage_) other.storage_->resolve();
  storage_ = other.storage_;
  return *this;
}

template <class T>
Tensor<T>& Tensor<T>::operator=(Tensor&& other) noexcept {
  storage_ = std::move(other.storage_);
  return *this;
}

template <class T>
Tensor<T>::~Tensor() = default;

template <class T>
bool Tensor<T>::has_value() const {
  return storage_ != nullptr;
}

template <class T>
const Shape& Tensor<T>::shape() const {
  return require_value(storage_, "Tensor::shape").shape();
}

template <class T>
const T* Tensor<T>::data() const {
  auto& s = require_value(storage_, "Tensor::data");
  s.resolve();
  return s.elements();
}

template <class T>
T* Tensor<T>::data() {
  auto& s = require_value(storage_, "Tensor::data");
  s.resolve();
  // Expressions written earlier hold this storage as the value they read: copy before writing.
  if (storage_.use_count() > 1) {
    auto copy = std::make_shared<detail::Storage<T>>(s.shape(), detail::Storage<T>::Init::uninitialised);
    if (s.shape().size() > 0) std::memcpy(copy->elements(), s.elements(), s.shape().size() * sizeof(T));
    storage_ = std::move(copy);
  }
  return storage_->elements();
}

template <class T>
std::vector<T> Tensor<T>::to_vector() const {
  const T* p = data();
  return std::vector<T>(p, p + storage_->shape().size());
}

template <class T>
std::size_t Tensor<T>::offset(const AtIndex* index, std::size_t count) const {
  const Shape& s = require_value(storage_, "Tensor::at").shape();
  if (count != s.rank()) {
    throw Error("tenex: Tensor::at: " + std::to_string(count) + " indices given for a tensor of rank " +
                std::to_string(s.rank()) + " (shape " + s.to_string() + ")");
  }
  std::size_t off = 0;
  for (std::size_t d = 0; d < count; ++d) {
    const AtIndex& i = index[d];
    if (i.negative || i.magnitude >= s.extent(d)) {
      const std::string shown = (i.negative ? "-" : "") + std::to_string(i.magnitude);
      throw Error("tenex: Tensor::at: index " + shown + " is out of range for mode " + std::to_string(d) +
                  " of extent " + std::to_string(s.extent(d)) + " (shape " + s.to_string() + ")");
    }
    off = off * s.extent(d) + static_cast<std::size_t>(i.magnitude);
  }
  return off;
}

template <class T>
bool Tensor<T>::pending() const {
  return storage_ && storage_->pending();
}

template <class T>
void Tensor<T>::wait() const {
  if (storage_) storage_->resolve();
}

template <class T>
void fill_random(Tensor<T>& t, std::uint64_t seed) {
  if (!t.has_value()) throw Error("tenex: fill_random: the tensor has no value: give it a shape first");
  T* p = t.data();
  // splitmix64: reproducible across platforms and standard libraries.
  std::uint64_t state = seed + 0x9E3779B97F4A7C15ULL;
  for (std::size_t i = 0, n = t.size(); i < n; ++i) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    double unit = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
    p[i] = static_cast<T>(2.0 * unit - 1.0);
  }
}

template <class T>
bool allclose(const Tensor<T>& a, const Tensor<T>& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  const T* pa = a.data();
  const T* pb = b.data();
  for (std::size_t i = 0, n = a.size(); i < n; ++i) {
    double x = pa[i], y = pb[i];
    if (std::isnan(x) || std::isnan(y)) return false;
    if (std::abs(x - y) > atol + rtol * std::abs(y)) return false;
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
