#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tenex/graph/passes/contraction_order.hpp"
#include "tenex/graph/passes/passes.hpp"
#include "tenex/labels.hpp"

namespace tenex::passes {

namespace {

using detail::contains_label;

/// `id` is read by exactly one node, once.
bool used_once(const OpGraph& graph, NodeId id) {
  const std::vector<NodeId> consumers = graph.consumers(id);
  if (consumers.size() != 1) return false;
  const std::vector<NodeId> operands = graph.operands(consumers[0]);
  return std::count(operands.begin(), operands.end(), id) == 1;
}

struct Chain {
  std::vector<NodeId> leaves;
  double alpha = 1.0;
  bool changed = false;  // an inner contraction or scale was absorbed
};

/// Adds the factors of operand `id` to `chain`. `outside` holds every label the rest of
/// the chain uses: an inner contraction is flattened only when the labels it sums appear
/// nowhere else (then summing them inside or in the whole chain is the same).
void collect(const OpGraph& graph, NodeId id, const std::vector<std::string>& outside, Chain& chain) {
  NodeId f = id;
  double scale = 1.0;
  while (graph.node(f).kind == OpKind::scale && used_once(graph, f) && graph.node(f).sparse_maps.empty()) {
    scale *= graph.node(f).get<ScaleParams>().alpha;
    f = graph.operands(f)[0];
  }
  const OpNode& node = graph.node(f);
  if (node.kind == OpKind::contract && used_once(graph, f) && node.sparse_maps.empty()) {
    const std::vector<NodeId> ops = graph.operands(f);
    const OpNode& a = graph.node(ops[0]);
    const OpNode& b = graph.node(ops[1]);
    bool summed_elsewhere = false;
    for (const OpNode* side : {&a, &b}) {
      for (const std::string& l : side->labels) {
        if (!contains_label(node.labels, l) && contains_label(outside, l)) summed_elsewhere = true;
      }
    }
    if (!summed_elsewhere) {
      chain.alpha *= scale * node.get<ContractParams>().alpha;
      chain.changed = true;
      std::vector<std::string> outside_a = outside, outside_b = outside;
      outside_a.insert(outside_a.end(), b.labels.begin(), b.labels.end());
      outside_b.insert(outside_b.end(), a.labels.begin(), a.labels.end());
      collect(graph, ops[0], outside_a, chain);
      collect(graph, ops[1], outside_b, chain);
      return;
    }
  }
  if (f != id) {
    chain.alpha *= scale;
    chain.changed = true;
  }
  chain.leaves.push_back(f);
}

}  // namespace

void order_contractions(OpGraph& graph) {
  const std::vector<NodeId> order = graph.topological_order();
  // Roots first: a chain is found whole from its top contraction.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId root = *it;
    const OpNode& top = graph.node(root);
    if (top.kind != OpKind::contract || !top.sparse_maps.empty()) continue;
    const std::vector<NodeId> ops = graph.operands(root);
    if (ops.size() != 2 || graph.consumers(root).empty()) continue;  // detached by an earlier pass: dead
    Chain chain;
    chain.alpha = top.get<ContractParams>().alpha;
    std::vector<std::string> outside_a = top.labels, outside_b = top.labels;
    outside_a.insert(outside_a.end(), graph.node(ops[1]).labels.begin(), graph.node(ops[1]).labels.end());
    outside_b.insert(outside_b.end(), graph.node(ops[0]).labels.begin(), graph.node(ops[0]).labels.end());
    collect(graph, ops[0], outside_a, chain);
    collect(graph, ops[1], outside_b, chain);
    // Two factors as built: nothing to reorder.
    if (chain.leaves.size() <= 2 && !chain.changed) continue;

    std::map<std::string, std::size_t> extents;
    std::vector<std::vector<std::string>> labels;
    std::vector<NodeId> slots;
    for (NodeId leaf : chain.leaves) {
      const OpNode& n = graph.node(leaf);
      for (std::size_t i = 0; i < n.labels.size(); ++i) extents[n.labels[i]] = n.extents[i];
      labels.push_back(n.labels);
      slots.push_back(leaf);
    }
    const std::vector<std::string> keep = top.labels;
    const DType dtype = top.dtype;
    NodeId result = root;
    const ContractionPath path = order_product(labels, extents, keep);
    std::vector<bool> live(labels.size(), true);
    for (std::size_t step = 0; step < path.size(); ++step) {
      auto [a, b] = path[step];
      live[a] = live[b] = false;
      const bool last = step + 1 == path.size();
      std::vector<std::string> needed = keep;
      for (std::size_t s = 0; s < labels.size(); ++s) {
        if (live[s]) needed.insert(needed.end(), labels[s].begin(), labels[s].end());
      }
      std::vector<std::string> out = last ? keep : pair_result_labels(labels[a], labels[b], needed);
      OpNode node;
      node.kind = OpKind::contract;
      node.params = ContractParams{last ? chain.alpha : 1.0};
      node.dtype = dtype;
      node.labels = out;
      for (const std::string& l : out) node.extents.push_back(extents.at(l));
      result = graph.add_node(std::move(node), {slots[a], slots[b]});
      labels.push_back(out);
      slots.push_back(result);
      live.push_back(true);
    }
    graph.replace_uses(root, result);
    graph.detach(root);
  }
}

}  // namespace tenex::passes
