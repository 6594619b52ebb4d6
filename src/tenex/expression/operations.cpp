// The element-wise, product, scale and permutation expressions.
#include <cmath>
#include <type_traits>

#include "tenex/expression/addition.hpp"
#include "tenex/expression/detail/make.hpp"
#include "tenex/expression/division.hpp"
#include "tenex/expression/multiplication.hpp"
#include "tenex/expression/permutation.hpp"
#include "tenex/expression/scale.hpp"
#include "tenex/expression/subtraction.hpp"

namespace tenex {

namespace detail {

namespace {

std::vector<std::size_t> extents_of(const ExprNode& node, const std::vector<std::string>& keep) {
  std::vector<std::size_t> out;
  for (const std::string& l : keep) out.push_back(node.extents.at(find_label(node.labels, l)));
  return out;
}

template <class C, class T>
Handle make_binary(std::shared_ptr<ExprNode> node, const char* operation, const Expression<T>& lhs,
                   const Expression<T>& rhs) {
  const NodePtr a = operand_node(lhs);
  const NodePtr b = operand_node(rhs);
  check_shared_extents(operation, *a, *b);
  node->dtype = a->dtype;
  node->children = {a, b};
  if constexpr (std::is_same_v<C, Multiplication<T>>) {
    product_labels(*a, *b, *node);  // shares a's label store when a is a product
  } else {
    union_labels(*a, *b, *node);
  }
  return make_handle(made_by<C>(std::move(node)), {&detail::Access::handle(lhs), &detail::Access::handle(rhs)},
                     LabelsFrom::parts);
}

template <class C, class T>
Handle make_elementwise(OpKind op, const char* operation, const Expression<T>& lhs, const Expression<T>& rhs) {
  auto node = std::make_shared<ElementwiseNode>();
  node->op = op;
  return make_binary<C>(std::move(node), operation, lhs, rhs);
}

template <class T>
Handle make_scale(const Expression<T>& operand, std::complex<double> factor) {
  const NodePtr a = operand_node(operand);
  if (factor.imag() != 0.0 && !is_complex_dtype(a->dtype)) {
    throw Error("tenex: Scale: the complex factor (" + std::to_string(factor.real()) + ", " +
                std::to_string(factor.imag()) + ") of the real expression " + operand.to_string() +
                ": cast it to complex first (tenex::cast<std::complex<double>>)");
  }
  // A scale of a scale is one factor: 2.0 * (x * y) * 3.0 folds to 6 (x * y).
  NodePtr inner = a;
  if (const auto* s = node_as<ScaleNode>(*a); s && s->made_by == &typeid(Scale<T>)) {
    factor *= std::complex<double>(s->factor, s->factor_imag);
    inner = s->children[0];
  }
  auto node = std::make_shared<ScaleNode>();
  node->dtype = a->dtype;
  node->children = {inner};
  node->labels = a->labels;
  node->extents = a->extents;
  node->factor = factor.real();
  node->factor_imag = factor.imag();
  return make_handle(made_by<Scale<T>>(std::move(node)), {&detail::Access::handle(operand)}, LabelsFrom::parts);
}

template <class T>
Handle make_permutation(const Expression<T>& operand, std::string_view text) {
  const NodePtr a = einstein_operand(operand_node(operand));
  std::vector<std::string> labels = parse_labels(text);
  bool ok = labels.size() == a->labels.size();
  for (const std::string& l : labels) ok = ok && contains_label(a->labels, l);
  for (std::size_t i = 0; ok && i < labels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) ok = ok && labels[i] != labels[j];
  }
  if (!ok) {
    throw ShapeError("tenex: Permutation: \"" + join_labels(labels) + "\" is not a permutation of the labels of " +
                     a->text());
  }
  auto node = std::make_shared<PermutationNode>();
  node->dtype = a->dtype;
  node->children = {a};
  node->labels = labels;
  node->extents = extents_of(*a, labels);
  return make_handle(made_by<Permutation<T>>(std::move(node)), {&detail::Access::handle(operand)}, LabelsFrom::parts);
}

}  // namespace

// Lowering of the Einstein-notation nodes.

std::string_view ElementwiseNode::kind_name() const {
  return op == OpKind::add ? "addition" : op == OpKind::subtract ? "subtraction" : "division";
}

NodeId ElementwiseNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                             const std::vector<NodeId>& children) const {
  // `keep` holds every label a term carries freely (Lowering::build widens it), so a label
  // the target drops is summed after this node: c(i) = a(i,j) + b(i) is sum_j (a(i,j) + b(i)).
  // A product inside a term contracts its own repeated labels (child_keep).
  OpParams params = op == OpKind::add        ? OpParams(AddParams{})
                    : op == OpKind::subtract ? OpParams(SubtractParams{})
                                             : OpParams(DivideParams{});
  return lowering.add(std::move(params), keep, extents_of(*this, keep), children);
}

std::vector<std::string> MultiplicationNode::child_keep(std::size_t i, const std::vector<std::string>& keep) const {
  // Each factor keeps what the result or the other factor needs; the rest it sums itself.
  // Either its labels are looked up in the other's, or the other's and keep in its own (a
  // long product's, indexed): a chain's factor asks O(1) lookups, not a scan of the chain.
  const NodeLabels& own = children[i]->labels;
  const NodeLabels& other = children[1 - i]->labels;
  if (own.size() <= keep.size() + other.size()) {
    std::vector<std::string> out;
    for (const std::string& l : own) {
      if (contains_label(keep, l) || contains_label(other, l)) out.push_back(l);
    }
    return out;
  }
  std::vector<std::string> needed = keep;
  needed.insert(needed.end(), other.begin(), other.end());
  return filter_labels(own, needed);
}

