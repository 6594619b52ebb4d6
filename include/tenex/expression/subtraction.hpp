// tenex/expression/subtraction.hpp — Element-wise difference matched by label, broadcasting.
//
//   D("i,a") = e("i") - f("a");
#pragma once

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Subtraction : public Nary<2, T> {
 public:
  /// Validates that shared labels have equal extents (ShapeError otherwise).
  Subtraction(const Expression<T>& lhs, const Expression<T>& rhs);
  std::string_view name() const override { return "Subtraction"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

template <class T>
Subtraction<T> operator-(const Expression<T>& lhs, const Expression<T>& rhs);

#define TENEX_DECLARE_SUBTRACTION(T)    \
  extern template class Subtraction<T>; \
  extern template TENEX_API Subtraction<T> operator-<T>(const Expression<T>&, const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_SUBTRACTION)
#undef TENEX_DECLARE_SUBTRACTION

}  // namespace tenex
