// Lowering: turns expression nodes into OpGraph nodes. The memo lives here (Halide's
// IRGraphVisitor keeps its own), keyed by the expression node and the labels asked of it,
// so a node shared by several consumers is built once. The walk keeps its own stack: an
// expression thousands of nodes deep lowers without recursion.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/expression/detail/node.hpp"
#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

class Lowering {
 public:
  struct MemoEntry {
    NodeId id = 0;
    std::weak_ptr<const void> owner;  // the memoized object: an expired entry is stale
  };
  // By object, then by key (the labels asked of an expression node, "input:..." and
  // "output" of a storage): a set of a hundred thousand statements remembers a few hundred
  // thousand objects, so a hash of pointers first; an object has one key, seldom two, so the
  // first is kept in the table itself (keys are never empty: an empty one is unused).
  struct MemoSlots {
    std::string key;
    MemoEntry entry;
    std::vector<std::pair<std::string, MemoEntry>> more;
  };
  using Memo = std::unordered_map<const void*, MemoSlots>;

  /// Lowers into `graph`, remembering in `memo` what was built (memo outlives the call
  /// when several add_to_graph calls share one graph).
  Lowering(OpGraph& graph, DType dtype, Memo& memo);

  /// A node holding `keep` (a subset of node's labels, in any order) of `node`.
  NodeId build(const NodePtr& node, const std::vector<std::string>& keep);
  /// The output node of a recorded statement (its value written in the target's order).
  NodeId build_assignment(const Assignment& assignment);
  /// Marks the targets of `batch` as produced in this graph: inputs reading them get the
  /// output node writing them as their operand.
  void set_producers(const std::vector<Assignment>& batch);
  /// Records, on every node whose labels carry all of a map's labels, that the map holds there.
  void register_sparse_maps(const std::vector<RegisteredSparseMap>& maps);

  // For the nodes' emit():
  OpGraph& graph() { return graph_; }
  DType dtype() const { return dtype_; }
  /// Adds a node of this graph's element type.
  NodeId add(OpParams params, std::vector<std::string> labels, std::vector<std::size_t> extents,
             const std::vector<NodeId>& operands, std::string note = {});
  /// `id` reduced (summed, permuted, diagonal) to `keep`, or `id` when it already holds it.
  NodeId reduce_to(NodeId id, const std::vector<std::string>& keep);
  /// The input node reading `storage` with `written` labels (one per storage and labels);
  /// `truncated_modes` as InputParams says.
  NodeId input(const std::shared_ptr<void>& storage, const std::vector<std::string>& written,
               const std::vector<std::size_t>& extents, std::vector<std::size_t> truncated_modes = {});

 private:
  const NodeId* find(const void* object, const std::string& key) const;
  void remember(const void* object, const std::string& key, NodeId id, std::weak_ptr<const void> owner);

  OpGraph& graph_;
  DType dtype_;
  Memo& memo_;
  std::unordered_map<const void*, const Assignment*> producers_;  // by target storage
};

/// Expression<T>::add_to_graph of the library's classes: lowers `node` (its natural labels)
/// into `graph`, sharing a memo with earlier calls on the same graph from this thread.
NodeId lower_into(OpGraph& graph, const NodePtr& node, const std::vector<RegisteredSparseMap>& maps);

/// The graph of a set's recorded statements, in program order.
OpGraph build_set_graph(DType dtype, const std::vector<Assignment>& batch,
                        const std::vector<RegisteredSparseMap>& maps);

// summed_labels.cpp

/// `a + b`, `a - b`, `e + 2.0`, `2.0 - e`: a node whose value adds terms.
bool adds_terms(const ExprNode& node);
/// Throws ShapeError when the statement writing `value` over `keep` (its labels the target
/// `target` keeps) sums a label, by the summation rule, over a sum of which some terms lack
/// it; a label a tenex::sum names is summed as meant.
void check_summed_labels(const NodePtr& value, const std::vector<std::string>& keep,
                         const std::vector<std::string>& target);

}  // namespace tenex::detail
