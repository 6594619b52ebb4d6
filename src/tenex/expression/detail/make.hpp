// Helpers shared by the expression classes to validate operands and make handles.
#pragma once

#include <initializer_list>
#include <string>

#include "tenex/error.hpp"
#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/expression/detail/node.hpp"
#include "tenex/expression/expression.hpp"
#include "tenex/expression/labels.hpp"

namespace tenex::detail {

/// The node of `e`, which must be readable as an operand (else the stored ShapeError/Error).
template <class T>
const NodePtr& operand_node(const Expression<T>& e) {
  const NodePtr& node = e.handle().node;
  if (!node->unreadable.empty()) {
    if (node->storage || node->dtype == DType::shape) throw ShapeError(node->unreadable);
    throw Error(node->unreadable);
  }
  return node;
}

/// A handle on `node` whose set is the union of the sets of `parts`.
inline Handle make_handle(std::shared_ptr<ExprNode> node, std::initializer_list<const Handle*> parts) {
  std::shared_ptr<LinkedState> state;
  for (const Handle* part : parts) state = state ? LinkedState::merge(state, part->state) : LinkedState::root(part->state);
  state->note_labels(node->labels, node->extents);
  return Handle{std::move(node), std::move(state)};
}

/// Throws ShapeError when a label of a and b has two extents.
inline void check_shared_extents(const char* operation, const ExprNode& a, const ExprNode& b) {
  for (std::size_t i = 0; i < a.labels.size(); ++i) {
    std::size_t j = find_label(b.labels, a.labels[i]);
    if (j < b.labels.size() && a.extents[i] != b.extents[j]) {
      throw ShapeError(std::string("tenex: ") + operation + ": label \"" + a.labels[i] + "\" has extent " +
                       std::to_string(a.extents[i]) + " in " + a.text() + " but extent " +
                       std::to_string(b.extents[j]) + " in " + b.text());
    }
  }
}

/// Union of the labels of a and b in order of first appearance, with their extents.
inline void union_labels(const ExprNode& a, const ExprNode& b, ExprNode& out) {
  out.labels = a.labels;
  out.extents = a.extents;
  for (std::size_t j = 0; j < b.labels.size(); ++j) {
    if (!contains_label(out.labels, b.labels[j])) {
      out.labels.push_back(b.labels[j]);
      out.extents.push_back(b.extents[j]);
    }
  }
}

}  // namespace tenex::detail
