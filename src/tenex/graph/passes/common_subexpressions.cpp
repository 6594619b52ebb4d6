#include <map>
#include <tuple>
#include <vector>

#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

namespace {

/// Everything but the parameters, ordered; the parameters are compared by their structs'
/// defaulted operator== (every field, whatever a kind adds later).
auto signature(const OpGraph& graph, NodeId id) {
  const OpNode& n = graph.node(id);
  return std::make_tuple(static_cast<int>(n.kind), static_cast<int>(n.dtype), n.labels, n.extents, graph.operands(id),
                         n.storage.get(), n.sparse_maps);
}

}  // namespace

void eliminate_common_subexpressions(OpGraph& graph) {
  using Signature = decltype(signature(graph, 0));
  std::map<Signature, std::vector<NodeId>> seen;
  for (NodeId id : graph.topological_order()) {
    // Outputs write distinct targets; everything else with equal signatures is one value.
    if (graph.node(id).kind == OpKind::output) continue;
    std::vector<NodeId>& same = seen[signature(graph, id)];
    bool merged = false;
    for (NodeId other : same) {
      if (graph.node(other).params == graph.node(id).params) {
        graph.replace_uses(id, other);
        graph.detach(id);  // dead now: let later passes see the true consumer counts
        merged = true;
        break;
      }
    }
    if (!merged) same.push_back(id);
  }
}

}  // namespace tenex::passes
