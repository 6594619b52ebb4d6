// tenex/expression/multiplication.hpp — Product in the generalized Einstein convention: a label on both factors is
// summed unless a consumer keeps it (then a Hadamard / batch label); a label on
// one factor only that nothing keeps is summed too.
//
//   c("i,j") = a("i,k") * b("k,j");          // matrix product
//   h("b,i,j") = x("b,i,k") * y("b,k,j");    // b is a batch label
#pragma once

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Multiplication : public Nary<2, T> {
 public:
  /// Validates that shared labels have equal extents (ShapeError otherwise).
  Multiplication(const Expression<T>& lhs, const Expression<T>& rhs);
  std::string_view name() const override { return "Multiplication"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

template <class T>
Multiplication<T> operator*(const Expression<T>& lhs, const Expression<T>& rhs);

#define TENEX_DECLARE_MULTIPLICATION(T)    \
  extern template class Multiplication<T>; \
  extern template TENEX_API Multiplication<T> operator*<T>(const Expression<T>&, const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_MULTIPLICATION)
#undef TENEX_DECLARE_MULTIPLICATION

}  // namespace tenex
