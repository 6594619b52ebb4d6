// tenex/expression/indexed_view.hpp — a TensorView labelled: `v("i,j")`.
//
// Indexed<TensorView<T>> is an Indexed<Tensor<T>> (an Expression<Tensor<T>>), so views and
// tensors mix freely in one statement, and a view is a target like a tensor:
//
//   tenex::TensorView<double> v(user_memory, {m, n});
//   v("i,j") = a("i,k") * b("k,j");        // written into user_memory
//   c("i,j") = v("i,j") + t("j,i");        // read where it lies
//
// A view's shape is fixed: assigning a result of other extents throws tenex::ShapeError and
// writes nothing (tensor/tensor_view.hpp has the lifetime rule).
#pragma once

#include <string_view>

#include "tenex/expression/indexed.hpp"
#include "tenex/tensor/tensor_view.hpp"

namespace tenex {

template <class T>
class TENEX_API Indexed<TensorView<T>> : public Indexed<Tensor<T>> {
 public:
  /// Labels `view`'s modes. Throws ShapeError for malformed labels.
  Indexed(TensorView<T>& view, std::string_view labels);
  /// The same labelled view.
  Indexed(const Indexed& other) = default;
  /// The same labelled view.
  Indexed(Indexed&& other) noexcept = default;
  ~Indexed() override = default;

  using Indexed<Tensor<T>>::operator=;
  /// Records `view = rhs`.
  Indexed& operator=(const Indexed& rhs) {
    Indexed<Tensor<T>>::operator=(static_cast<const Expression<Tensor<T>>&>(rhs));
    return *this;
  }
};

#define TENEX_DECLARE_INDEXED_VIEW(T) extern template class Indexed<TensorView<T>>;
TENEX_FOR_EACH_SCALAR(TENEX_DECLARE_INDEXED_VIEW)
#undef TENEX_DECLARE_INDEXED_VIEW

}  // namespace tenex
