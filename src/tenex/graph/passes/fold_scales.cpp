#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

namespace {

bool is_foldable(OpKind kind) {
  return kind == OpKind::contract || kind == OpKind::add || kind == OpKind::subtract || kind == OpKind::divide ||
         kind == OpKind::scale;
}

/// Multiplies the result of `node` by `factor` through its parameters.
void scale_result(OpNode& node, double factor) {
  node.params.alpha *= factor;
  if (node.kind == OpKind::add || node.kind == OpKind::subtract) node.params.alpha_b *= factor;
}

}  // namespace

void fold_scales(OpGraph& graph) {
  for (NodeId id : graph.topological_order()) {
    OpNode& node = graph.node(id);
    // A scaled operand of a product or an element-wise node: read the unscaled value
    // and apply the factor in the kernel (alpha of GEMM, or of the element-wise term).
    if (node.kind == OpKind::contract || node.kind == OpKind::add || node.kind == OpKind::subtract ||
        node.kind == OpKind::divide) {
      const std::vector<NodeId> operands = graph.operands(id);
      for (std::size_t i = 0; i < operands.size(); ++i) {
        const OpNode& operand = graph.node(operands[i]);
        if (operand.kind != OpKind::scale || operand.labels != graph.node(operands[i]).labels ||
            !operand.sparse_maps.empty()) {
          continue;
        }
        const double factor = operand.params.alpha;
        if (node.kind == OpKind::contract) {
          node.params.alpha *= factor;
        } else if (node.kind == OpKind::divide) {
          if (i == 0) {
            node.params.alpha *= factor;
          } else {
            if (factor == 0.0) continue;
            node.params.alpha /= factor;
          }
        } else {
          (i == 0 ? node.params.alpha : node.params.alpha_b) *= factor;
        }
        graph.set_operand(id, i, graph.operands(operands[i]).at(0));
      }
    }
  }
  for (NodeId id : graph.topological_order()) {
    const OpNode& scale = graph.node(id);
    if (scale.kind != OpKind::scale) continue;
    const NodeId operand = graph.operands(id).at(0);
    OpNode& target = graph.node(operand);
    // Only a value nobody else reads may change its factor; the labels must match too.
    if (!is_foldable(target.kind) || graph.consumers(operand).size() != 1 || target.labels != scale.labels ||
        target.sparse_maps != scale.sparse_maps) {
      continue;
    }
    scale_result(target, scale.params.alpha);
    graph.replace_uses(id, operand);
  }
}

}  // namespace tenex::passes
