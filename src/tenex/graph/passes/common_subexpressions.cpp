#include <map>
#include <tuple>

#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

namespace {

auto signature(const OpGraph& graph, NodeId id) {
  const OpNode& n = graph.node(id);
  const OpParams& p = n.params;
  return std::make_tuple(static_cast<int>(n.kind), n.labels, n.extents, graph.operands(id), p.alpha, p.alpha_b, p.lo,
                         p.hi, p.mode, p.index, p.power, p.factor, p.offset, p.operand_labels, n.storage.get(),
                         n.sparse_maps);
}

}  // namespace

void eliminate_common_subexpressions(OpGraph& graph) {
  using Signature = decltype(signature(graph, 0));
  std::map<Signature, NodeId> seen;
  for (NodeId id : graph.topological_order()) {
    // Outputs write distinct targets; everything else with equal signatures is one value.
    if (graph.node(id).kind == OpKind::output) continue;
    auto [it, inserted] = seen.emplace(signature(graph, id), id);
    if (!inserted) graph.replace_uses(id, it->second);
  }
}

}  // namespace tenex::passes
