// tenex/expression/permutation.hpp — the same values with the modes in another order.
//
// Assignment permutes on its own (`b("j,i") = a("i,j")`); Permutation makes the
// order explicit inside an expression:
//
//   auto t = tenex::permute(a("i,j,k"), "k,i,j");    // t.labels() == {k, i, j}
#pragma once

#include <string_view>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Permutation : public Nary<1, T> {
 public:
  /// `labels` must be a permutation of the operand's labels (ShapeError otherwise).
  Permutation(const Expression<T>& operand, std::string_view labels);
  std::string_view name() const override { return "Permutation"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

template <class T>
Permutation<T> permute(const Expression<T>& operand, std::string_view labels);

#define TENEX_DECLARE_PERMUTATION(T)    \
  extern template class Permutation<T>; \
  extern template TENEX_API Permutation<T> permute<T>(const Expression<T>&, std::string_view);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_PERMUTATION)
#undef TENEX_DECLARE_PERMUTATION

}  // namespace tenex
