#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tenex/graph/contraction_tree/methods.hpp"
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
  tree::Path written;                 // the order as built, over the leaves' numbers
  std::vector<std::size_t> operands;  // while collecting: the written tree's operands so far
  std::vector<NodeId> absorbed;       // the inner contractions and scales flattened into the chain
  double alpha = 1.0;
  bool changed = false;  // an inner contraction or scale was absorbed
  LabelCount collected;  // the labels of the leaves, counted as they are collected
};

/// What collect() does next: visit an operand, take a factor's labels back out of `outside`, or
/// record the written step that joins the last two operands collected.
struct CollectStep {
  enum Kind { visit, uncount, combine } kind;
  NodeId id;
};

/// The written tree's step joining the last two operands collected.
void combine(Chain& chain) {
  const std::size_t b = chain.operands.back();
  chain.operands.pop_back();
  const std::size_t a = chain.operands.back();
  chain.written.emplace_back(a, b);
  chain.operands.back() = chain.written.size() - 1 + (std::size_t{1} << 62);  // a step, numbered later
}

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
  steps.push_back({CollectStep::combine, f});
  steps.push_back({CollectStep::visit, ops[1]});
  steps.push_back({CollectStep::uncount, ops[1]});
  steps.push_back({CollectStep::visit, ops[0]});
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
  std::vector<CollectStep> steps{{CollectStep::visit, id}};
  while (!steps.empty()) {
    const CollectStep step = steps.back();
    steps.pop_back();
    if (step.kind == CollectStep::uncount) {
      count_labels(outside, graph.node(step.id).labels, -1);
      continue;
    }
    if (step.kind == CollectStep::combine) {
      combine(chain);
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
    chain.operands.push_back(chain.leaves.size());
    chain.leaves.push_back(f);
    count_labels(chain.collected, graph.node(f).labels, 1);
  }
}

std::size_t element_bytes(DType dtype) { return dtype == DType::shape ? sizeof(double) : dtype_bytes(dtype); }

/// The written tree over SSA numbers: inputs 0..n-1, step i makes n + i.
tree::Path written_path(const Chain& chain) {
  constexpr std::size_t step_mark = std::size_t{1} << 62;
  const std::size_t n = chain.leaves.size();
  tree::Path path = chain.written;
  for (auto& [a, b] : path) {
    if (a >= step_mark) a = a - step_mark + n;
    if (b >= step_mark) b = b - step_mark + n;
  }
  return path;
}

/// Slices beyond this many are not unrolled into the graph (the set then fails at planning,
/// naming what does not fit).
constexpr double most_slices = 4096;

/// A label held by very many factors, or a product of very many.
bool hyper_heavy(const tree::Network& network) {
  if (network.size() > 2000) return true;
  for (int h : network.holders) {
    if (h > 64) return true;
  }
  return false;
}

/// What a tree of the chain is built from: each leaf's node and labels, the extents.
struct Leaves {
  std::vector<NodeId> slots;
  std::vector<std::vector<std::string>> labels;
  std::map<std::string, std::size_t> extents;
};

/// Adds the contractions of `path` over `leaves` (each slot possibly restricted to a slice):
/// each step keeps the final labels and those a waiting operand holds. The last step gets
/// `alpha`, and `addend` (beta = 1) when there is one. Returns the root.
NodeId emit_tree(OpGraph& graph, Leaves leaves, const tree::Path& path, const std::vector<std::string>& keep,
                 DType dtype, double alpha, std::optional<NodeId> addend) {
  LabelCount live;  // labels of the operands still waiting
  for (const auto& l : leaves.labels) count_labels(live, l, 1);
  NodeId result = leaves.slots.back();
  for (std::size_t step = 0; step < path.size(); ++step) {
    const auto [a, b] = path[step];
    count_labels(live, leaves.labels[a], -1);
    count_labels(live, leaves.labels[b], -1);
    const bool last = step + 1 == path.size();
    std::vector<std::string> out;
    if (last) {
      out = keep;
    } else {
      for (const std::string& l : detail::union_labels(leaves.labels[a], leaves.labels[b])) {
        if (counted(live, l) || detail::contains_label(keep, l)) out.push_back(l);
      }
    }
    count_labels(live, out, 1);
    OpNode node;
    node.kind = OpKind::contract;
    ContractParams params{last ? alpha : 1.0};
    std::vector<NodeId> operands{leaves.slots[a], leaves.slots[b]};
    if (last && addend) {
      params.beta = 1.0;
      operands.push_back(*addend);
    }
    node.params = params;
    node.dtype = dtype;
    node.labels = out;
    for (const std::string& l : out) node.extents.push_back(leaves.extents.at(l));
    result = graph.add_node(std::move(node), operands);
    leaves.labels.push_back(std::move(out));
    leaves.slots.push_back(result);
  }
  return result;
}

