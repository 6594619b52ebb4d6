// tenex/expression/expression.hpp — the abstract base of every expression.
//
// Expression<T> is templated only on the object composed (Tensor<float>,
// Tensor<double>, Shape), never on sub-expression types. An expression is a
// cheap handle onto an immutable node held by shared ownership: copies are the
// same node. Every handle belongs to a linked set (a shared state); the set is
// evaluated when its last handle dies.
//
//   auto t = a("i,k") * b("k,j");          // a handle; nothing computed
//   c("i,j") = t + d("i,j");               // t is one node, read once
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tenex/detail/access.hpp"
#include "tenex/export.hpp"
#include "tenex/graph/graph_builder.hpp"
#include "tenex/scalar.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/tensor/shape.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex {

namespace detail {
struct ExprNode;
class LinkedState;
/// What a handle holds: its node and its linked set.
struct Handle {
  std::shared_ptr<const ExprNode> node;
  std::shared_ptr<LinkedState> state;
};
}  // namespace detail

template <class T>
class TENEX_API Expression {
 public:
  using object_type = T;

  virtual ~Expression();

  /// Free labels of the result, in natural order (first appearance); a product's
  /// summed labels are decided by its consumer, so they are listed here too.
  /// A moved-from expression throws tenex::Error here and wherever it is used.
  const std::vector<std::string>& labels() const;
  /// Extents matching labels().
  const std::vector<std::size_t>& extents() const;
  std::size_t rank() const { return labels().size(); }
  /// ("i,j") {3, 4}
  std::string to_string() const;
  /// The class name: "Addition", "Indexed", ...
  virtual std::string_view name() const = 0;

  /// Visits this expression into `graph` (once, however often it is shared) and
  /// returns the node producing it. A product keeps the labels that occur on one
  /// factor only and sums the others, as plain Einstein notation reads it:
  /// `(a("i,k") * b("k,j")).add_to_graph(g)` is the matrix product (i,j).
  /// A user class overrides it to give its own meaning (docs/extending.md); evaluation
  /// then uses the override, exactly as it uses the library's classes.
  virtual NodeId add_to_graph(OpGraph& graph) const;

  /// Declares, for the whole linked set, that for each value of the modes `from`
  /// only the values of the modes `to` that `map` lists may be non-zero:
  /// `a("i,j").set_sparse_map("i", "j", L)`. Labels are comma-separated.
  const Expression& set_sparse_map(std::string_view from, std::string_view to, const SparseMap& map) const;

  // The handle is the library's own (detail::Access::handle): no public member names a
  // detail:: type (docs/extending.md, "What is public").
 protected:
  /// Lowers the node this handle holds into `graph` through the node's own typed lowering
  /// (what every library class's add_to_graph does).
  NodeId lower_own_node(OpGraph& graph) const;

  /// For the library's classes: an expression over a handle the library made.
  explicit Expression(detail::Handle handle);
  Expression(const Expression&);
  Expression(Expression&&) noexcept;
  Expression& operator=(const Expression&);
  Expression& operator=(Expression&&) noexcept;

  detail::Handle handle_;

 private:
  friend struct detail::Access;
};

/// An operand of an expression as Nary::child(i) hands it out: the operand's value and
/// linked set, usable in new expressions like any other.
template <class T>
class TENEX_API Operand final : public Expression<T> {
 public:
  std::string_view name() const override { return "Operand"; }

 private:
  friend struct detail::Access;
  explicit Operand(detail::Handle handle) : Expression<T>(std::move(handle)) {}
};

namespace detail {
/// The handle of a user's Nary over `operands` (their sets merged).
template <class T>
TENEX_API Handle make_nary(const std::vector<const Expression<T>*>& operands);
/// The same, declaring the value's labels and extents (checked: one extent a label, each once).
template <class T>
TENEX_API Handle make_nary(const std::vector<const Expression<T>*>& operands, std::vector<std::string> labels,
                           std::vector<std::size_t> extents);
/// The operands of `handle`'s node, each with the handle's set.
template <class T>
TENEX_API std::vector<Operand<T>> operands_of(const Handle& handle);
}  // namespace detail

/// An expression with N operands. The library's classes derive from it; so may a user's,
/// constructing it from its operands and overriding add_to_graph:
///
/// ```
///   template <class T> struct Twice : tenex::Nary<1, T> {
///     explicit Twice(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
///     std::string_view name() const override { return "Twice"; }
///     tenex::NodeId add_to_graph(tenex::OpGraph& g) const override { return (2.0 * this->child(0)).add_to_graph(g); }
///   };
/// ```
template <std::size_t N, class T>
class TENEX_API Nary : public Expression<T> {
 public:
  static constexpr std::size_t arity = N;

  /// An expression over `operands` (N of them); their linked sets merge.
  template <class... E>
  requires(sizeof...(E) == N && (std::is_base_of_v<Expression<T>, E> && ...)) explicit Nary(const E&... operands)
      : Expression<T>(detail::make_nary<T>({static_cast<const Expression<T>*>(&operands)...})),
        children_(detail::operands_of<T>(this->handle_)) {}

  /// Operand i (0 <= i < N), as an expression of this one's linked set.
  const Expression<T>& child(std::size_t i) const { return children_.at(i); }

 protected:
  /// An expression over `operands` whose value is not labelled like their union: `labels` and
  /// `extents` declare it (labels() and extents() say them), and add_to_graph must draw a
  /// node with these labels and extents. A block of a matrix:
  /// `Block(const Expression<T>& x, std::size_t k) : Nary<1, T>(x.labels(), {k, k}, x) {}`.
  template <class... E>
  requires(sizeof...(E) == N && (std::is_base_of_v<Expression<T>, E> && ...))
      Nary(std::vector<std::string> labels, std::vector<std::size_t> extents, const E&... operands)
      : Expression<T>(detail::make_nary<T>({static_cast<const Expression<T>*>(&operands)...}, std::move(labels),
                                           std::move(extents))),
        children_(detail::operands_of<T>(this->handle_)) {}

  /// For the library's classes: an expression over a handle the library made.
  explicit Nary(detail::Handle handle)
      : Expression<T>(std::move(handle)), children_(detail::operands_of<T>(this->handle_)) {}

 private:
  std::vector<Operand<T>> children_;
};

#define TENEX_DECLARE_EXPRESSION(T)                                                                                  \
  extern template class Expression<T>;                                                                               \
  extern template class Operand<T>;                                                                                  \
  extern template class Nary<1, T>;                                                                                  \
  extern template class Nary<2, T>;                                                                                  \
  extern template TENEX_API detail::Handle detail::make_nary<T>(const std::vector<const Expression<T>*>&);           \
  extern template TENEX_API detail::Handle detail::make_nary<T>(const std::vector<const Expression<T>*>&,            \
                                                                std::vector<std::string>, std::vector<std::size_t>); \
  extern template TENEX_API std::vector<Operand<T>> detail::operands_of<T>(const detail::Handle&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_EXPRESSION)
#undef TENEX_DECLARE_EXPRESSION

}  // namespace tenex
