#include <algorithm>
#include <string>
#include <vector>

#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

namespace {

std::vector<std::string> sorted(std::vector<std::string> labels) {
  std::sort(labels.begin(), labels.end());
  return labels;
}

/// A plain product (two operands, no addend yet, no sparse map) that only `consumer` reads, once.
bool foldable_product(const OpGraph& graph, NodeId id, NodeId consumer) {
  const OpNode& node = graph.node(id);
  if (node.kind != OpKind::contract || !node.sparse_maps.empty() || graph.operands(id).size() != 2) return false;
  if (node.get<ContractParams>().beta != 0.0) return false;
  if (graph.only_consumer(id) != consumer) return false;
  const std::vector<NodeId> operands = graph.operands(consumer);
  return std::count(operands.begin(), operands.end(), id) == 1;
}

}  // namespace

void fold_gemm_beta(OpGraph& graph) {
  for (NodeId id : graph.topological_order()) {
    const OpNode& sum = graph.node(id);
    if ((sum.kind != OpKind::add && sum.kind != OpKind::subtract) || !sum.sparse_maps.empty()) continue;
    const std::vector<NodeId> operands = graph.operands(id);
    if (operands.size() != 2) continue;  // detached: dead
    const ElementwiseParams& p = sum.kind == OpKind::add ? static_cast<const ElementwiseParams&>(sum.get<AddParams>())
                                                         : sum.get<SubtractParams>();
    const double sign = sum.kind == OpKind::add ? 1.0 : -1.0;
    // sum = alpha * x (+/-) alpha_b * y: the product is x (preferred) or y, the addend the other.
    for (std::size_t side = 0; side < 2; ++side) {
      const NodeId product = operands[side], addend = operands[1 - side];
      if (!foldable_product(graph, product, id)) continue;
      const OpNode& c = graph.node(product);
      const OpNode& d = graph.node(addend);
      // Only where nothing broadcasts: the product, the addend and the sum have one label set.
      const std::vector<std::string> labels = sorted(sum.labels);
      if (sorted(c.labels) != labels || sorted(d.labels) != labels || c.dtype != sum.dtype || d.dtype != sum.dtype) {
        continue;
      }
      const double product_factor = side == 0 ? p.alpha : sign * p.alpha_b;
      const double addend_factor = side == 0 ? sign * p.alpha_b : p.alpha;
      ContractParams params;
      params.alpha = product_factor * c.get<ContractParams>().alpha;
      params.beta = addend_factor;
      const std::vector<NodeId> factors = graph.operands(product);
      OpNode fused;
      fused.kind = OpKind::contract;
      fused.params = params;
      fused.dtype = sum.dtype;
      fused.labels = sum.labels;
      fused.extents = sum.extents;
      fused.note = sum.note;
      const NodeId result = graph.add_node(std::move(fused), {factors[0], factors[1], addend});
      graph.replace_uses(id, result);
      graph.detach(id);
      graph.detach(product);
      break;
    }
  }
}

}  // namespace tenex::passes
