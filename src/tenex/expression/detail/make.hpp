// Helpers shared by the expression classes to validate operands and make handles.
#pragma once

#include <algorithm>
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

/// Labels an operation that needs definite modes (a decomposition, slice, chip, pow,
/// permutation) sees of `node`: inside a product a label on two or more factors is
/// summed, as in plain Einstein notation, and the rest are kept in natural order.
inline std::vector<std::string> implicit_labels(const ExprNode& node) {
  switch (node.kind) {
    case ExprKind::multiplication: {
      std::vector<const ExprNode*> stack{&node}, leaves;
      while (!stack.empty()) {
        const ExprNode* n = stack.back();
        stack.pop_back();
        if (n->kind == ExprKind::multiplication || n->kind == ExprKind::scale) {
          for (auto it = n->children.rbegin(); it != n->children.rend(); ++it) stack.push_back(it->get());
        } else {
          leaves.push_back(n);
        }
      }
      std::vector<std::string> all;
      for (const ExprNode* leaf : leaves) {
        for (const std::string& l : implicit_labels(*leaf)) all.push_back(l);
      }
      std::vector<std::string> kept;
      for (const std::string& l : node.labels) {
        if (std::count(all.begin(), all.end(), l) == 1) kept.push_back(l);
      }
      return kept;
    }
    case ExprKind::addition:
    case ExprKind::subtraction:
    case ExprKind::division: {
      std::vector<std::string> kept;
      for (const std::string& l : node.labels) {
        for (const auto& c : node.children) {
          auto ci = implicit_labels(*c);
          if (contains_label(ci, l)) {
            kept.push_back(l);
            break;
          }
        }
      }
      return kept;
    }
    case ExprKind::scale: return implicit_labels(*node.children[0]);
    default: return node.labels;
  }
}

/// `node` with the labels an operation needing definite modes sees (implicit_labels):
/// `cholesky(s("i,k") * s("j,k"))` factors the matrix (i,j) = sum_k s(i,k) s(j,k).
inline NodePtr einstein_operand(const NodePtr& node) {
  std::vector<std::string> kept = implicit_labels(*node);
  if (kept == node->labels) return node;
  auto out = std::make_shared<ExprNode>();
  out->kind = ExprKind::permutation;  // a permutation to a subset of the labels sums the others
  out->dtype = node->dtype;
  out->children = {node};
  out->labels = kept;
  for (const std::string& l : kept) out->extents.push_back(node->extents[find_label(node->labels, l)]);
  return out;
}

}  // namespace tenex::detail
