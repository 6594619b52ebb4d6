// tenex/expression/cast.hpp — a typecast between float and double inside an expression.
//
//   tenex::Tensor<float> f;  tenex::Tensor<double> d, r;
//   r("i,j") = tenex::cast<double>(f("i,k") * f("k,j")) + d("i,j");   // product in float, sum in double
//
// The operand is evaluated in its own element type (its linked set) and converted when
// the expression that uses the cast runs; nothing is computed when the cast is written.
#pragma once

#include "tenex/expression/expression.hpp"

namespace tenex {

/// The value of an expression over `Tensor<V>` as an expression over `Tensor<U>`.
template <class U, class V>
class TENEX_API Cast final : public Expression<Tensor<U>> {
 public:
  explicit Cast(const Expression<Tensor<V>>& operand);
  std::string_view name() const override { return "Cast"; }
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

/// `e` converted to element type U (float <-> double; U == V copies).
template <class U, class V>
Cast<U, V> cast(const Expression<Tensor<V>>& e) {
  return Cast<U, V>(e);
}

extern template class Cast<float, double>;
extern template class Cast<double, float>;
extern template class Cast<float, float>;
extern template class Cast<double, double>;

}  // namespace tenex
