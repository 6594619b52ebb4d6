#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

void fold_scales(OpGraph& graph) {
  for (NodeId id : graph.topological_order()) {
    OpNode& scale = graph.node(id);
    if (scale.kind != OpKind::scale) continue;
    const NodeId operand = graph.operands(id).at(0);
    OpNode& target = graph.node(operand);
    const bool foldable = target.kind == OpKind::contract || target.kind == OpKind::add ||
                          target.kind == OpKind::subtract || target.kind == OpKind::divide ||
                          target.kind == OpKind::scale;
    // Only a value nobody else reads may change its factor; the labels must match too.
    if (!foldable || graph.consumers(operand).size() != 1 || target.labels != scale.labels ||
        target.sparse_maps != scale.sparse_maps) {
      continue;
    }
    target.params.alpha *= scale.params.alpha;
    if (target.kind == OpKind::add || target.kind == OpKind::subtract) target.params.alpha_b *= scale.params.alpha;
    graph.replace_uses(id, operand);
  }
}

}  // namespace tenex::passes