NodeId MultiplicationNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                                const std::vector<NodeId>& children) const {
  // One pairwise contraction; the contraction-ordering pass reorders whole chains.
  return lowering.add(ContractParams{}, keep, extents_of(*this, keep), children);
}

NodeId ScaleNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                       const std::vector<NodeId>& children) const {
  return lowering.add(ScaleParams{factor, factor_imag}, keep, extents_of(*this, keep),
                      {lowering.reduce_to(children[0], keep)});
}

NodeId PermutationNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                             const std::vector<NodeId>& children) const {
  return lowering.reduce_to(children[0], keep);
}

}  // namespace detail

template <class T>
Addition<T>::Addition(const Expression<T>& lhs, const Expression<T>& rhs)
    : Nary<2, T>(detail::make_elementwise<Addition<T>>(OpKind::add, "Addition", lhs, rhs)) {}
template <class T>
Subtraction<T>::Subtraction(const Expression<T>& lhs, const Expression<T>& rhs)
    : Nary<2, T>(detail::make_elementwise<Subtraction<T>>(OpKind::subtract, "Subtraction", lhs, rhs)) {}
template <class T>
Multiplication<T>::Multiplication(const Expression<T>& lhs, const Expression<T>& rhs)
    : Nary<2, T>(detail::make_binary<Multiplication<T>>(std::make_shared<detail::MultiplicationNode>(),
                                                        "Multiplication", lhs, rhs)) {}
template <class T>
Division<T>::Division(const Expression<T>& lhs, const Expression<T>& rhs)
    : Nary<2, T>(detail::make_elementwise<Division<T>>(OpKind::divide, "Division", lhs, rhs)) {}

template <class T>
Scale<T>::Scale(const Expression<T>& operand, double factor)
    : Nary<1, T>(detail::make_scale(operand, std::complex<double>(factor))) {}

template <class T>
Scale<T>::Scale(const Expression<T>& operand, std::complex<double> factor)
    : Nary<1, T>(detail::make_scale(operand, factor)) {}

template <class T>
double Scale<T>::factor() const {
  return static_cast<const detail::ScaleNode&>(*detail::require_handle(this->handle_).node).factor;
}

template <class T>
std::complex<double> Scale<T>::complex_factor() const {
  const auto& node = static_cast<const detail::ScaleNode&>(*detail::require_handle(this->handle_).node);
  return {node.factor, node.factor_imag};
}

template <class T>
Permutation<T>::Permutation(const Expression<T>& operand, std::string_view labels)
    : Nary<1, T>(detail::make_permutation(operand, labels)) {}

template <class T>
Addition<T> operator+(const Expression<T>& lhs, const Expression<T>& rhs) {
  return Addition<T>(lhs, rhs);
}
template <class T>
Subtraction<T> operator-(const Expression<T>& lhs, const Expression<T>& rhs) {
  return Subtraction<T>(lhs, rhs);
}
template <class T>
Multiplication<T> operator*(const Expression<T>& lhs, const Expression<T>& rhs) {
  return Multiplication<T>(lhs, rhs);
}
template <class T>
Division<T> operator/(const Expression<T>& lhs, const Expression<T>& rhs) {
  return Division<T>(lhs, rhs);
}
template <class T>
Scale<T> operator*(double factor, const Expression<T>& operand) {
  return Scale<T>(operand, factor);
}
template <class T>
Scale<T> operator*(const Expression<T>& operand, double factor) {
  return Scale<T>(operand, factor);
}
template <class T>
Scale<T> operator/(const Expression<T>& operand, double divisor) {
  if (divisor == 0.0) {
    throw Error("tenex: Scale: division of " + operand.to_string() + " by the scalar 0");
  }
  return Scale<T>(operand, 1.0 / divisor);
}
template <class T>
Scale<T> operator-(const Expression<T>& operand) {
  return Scale<T>(operand, -1.0);
}
template <class T>
Permutation<T> permute(const Expression<T>& operand, std::string_view labels) {
  return Permutation<T>(operand, labels);
}

#define TENEX_INSTANTIATE_OPERATIONS(T)                                                          \
  template class Addition<T>;                                                                    \
  template class Subtraction<T>;                                                                 \
  template class Multiplication<T>;                                                              \
  template class Division<T>;                                                                    \
  template class Scale<T>;                                                                       \
  template class Permutation<T>;                                                                 \
  template TENEX_API Addition<T> operator+<T>(const Expression<T>&, const Expression<T>&);       \
  template TENEX_API Subtraction<T> operator-<T>(const Expression<T>&, const Expression<T>&);    \
  template TENEX_API Multiplication<T> operator*<T>(const Expression<T>&, const Expression<T>&); \
  template TENEX_API Division<T> operator/<T>(const Expression<T>&, const Expression<T>&);       \
  template TENEX_API Scale<T> operator*<T>(double, const Expression<T>&);                        \
  template TENEX_API Scale<T> operator*<T>(const Expression<T>&, double);                        \
  template TENEX_API Scale<T> operator/<T>(const Expression<T>&, double);                        \
  template TENEX_API Scale<T> operator-<T>(const Expression<T>&);                                \
  template TENEX_API Permutation<T> permute<T>(const Expression<T>&, std::string_view);
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_OPERATIONS)
#undef TENEX_INSTANTIATE_OPERATIONS

}  // namespace tenex
