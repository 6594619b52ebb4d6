// tenex/expression/inverse.hpp — the inverse of a square matrix.
//
//   ai("i,j") = tenex::inverse(a("i,j"));          // labelled like a: a("i,k") * ai("k,j") is I
//
// LU with partial pivoting (getrf, getri). A singular matrix (an exactly zero pivot, or a
// reciprocal condition number below the machine epsilon) is an evaluation error: a
// NumericalError naming inverse and the matrix's labels and extents, rethrown by every read.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Inverse : public Nary<1, T> {
 public:
  std::string_view name() const override { return "Inverse"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }

 private:
  friend struct detail::Access;
  explicit Inverse(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

/// Throws ShapeError unless `a` is a square matrix (rank 2).
template <class T>
Inverse<T> inverse(const Expression<T>& a);

#define TENEX_DECLARE_INVERSE(T)    \
  extern template class Inverse<T>; \
  extern template TENEX_API Inverse<T> inverse<T>(const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_INVERSE)
#undef TENEX_DECLARE_INVERSE

}  // namespace tenex
