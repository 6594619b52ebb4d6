// tenex/expression/division.hpp — Element-wise quotient matched by label, broadcasting.
//
//   T("i,a,j,b") = V("i,a,j,b") / D("i,a,j,b");
//   r("i")       = a("i,j") / d("i,j");   // sum over j of a(i,j) / d(i,j)
#pragma once

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Division : public Nary<2, T> {
 public:
  /// Validates that shared labels have equal extents (ShapeError otherwise).
  Division(const Expression<T>& lhs, const Expression<T>& rhs);
  std::string_view name() const override { return "Division"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

template <class T>
Division<T> operator/(const Expression<T>& lhs, const Expression<T>& rhs);

#define TENEX_DECLARE_DIVISION(T)    \
  extern template class Division<T>; \
  extern template TENEX_API Division<T> operator/<T>(const Expression<T>&, const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_DIVISION)
#undef TENEX_DECLARE_DIVISION

}  // namespace tenex
