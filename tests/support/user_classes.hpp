// User expression classes as ../shared/API.md's "Extending the DSL" writes them, shared by the
// tests of that path (expression classes, public surface, compile, plan cache).
#pragma once

#include <string_view>

#include <tenex/tenex.hpp>

/// Twice its operand, in terms of a library expression: API.md's example. Writes no plan cache
/// signature, as a user class does not.
template <class T>
class Twice : public tenex::Nary<1, T> {
 public:
  explicit Twice(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
  std::string_view name() const override { return "Twice"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    return (2.0 * this->child(0)).add_to_graph(graph);
  }
};
