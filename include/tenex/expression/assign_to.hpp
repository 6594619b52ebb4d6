// tenex/expression/assign_to.hpp — a recorded statement `target = rhs`.
//
// Made by Indexed's assignment operators; the linked set evaluates it later.
// Its labels are the target's.
//
//   c("i,j") = a("i,k") * b("k,j");   // records AssignTo(c("i,j"), a*b)
#pragma once

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class Indexed;

enum class AssignMode { replace, add, subtract, multiply, divide };

template <class T>
class TENEX_API AssignTo : public Nary<1, T> {
 public:
  /// Validates and records the statement; throws ShapeError and changes nothing on bad input.
  AssignTo(const Indexed<T>& target, T& object, const Expression<T>& rhs, AssignMode mode);
  std::string_view name() const override { return "AssignTo"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

#define TENEX_DECLARE_ASSIGN_TO(T) extern template class AssignTo<T>;
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_ASSIGN_TO)
#undef TENEX_DECLARE_ASSIGN_TO

}  // namespace tenex
