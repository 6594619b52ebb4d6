#include <algorithm>
#include <string>
#include <vector>

#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

namespace {

/// A mask node between `id` and its consumers, zeroing what `maps` exclude.
NodeId mask_after(OpGraph& graph, NodeId id, std::vector<SparseMapUse> maps) {
  OpNode mask;
  mask.kind = OpKind::mask;
  mask.params = MaskParams{std::move(maps)};
  mask.dtype = graph.node(id).dtype;
  mask.labels = graph.node(id).labels;
  mask.extents = graph.node(id).extents;
  const NodeId m = graph.add_node(std::move(mask), {id});
  graph.replace_uses(id, m);    // also turns the mask's own operand into a self-loop...
  graph.set_operand(m, 0, id);  // ...which this undoes
  return m;
}

}  // namespace

void insert_masks(OpGraph& graph) {
  const std::vector<NodeId> order = graph.topological_order();
  for (NodeId id : order) {
    const OpNode& node = graph.node(id);
    if (node.sparse_maps.empty() || node.kind == OpKind::mask) continue;
    if (node.kind != OpKind::output && !graph.has_consumers(id)) continue;  // dead: prune drops it
    std::vector<SparseMapUse> maps;
    for (std::size_t m : node.sparse_maps) maps.push_back(graph.sparse_maps()[m]);
    if (node.kind != OpKind::output) {
      mask_after(graph, id, std::move(maps));
      continue;
    }
    // An output's maps name the target's labels: mask its operand under the operand's names.
    const NodeId operand = graph.operands(id).at(0);
    const std::vector<std::string>& renamed = node.get<OutputParams>().operand_labels;
    const std::vector<std::string>& names = graph.node(operand).labels;
    for (SparseMapUse& use : maps) {
      for (auto* group : {&use.source, &use.target}) {
        for (std::string& l : *group) {
          const auto at = std::find(renamed.begin(), renamed.end(), l) - renamed.begin();
          if (static_cast<std::size_t>(at) < names.size()) l = names[at];
        }
      }
    }
    const OpNode& source = graph.node(operand);
    if (source.kind == OpKind::mask && source.get<MaskParams>().maps == maps) continue;
    const NodeId m = mask_after(graph, operand, {});
    graph.node(m).params = MaskParams{std::move(maps)};
    // Other consumers of the operand keep reading it unmasked.
    for (NodeId consumer : graph.consumers(m)) {
      if (consumer == id) continue;
      const std::vector<NodeId> ops = graph.operands(consumer);
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i] == m) graph.set_operand(consumer, i, operand);
      }
    }
  }
}

}  // namespace tenex::passes
