// tenex/expression/addition.hpp — Element-wise sum matched by label; an operand lacking labels is broadcast along them.
//
//   d("i,a") = e("i") + f("a");   // d(i,a) = e(i) + f(a)
//   q("i")   = a("i,j") + b("i"); // sum over j of (a(i,j) + b(i)): a label the target drops
//                                 // is summed over the whole sum (docs/einstein.md)
#pragma once

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Addition : public Nary<2, T> {
 public:
  /// Validates that shared labels have equal extents (ShapeError otherwise).
  Addition(const Expression<T>& lhs, const Expression<T>& rhs);
  std::string_view name() const override { return "Addition"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

template <class T>
Addition<T> operator+(const Expression<T>& lhs, const Expression<T>& rhs);

#define TENEX_DECLARE_ADDITION(T)    \
  extern template class Addition<T>; \
  extern template TENEX_API Addition<T> operator+<T>(const Expression<T>&, const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_ADDITION)
#undef TENEX_DECLARE_ADDITION

}  // namespace tenex
