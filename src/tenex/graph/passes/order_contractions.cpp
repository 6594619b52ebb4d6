#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tenex/graph/passes/contraction_order.hpp"
#include "tenex/graph/passes/passes.hpp"
#include "tenex/labels.hpp"

namespace tenex::passes {

namespace {

/// `id` is read by exactly one node, once.
bool used_once(const OpGraph& graph, NodeId id) {
  const std::optional<NodeId> consumer = graph.only_consumer(id);
  if (!consumer) return false;
  const std::vector<NodeId> operands = graph.operands(*consumer);
  return std::count(operands.begin(), operands.end(), id) == 1;
}

/// How many times each label occurs in a multiset of label lists.
using LabelCount = std::unordered_map<std::string, long>;

void count_labels(LabelCount& count, const std::vector<std::string>& labels, long by) {
  for (const std::string& l : labels) count[l] += by;
}

bool counted(const LabelCount& count, const std::string& l) {
  auto it = count.find(l);
  return it != count.end() && it->second > 0;
}

struct Chain {
  std::vector<NodeId> leaves;
  std::vector<NodeId> absorbed;  // the inner contractions and scales flattened into the chain
  double alpha = 1.0;
  bool changed = false;  // an inner contraction or scale was absorbed
  LabelCount collected;  // the labels of the leaves, counted as they are collected
};

/// What collect() does next: visit an operand, or take a factor's labels back out of `outside`.
struct CollectStep {
  NodeId id;
  bool uncount;  // false: visit `id`; true: the labels of node `id` leave `outside`
};

/// Flattens the contraction (or scale) `f` into `chain` when the labels it sums appear nowhere
/// else; false when it stays a leaf. Its operands go on `steps`.
bool absorb(const OpGraph& graph, NodeId f, double scale, const std::vector<NodeId>& scales, LabelCount& outside,
            Chain& chain, std::vector<CollectStep>& steps) {
  const OpNode& node = graph.node(f);
  const std::vector<NodeId> ops = graph.operands(f);
  if (node.kind != OpKind::contract || ops.size() != 2 || !used_once(graph, f) || !node.sparse_maps.empty() ||
      node.get<ContractParams>().beta != 0.0) {
    return false;
  }
  const OpNode& a = graph.node(ops[0]);
  const OpNode& b = graph.node(ops[1]);
  for (const OpNode* side : {&a, &b}) {
    for (const std::string& l : side->labels) {
      if (!detail::contains_label(node.labels, l) && (counted(outside, l) || counted(chain.collected, l))) {
        return false;
      }
    }
  }
  chain.alpha *= scale * node.get<ContractParams>().alpha;
  chain.changed = true;
  chain.absorbed.insert(chain.absorbed.end(), scales.begin(), scales.end());
  chain.absorbed.push_back(f);
  // The first operand is collected with the second's labels outside, then the second.
  count_labels(outside, b.labels, 1);
  steps.push_back({ops[1], false});
  steps.push_back({ops[1], true});
  steps.push_back({ops[0], false});
  return true;
}

/// Adds the factors of operand `id` to `chain`. `outside` counts the labels of the parts of
/// the chain not collected yet, `chain.collected` those of the factors collected so far: an
/// inner contraction is flattened only when the labels it sums appear nowhere else (then
/// summing them inside or in the whole chain is the same; twice(a("p,j") * b("p")) *
/// (c("p,j") * d("p")) sums two p's, so only one of them may join the chain). `outside` is
/// changed and restored, so a chain of N factors is collected in O(N) steps, with a stack of
/// its own: a product of a hundred thousand factors nests as deep.
void collect(const OpGraph& graph, NodeId id, LabelCount& outside, Chain& chain) {
  std::vector<CollectStep> steps{{id, false}};
  while (!steps.empty()) {
    const CollectStep step = steps.back();
    steps.pop_back();
    if (step.uncount) {
      count_labels(outside, graph.node(step.id).labels, -1);
      continue;
    }
    NodeId f = step.id;
    double scale = 1.0;
    std::vector<NodeId> scales;
    while (graph.node(f).kind == OpKind::scale && used_once(graph, f) && graph.node(f).sparse_maps.empty() &&
           graph.node(f).get<ScaleParams>().alpha_imag == 0.0) {
      scale *= graph.node(f).get<ScaleParams>().alpha;
      scales.push_back(f);
      f = graph.operands(f)[0];
    }
    if (absorb(graph, f, scale, scales, outside, chain, steps)) continue;
    if (f != step.id) {
      chain.alpha *= scale;
      chain.changed = true;
      chain.absorbed.insert(chain.absorbed.end(), scales.begin(), scales.end());
    }
    chain.leaves.push_back(f);
    count_labels(chain.collected, graph.node(f).labels, 1);
  }
}

std::size_t element_bytes(DType dtype) { return dtype == DType::shape ? sizeof(double) : dtype_bytes(dtype); }

}  // namespace

void order_contractions(OpGraph& graph, std::size_t memory_limit) {
  const std::vector<NodeId> order = graph.topological_order();
  std::vector<char> absorbed(graph.size(), 0);
  // Roots first: a chain is found whole from its top contraction.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId root = *it;
    if (absorbed[root]) continue;  // inside a chain already ordered
    const OpNode& top = graph.node(root);
    if (top.kind != OpKind::contract || !top.sparse_maps.empty() || top.get<ContractParams>().beta != 0.0) continue;
    const std::vector<NodeId> ops = graph.operands(root);
    if (ops.size() != 2 || !graph.has_consumers(root)) continue;  // detached by an earlier pass: dead
    Chain chain;
    chain.alpha = top.get<ContractParams>().alpha;
    LabelCount outside;
    count_labels(outside, top.labels, 1);
    count_labels(outside, graph.node(ops[1]).labels, 1);
    collect(graph, ops[0], outside, chain);
    count_labels(outside, graph.node(ops[1]).labels, -1);
    collect(graph, ops[1], outside, chain);
    for (NodeId inner : chain.absorbed) absorbed[inner] = 1;
    // Two factors as built: nothing to reorder.
    if (chain.leaves.size() <= 2 && !chain.changed) continue;

    std::map<std::string, std::size_t> extents;
    std::vector<std::vector<std::string>> labels;
    std::vector<NodeId> slots;
    LabelCount live;  // labels of the slots still waiting
    for (NodeId leaf : chain.leaves) {
      const OpNode& n = graph.node(leaf);
      for (std::size_t i = 0; i < n.labels.size(); ++i) extents[n.labels[i]] = n.extents[i];
      labels.push_back(n.labels);
      slots.push_back(leaf);
      count_labels(live, n.labels, 1);
    }
    const std::vector<std::string> keep = top.labels;
    const DType dtype = top.dtype;
    const double max_elements =
        memory_limit == 0 ? 0.0 : static_cast<double>(memory_limit) / static_cast<double>(element_bytes(dtype));
    NodeId result = root;
    const ContractionPath path = order_product(labels, extents, keep, max_elements);
    for (std::size_t step = 0; step < path.size(); ++step) {
      const auto [a, b] = path[step];
      count_labels(live, labels[a], -1);
      count_labels(live, labels[b], -1);
      const bool last = step + 1 == path.size();
      std::vector<std::string> out;
      if (last) {
        out = keep;
      } else {
        // Kept: the final labels and those another waiting slot holds.
        for (const std::string& l : detail::union_labels(labels[a], labels[b])) {
          if (counted(live, l) || detail::contains_label(keep, l)) out.push_back(l);
        }
      }
      count_labels(live, out, 1);
      OpNode node;
      node.kind = OpKind::contract;
      node.params = ContractParams{last ? chain.alpha : 1.0};
      node.dtype = dtype;
      node.labels = out;
      for (const std::string& l : out) node.extents.push_back(extents.at(l));
      result = graph.add_node(std::move(node), {slots[a], slots[b]});
      labels.push_back(std::move(out));
      slots.push_back(result);
    }
    graph.replace_uses(root, result);
    // Dead now: detached, so that later passes count the true consumers of the factors.
    graph.detach(root);
    for (NodeId inner : chain.absorbed) graph.detach(inner);
  }
}

}  // namespace tenex::passes
