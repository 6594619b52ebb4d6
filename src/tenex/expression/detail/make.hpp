// Helpers shared by the expression classes to validate operands and make handles.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>

#include "tenex/error.hpp"
#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/expression/detail/lowering.hpp"
#include "tenex/expression/detail/node.hpp"
#include "tenex/expression/expression.hpp"
#include "tenex/labels.hpp"

namespace tenex::detail {

/// Throws tenex::Error when `handle` was moved from.
inline const Handle& require_handle(const Handle& handle) {
  if (!handle.node || !handle.state) {
    throw Error(
        "tenex: this expression was moved from; an expression object can be used again only after "
        "a new expression is assigned to it");
  }
  return handle;
}

/// The node `e` stands for as an operand. An object of a user class (its dynamic type is
/// not the class that made its node) is lowered through its own add_to_graph once, into a
/// fragment that every later use splices in.
template <class T>
NodePtr operand_node(const Expression<T>& e) {
  const NodePtr& node = require_handle(Access::handle(e)).node;
  node->check_readable();
  const std::type_info& type = typeid(e);
  // The class that made the node first: that test is met by the type_info's address.
  if ((node->made_by && type == *node->made_by) || type == typeid(Operand<T>)) return node;
  if (node->snapshot && node->snapshot_type && *node->snapshot_type == type) return node->snapshot;
  auto fragment = std::make_shared<OpGraph>();
  const NodeId result = e.add_to_graph(*fragment);
  const OpNode& value = fragment->node(result);
  auto snapshot = std::make_shared<FragmentNode>();
  snapshot->dtype = node->dtype;
  snapshot->class_name = std::string(e.name());
  snapshot->labels = value.labels;
  snapshot->extents = value.extents;
  for (std::size_t i = 0; i < value.labels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (value.labels[i] == value.labels[j]) {
        throw ShapeError("tenex: " + snapshot->class_name + "::add_to_graph returned a node with labels \"" +
                         join_labels(value.labels) + "\", which repeat \"" + value.labels[i] +
                         "\"; an expression's value has each label once");
      }
    }
  }
  // The node drawn is the value the class declares (its labels() and extents()): each of its
  // labels declared, with the declared extent. Declared labels it lacks were summed or dropped
  // (a product declares its summed labels too).
  for (std::size_t i = 0; i < value.labels.size(); ++i) {
    const std::size_t d = find_label(node->labels, value.labels[i]);
    if (d < node->labels.size() && node->extents[d] == value.extents[i]) continue;
    const std::string drawn = "(\"" + join_labels(value.labels) + "\") " + format_extents(value.extents);
    throw ShapeError("tenex: " + snapshot->class_name + "::add_to_graph returned a node " + drawn +
                     " that is not the value the class declares, " + node->text() + " (its labels() and extents()): " +
                     (d == node->labels.size()
                          ? "label \"" + value.labels[i] + "\" is not declared"
                          : "label \"" + value.labels[i] + "\" has extent " + std::to_string(value.extents[i]) +
                                ", declared " + std::to_string(node->extents[d])) +
                     "; draw the declared value, or declare the value's labels and extents through Nary's "
                     "constructor (docs/extending.md)");
  }
  snapshot->fragment = std::move(fragment);
  snapshot->result = result;
  snapshot->made_by = &typeid(Operand<T>);
  snapshot->finish();
  node->snapshot = snapshot;
  node->snapshot_type = &type;
  return snapshot;
}

/// Stamps `node` as made by the public class C, and fills its derived labels.
template <class C, class N>
std::shared_ptr<N> made_by(std::shared_ptr<N> node) {
  node->made_by = &typeid(C);
  node->finish();
  return node;
}

/// Where a node's labels come from, for the set's record of the labels it has seen (what
/// set_sparse_map checks against): `parts` when each is a label of a part with the part's
/// extent (a sum or product of the parts, a scale, a permutation), which the parts' sets
/// have seen already; `node` when the node may bring new ones (a decomposition's new mode).
enum class LabelsFrom { parts, node };

