// Sparse evaluation: which nodes keep only the elements their sparse maps allow, as
// per-key dense blocks (OpNode::compact; docs/sparse.md).
//
// A node whose pattern allows at most half of its elements, with each key's allowed tuples
// a product of per-mode domains, is stored compactly: `elements` becomes the allowed count,
// so the executor allocates (and counts) only that. A mask whose operand nothing else
// reads is absorbed into it: the operand then computes the allowed elements only (a
// product as per-key gathered GEMMs) and the mask disappears. Inputs and results written
// to tensors stay dense: a result's target receives zeros where the maps exclude.
// propagate_sparsity must have run. The backend that will run the graph is asked first,
// about each node that would run sparsely (compact, or reading a compact operand), as it
// would be: when it declines one, nothing changes and the set runs dense and masked.
#include <string>
#include <unordered_map>
#include <vector>

#include "tenex/graph/passes/passes.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex::passes {

namespace {

constexpr double kMaxFraction = 0.5;

bool compactable(const OpNode& node) {
  if (node.kind == OpKind::input || node.kind == OpKind::output || node.kind == OpKind::factor) return false;
  if (packed_factor_count(node.kind) > 0 || !node.pattern) return false;
  return node.pattern->product && node.pattern->fraction() <= kMaxFraction;
}

void make_compact(OpNode& node) {
  node.layout = StorageKind::blocks;
  node.elements = node.pattern->allowed;
}

/// Whether `supports` accepts every node that the plan below would run sparsely, worked out
/// on copies of the nodes it would change (the graph is not touched). `why`: what it declined.
bool backend_accepts(const OpGraph& graph, const SparseSupport& supports, std::string& why) {
  std::unordered_map<NodeId, OpNode> planned;   // the nodes made compact, as they would be
  std::unordered_map<NodeId, NodeId> absorbed;  // mask -> the operand that absorbs it
  const auto view = [&](NodeId id) -> const OpNode& {
    auto it = planned.find(id);
    return it == planned.end() ? graph.node(id) : it->second;
  };
  const std::vector<NodeId> order = graph.topological_order();
  for (NodeId id : order) {  // the decisions of plan_sparse_evaluation, in its order
    const OpNode& node = view(id);
    if (!compactable(node)) continue;
    if (node.kind == OpKind::mask) {
      const NodeId operand = graph.operands(id).at(0);
      const OpNode& source = view(operand);
      const bool absorbable = source.kind != OpKind::input && source.kind != OpKind::mask &&
                              packed_factor_count(source.kind) == 0 && source.kind != OpKind::factor &&
                              graph.only_consumer(operand) == id && source.labels == node.labels;
      if (absorbable) {
        OpNode changed = source;
        changed.holds = node.holds;
        changed.pattern = node.pattern;
        make_compact(changed);
        planned.insert_or_assign(operand, std::move(changed));
        absorbed.emplace(id, operand);
        continue;
      }
    }
    OpNode changed = node;
    make_compact(changed);
    planned.insert_or_assign(id, std::move(changed));
  }
  if (planned.empty()) return true;
  for (NodeId id : order) {
    if (absorbed.count(id)) continue;
    bool sparse = planned.count(id) > 0;
    for (NodeId operand : graph.operands(id)) {
      auto it = absorbed.find(operand);
      sparse = sparse || planned.count(it == absorbed.end() ? operand : it->second) > 0;
    }
    if (sparse && !supports(view(id), why)) return false;
  }
  return true;
}

}  // namespace

bool plan_sparse_evaluation(OpGraph& graph, const SparseSupport& supports, std::string* declined) {
  if (supports) {
    std::string why;
    if (!backend_accepts(graph, supports, why)) {
      if (declined) *declined = why;
      return false;
    }
  }
  bool absorbed = false;
  for (NodeId id : graph.topological_order()) {
    OpNode& node = graph.node(id);
    if (!compactable(node)) continue;
    if (node.kind == OpKind::mask) {
      const NodeId operand = graph.operands(id).at(0);
      OpNode& source = graph.node(operand);
      const std::vector<NodeId> ops = graph.operands(id);
      const bool absorbable = source.kind != OpKind::input && source.kind != OpKind::mask &&
                              packed_factor_count(source.kind) == 0 && source.kind != OpKind::factor &&
                              graph.only_consumer(operand) == id && source.labels == node.labels;
      if (absorbable) {
        source.holds = node.holds;
        source.pattern = node.pattern;
        make_compact(source);
        graph.replace_uses(id, operand);
        graph.detach(id);
        absorbed = true;
        continue;
      }
    }
    make_compact(node);
  }
  if (absorbed) graph.prune();
  return true;
}

}  // namespace tenex::passes
