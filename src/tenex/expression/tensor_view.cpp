// TensorView (tensor/tensor_view.hpp) and its Indexed (expression/indexed_view.hpp): a proxy
// tensor whose storages are bound to the user's memory (tensor/view_binding.hpp). Defined in
// the expression layer, as Tensor::operator() is: labelling a view makes an expression.
#include "tenex/expression/indexed_view.hpp"

#include <cstdint>
#include <string>

#include "tenex/error.hpp"
#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex {

namespace {

std::vector<std::size_t> checked_strides(const void* data, std::size_t alignment, const Shape& shape,
                                         std::vector<std::size_t> strides) {
  if (strides.empty()) {
    strides.assign(shape.rank(), 1);
    for (std::size_t d = shape.rank(); d-- > 1;) strides[d - 1] = strides[d] * shape.extent(d);
  } else if (strides.size() != shape.rank()) {
    throw Error("tenex: TensorView: " + std::to_string(strides.size()) + " strides given for shape " +
                shape.to_string() + " of rank " + std::to_string(shape.rank()) +
                " (one stride per mode, in elements; none for row-major)");
  }
  if (shape.size() != 0 && data == nullptr) {
    throw Error("tenex: TensorView: null data for shape " + shape.to_string() + " of " + std::to_string(shape.size()) +
                " elements");
  }
  if (reinterpret_cast<std::uintptr_t>(data) % alignment != 0) {
    throw Error("tenex: TensorView: data at " + std::to_string(reinterpret_cast<std::uintptr_t>(data)) +
                " is not aligned to the element type's " + std::to_string(alignment) + " bytes");
  }
  return strides;
}

}  // namespace

template <class T>
TensorView<T>::TensorView(T* data, Shape shape, std::vector<std::size_t> strides)
    : data_(data), shape_(std::move(shape)), strides_(checked_strides(data, alignof(T), shape_, std::move(strides))),
      binding_(std::make_shared<detail::ViewBinding>(data_, sizeof(T), shape_, strides_)) {
  bind_fresh();
}

template <class T>
TensorView<T>::TensorView(const TensorView& other)
    : data_(other.data_), shape_(other.shape_), strides_(other.strides_), binding_(other.binding_) {
  auto storage = detail::Access::storage(other.proxy_);
  if (storage && storage->pending()) {
    detail::Access::set_storage(proxy_, std::move(storage));
  } else {
    bind_fresh();
  }
}

template <class T>
TensorView<T>& TensorView<T>::operator=(const TensorView& other) {
  if (this != &other) {
    TensorView copy(other);
    data_ = copy.data_;
    shape_ = copy.shape_;
    strides_ = copy.strides_;
    binding_ = copy.binding_;
    detail::Access::set_storage(proxy_, detail::Access::storage(copy.proxy_));
  }
  return *this;
}

template <class T>
TensorView<T>::~TensorView() = default;

template <class T>
bool TensorView<T>::contiguous() const {
  return binding_->contiguous;
}

template <class T>
void TensorView<T>::bind_fresh() {
  auto storage = std::make_shared<detail::Storage<T>>(shape_, detail::Storage<T>::Init::deferred);
  storage->bind(binding_, binding_->contiguous);
  detail::Access::set_storage(proxy_, std::move(storage));
}

template <class T>
Tensor<T>& TensorView<T>::proxy() {
  // A fresh storage each time the view is labelled (unless a result of a pending set: reading it
  // links to that set): the value is the memory's as it is now, and no device copy of an older
  // value is reused.
  auto storage = detail::Access::storage(proxy_);
  if (!storage || !storage->pending()) bind_fresh();
  return proxy_;
}

template <class T>
bool TensorView<T>::pending() const {
  return proxy_.pending();
}

template <class T>
void TensorView<T>::wait() const {
  for (const auto& reader : binding_->readers()) reader->flush();
  proxy_.wait();
}

template <class T>
Indexed<TensorView<T>> TensorView<T>::operator()(std::string_view labels) {
  return Indexed<TensorView<T>>(*this, labels);
}

template <class T>
Indexed<TensorView<T>>::Indexed(TensorView<T>& view, std::string_view labels)
    : Indexed<Tensor<T>>(view.proxy(), labels) {}

#define TENEX_INSTANTIATE_TENSOR_VIEW(T) \
  template class TensorView<T>;          \
  template class Indexed<TensorView<T>>;
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_TENSOR_VIEW)
#undef TENEX_INSTANTIATE_TENSOR_VIEW

}  // namespace tenex
