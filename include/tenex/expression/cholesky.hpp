// tenex/expression/cholesky.hpp — the Cholesky factor of a symmetric positive definite matrix.
//
// Lower L with a = L L^T, labelled like the input: `L("i,j") = cholesky(A("i,j"))`;
// `Lt("j,i") = cholesky(A("i,j"))` stores the transpose. A matrix that is not
// positive definite is an evaluation error (NumericalError naming potrf and info).
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API CholeskyVectors : public Nary<1, T> {
 public:
  std::string_view name() const override { return "CholeskyVectors"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }

 private:
  friend struct detail::Access;
  explicit CholeskyVectors(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

/// Throws ShapeError unless `a` is a square matrix (rank 2).
template <class T>
CholeskyVectors<T> cholesky(const Expression<T>& a);

#define TENEX_DECLARE_CHOLESKY(T)           \
  extern template class CholeskyVectors<T>; \
  extern template TENEX_API CholeskyVectors<T> cholesky<T>(const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_CHOLESKY)
#undef TENEX_DECLARE_CHOLESKY

}  // namespace tenex