/// A handle on `node` whose set is the union of the sets of `parts`.
inline Handle make_handle(std::shared_ptr<const ExprNode> node, std::initializer_list<const Handle*> parts,
                          LabelsFrom labels = LabelsFrom::node) {
  // One acquisition for the merges and the labels: the calls below take the (recursive) lock
  // again without an atomic operation.
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  std::shared_ptr<LinkedState> state;
  for (const Handle* part : parts) {
    require_handle(*part);
    state = state ? LinkedState::merge_locked(state, part->state) : LinkedState::root_locked(part->state);
  }
  if (labels == LabelsFrom::node) state->note_labels(node->labels, node->extents);
  return Handle{std::move(node), std::move(state)};
}

/// Throws ShapeError when a label of a and b has two extents (the first such label of a).
inline void check_shared_extents(const char* operation, const ExprNode& a, const ExprNode& b) {
  // Each label of the shorter side looked up in the other: a product's labels are indexed.
  std::size_t first = a.labels.size(), other = 0;
  if (a.labels.size() <= b.labels.size()) {
    for (std::size_t i = 0; i < a.labels.size() && first == a.labels.size(); ++i) {
      const std::size_t j = find_label(b.labels, a.labels[i]);
      if (j < b.labels.size() && a.extents[i] != b.extents[j]) first = i, other = j;
    }
  } else {
    for (std::size_t j = 0; j < b.labels.size(); ++j) {
      const std::size_t i = find_label(a.labels, b.labels[j]);
      if (i < first && a.extents[i] != b.extents[j]) first = i, other = j;
    }
  }
  if (first < a.labels.size()) {
    throw ShapeError(std::string("tenex: ") + operation + ": label \"" + a.labels[first] + "\" has extent " +
                     std::to_string(a.extents[first]) + " in " + a.text() + " but extent " +
                     std::to_string(b.extents[other]) + " in " + b.text());
  }
}

/// Union of the labels of a and b in order of first appearance, with their extents.
inline void union_labels(const ExprNode& a, const ExprNode& b, ExprNode& out) {
  // Room for both at once: a copy of a's labels has no room for b's, and growing it is a
  // second allocation.
  out.labels.reserve(a.labels.size() + b.labels.size());
  out.extents.reserve(a.labels.size() + b.labels.size());
  out.labels.assign(a.labels.begin(), a.labels.end());
  out.extents.assign(a.extents.begin(), a.extents.end());
  for (std::size_t j = 0; j < b.labels.size(); ++j) {
    if (!contains_label(out.labels, b.labels[j])) {
      out.labels.push_back(b.labels[j]);
      out.extents.push_back(b.extents[j]);
    }
  }
}

/// The value of `node` over `labels` (a subset of its labels), as a statement whose target has
/// those labels would read it: a product keeps them and contracts the rest, any other node
/// is summed over the rest after it (Lowering::build). `node` itself when nothing is dropped.
inline NodePtr value_over(const NodePtr& node, const std::vector<std::string>& labels) {
  if (labels == node->labels) return node;
  auto out = std::make_shared<PermutationNode>();  // a permutation to a subset of the labels sums the others
  out->dtype = node->dtype;
  out->children = {node};
  out->labels = labels;
  for (const std::string& l : labels) out->extents.push_back(node->extents[find_label(node->labels, l)]);
  out->made_by = node->made_by;
  out->finish();
  return out;
}

/// `node` with the labels an operation needing definite modes sees (its implicit labels):
/// `cholesky(s("i,k") * s("j,k"))` factors the matrix (i,j) = sum_k s(i,k) s(j,k).
inline NodePtr einstein_operand(const NodePtr& node) { return value_over(node, node->implicit_labels()); }

}  // namespace tenex::detail
