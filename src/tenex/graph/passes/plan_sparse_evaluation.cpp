// Sparse evaluation: which nodes keep only the elements their sparse maps allow, as
// per-key dense blocks (OpNode::compact; docs/sparse.md).
//
// A node whose pattern allows at most half of its elements, with each key's allowed tuples
// a product of per-mode domains, is stored compactly: `elements` becomes the allowed count,
// so the executor allocates (and counts) only that. A mask whose operand nothing else
// reads is absorbed into it: the operand then computes the allowed elements only (a
// product as per-key gathered GEMMs) and the mask disappears. Inputs and results written
// to tensors stay dense: a result's target receives zeros where the maps exclude.
// propagate_sparsity must have run. A backend that cannot evaluate compact nodes declines
// them (Backend::supports_sparse) and the pipeline runs the set without this pass.
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
  node.compact = true;
  node.elements = node.pattern->allowed;
}

}  // namespace

void plan_sparse_evaluation(OpGraph& graph) {
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
}

}  // namespace tenex::passes