/// The tree run once per value of the sliced labels, each slice's result added to the
/// slices before it (GEMM beta = 1), so only one slice's intermediates are held at a time.
NodeId emit_sliced(OpGraph& graph, const Leaves& leaves, const tree::Path& path, const std::vector<std::string>& keep,
                   DType dtype, double alpha, const std::vector<std::string>& sliced) {
  std::vector<std::size_t> at(sliced.size(), 0);
  std::optional<NodeId> sum;
  for (std::size_t number = 0;; ++number) {
    Leaves slice = leaves;
    const std::string note = "slice " + std::to_string(number);
    for (std::size_t i = 0; i < sliced.size(); ++i) {
      slice.extents[sliced[i]] = 1;
      for (NodeId& slot : slice.slots) slot = restrict_to(graph, slot, sliced[i], at[i], at[i] + 1, note);
    }
    sum = emit_tree(graph, std::move(slice), path, keep, dtype, alpha, sum);
    std::size_t i = 0;
    for (; i < sliced.size(); ++i) {
      if (++at[i] < leaves.extents.at(sliced[i])) break;
      at[i] = 0;
    }
    if (i == sliced.size()) return *sum;
  }
}

/// The explain() note of a chain's tree: its cost against the written order, its search,
/// and the slices.
std::string tree_note(const tree::Network& network, const tree::Result& r) {
  std::vector<std::size_t> depth(network.size(), 0);
  for (const auto& [a, b] : r.path) depth.push_back(1 + std::max(depth[a], depth[b]));
  char text[320];
  std::snprintf(text, sizeof text,
                "tree of %zu factors by %s: depth %zu, 2^%.2f flops (written order 2^%.2f), largest "
                "intermediate 2^%.2f elements",
                network.size(), r.method.c_str(), depth.back(), r.cost.log2_flops, r.log2_written_flops,
                r.cost.log2_largest);
  std::string note = text;
  if (!r.slicing.labels.empty()) {
    note += "; sliced";
    for (tree::Label l : r.slicing.labels) note += " " + network.names[static_cast<std::size_t>(l)];
    std::snprintf(text, sizeof text, ": %.0f slices, flops x%.2f", r.slicing.slices,
                  std::exp2(r.slicing.log2_total_flops - r.cost.log2_flops));
    note += text;
  }
  return note;
}

}  // namespace

void order_contractions(OpGraph& graph, std::size_t memory_limit) {
  const std::vector<NodeId> order = graph.topological_order();
  std::vector<char> absorbed(graph.size(), 0);
  tree::Options options;
  bool options_read = false;
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
    combine(chain);
    for (NodeId inner : chain.absorbed) absorbed[inner] = 1;
    // Two factors as built: nothing to reorder.
    if (chain.leaves.size() <= 2 && !chain.changed) continue;

    Leaves leaves;
    for (NodeId leaf : chain.leaves) {
      const OpNode& n = graph.node(leaf);
      for (std::size_t i = 0; i < n.labels.size(); ++i) leaves.extents[n.labels[i]] = n.extents[i];
      leaves.labels.push_back(n.labels);
      leaves.slots.push_back(leaf);
    }
    const std::vector<std::string> keep = top.labels;
    const DType dtype = top.dtype;
    if (!options_read) {
      options = tree::options_from_environment();
      options.bounded_by_work = true;
      options.remember = true;
      // A quarter of the limit for the largest intermediate: its operands and the running
      // sum of the slices are held beside it.
      if (memory_limit != 0) {
        options.log2_max_size =
            std::log2(std::max(1.0, static_cast<double>(memory_limit) / 4 / static_cast<double>(element_bytes(dtype))));
      }
      options_read = true;
    }
    const tree::Network network = tree::make_network(leaves.labels, leaves.extents, keep);
    const tree::Path written = written_path(chain);
    tree::Result r;
    if (hyper_heavy(network)) {
      // A label on very many factors (a long Hadamard product): the class-based greedy orders
      // it in O(n log n), where a search over pairs would be quadratic.
      r.path = order_product(leaves.labels, leaves.extents, keep);
      r.cost = tree::score(network, r.path);
      r.method = "greedy by label classes";
      r.log2_written_flops = tree::score(network, written).log2_flops;
    } else {
      tree::Options o = options;
      o.written = &written;
      r = tree::optimize(network, o);
    }
    std::vector<std::string> sliced;
    if (r.slicing.slices <= most_slices) {
      for (tree::Label l : r.slicing.labels) sliced.push_back(network.names[static_cast<std::size_t>(l)]);
    }
    const NodeId result = sliced.empty() ? emit_tree(graph, leaves, r.path, keep, dtype, chain.alpha, std::nullopt)
                                         : emit_sliced(graph, leaves, r.path, keep, dtype, chain.alpha, sliced);
    // The tree's line in explain(): for networks (a product of a few factors reads well as
    // its steps) and wherever slices run.
    if (network.size() >= 8 || !sliced.empty()) graph.node(result).note = tree_note(network, r);
    graph.replace_uses(root, result);
    // Dead now: detached, so that later passes count the true consumers of the factors.
    graph.detach(root);
    for (NodeId inner : chain.absorbed) graph.detach(inner);
  }
}

}  // namespace tenex::passes
