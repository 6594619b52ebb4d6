// The element-wise, product, scale and permutation expressions.
#include <cmath>

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

template <class T>
Handle make_binary(ExprKind kind, const char* operation, const Expression<T>& lhs, const Expression<T>& rhs) {
  const NodePtr& a = operand_node(lhs);
  const NodePtr& b = operand_node(rhs);
  check_shared_extents(operation, *a, *b);
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->dtype = a->dtype;
  node->children = {a, b};
  union_labels(*a, *b, *node);
  return make_handle(std::move(node), {&lhs.handle(), &rhs.handle()});
}

template <class T>
Handle make_scale(const Expression<T>& operand, double factor) {
  const NodePtr& a = operand_node(operand);
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::scale;
  node->dtype = a->dtype;
  node->children = {a};
  node->labels = a->labels;
  node->extents = a->extents;
  node->factor = factor;
  return make_handle(std::move(node), {&operand.handle()});
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
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::permutation;
  node->dtype = a->dtype;
  node->children = {a};
  node->labels = labels;
  for (const std::string& l : labels) node->extents.push_back(a->extents[find_label(a->labels, l)]);
  return make_handle(std::move(node), {&operand.handle()});
}

}  // namespace

}  // namespace detail

template <class T>
Addition<T>::Addition(const Expression<T>& lhs, const Expression<T>& rhs)
    : Nary<2, T>(detail::make_binary(detail::ExprKind::addition, "Addition", lhs, rhs)) {}
template <class T>
Subtraction<T>::Subtraction(const Expression<T>& lhs, const Expression<T>& rhs)
    : Nary<2, T>(detail::make_binary(detail::ExprKind::subtraction, "Subtraction", lhs, rhs)) {}
template <class T>
Multiplication<T>::Multiplication(const Expression<T>& lhs, const Expression<T>& rhs)
    : Nary<2, T>(detail::make_binary(detail::ExprKind::multiplication, "Multiplication", lhs, rhs)) {}
template <class T>
Division<T>::Division(const Expression<T>& lhs, const Expression<T>& rhs)
    : Nary<2, T>(detail::make_binary(detail::ExprKind::division, "Division", lhs, rhs)) {}

template <class T>
Scale<T>::Scale(const Expression<T>& operand, double factor)
    : Nary<1, T>(detail::make_scale(operand, factor)), factor_(factor) {}

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
  template class Addition<T>;                                                          \
  template class Subtraction<T>;                                                       \
  template class Multiplication<T>;                                                    \
  template class Division<T>;                                                          \
  template class Scale<T>;                                                             \
  template class Permutation<T>;                                                       \
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
