// Chains of scales fold into one factor; a permutation (or any reduction) feeding a
// reduction collapses into one reading the original operand. Reductions match modes by
// label, so reduce(reduce(x)) is the outer one applied to x directly; a scale of a scale
// is one scale. The inner node stays only while something else reads it.
#include <complex>

#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

void collapse_chains(OpGraph& graph) {
  for (NodeId id : graph.topological_order()) {
    OpNode& node = graph.node(id);
    if ((node.kind != OpKind::scale && node.kind != OpKind::reduce) || !node.sparse_maps.empty()) continue;
    const std::vector<NodeId> ops = graph.operands(id);
    if (ops.size() != 1) continue;
    const NodeId inner = ops[0];
    const OpNode& in = graph.node(inner);
    if (in.kind != node.kind || !in.sparse_maps.empty() || graph.operands(inner).size() != 1) continue;
    if (node.kind == OpKind::scale) {
      ScaleParams& outer = node.get<ScaleParams>();
      const ScaleParams& inner_params = in.get<ScaleParams>();
      const std::complex<double> product = std::complex<double>(outer.alpha, outer.alpha_imag) *
                                           std::complex<double>(inner_params.alpha, inner_params.alpha_imag);
      outer.alpha = product.real();
      outer.alpha_imag = product.imag();
    }
    graph.set_operand(id, 0, graph.operands(inner)[0]);
    if (!graph.has_consumers(inner)) graph.detach(inner);
  }
}

}  // namespace tenex::passes
