// tenex/expression/chip.hpp — one index of one mode, dropping that mode.
//
//   row("j") = tenex::chip(a("i,j"), "i", 2);     // row 2 of a
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Chip : public Nary<1, T> {
 public:
  std::string_view name() const override { return "Chip"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
  /// The operand's mode fixed, and the index it is fixed at.
  std::size_t mode() const;
  std::size_t index() const;

 private:
  friend struct detail::Access;
  explicit Chip(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

/// `label` must be one of a's labels and index < its extent (ShapeError otherwise).
template <class T>
Chip<T> chip(const Expression<T>& a, std::string_view label, std::size_t index);

#define TENEX_DECLARE_CHIP(T)    \
  extern template class Chip<T>; \
  extern template TENEX_API Chip<T> chip<T>(const Expression<T>&, std::string_view, std::size_t);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_CHIP)
#undef TENEX_DECLARE_CHIP

}  // namespace tenex
