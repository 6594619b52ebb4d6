// Fusion: every maximal region of element-wise work becomes one fused node whose program
// the backend runs in one pass over the region's iteration space.
//
// A region has a root and the nodes it absorbs. A node is absorbed into its consumer's
// region when it is element-wise over the region's space — add, subtract, divide, scale, a
// fused node that reduces nothing, a product that sums nothing (Hadamard or outer), or a
// permutation (labels are matched by name, so a transposed operand is just read with other
// strides) — when that consumer is its only reader (a value read twice is computed once,
// into a tensor), and when no sparse map restricts it. A root may also reduce: a fused node
// that reduces, an explicit sum over labels, or a product that is a dot product or a
// matrix-vector product (one operand's labels contain the other's: memory-bound, nothing for
// GEMM to reuse) becomes the reduction at the end of the pass.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

namespace {

// A region never grows beyond this many nodes: a program's scratch is one strip per
// instruction, and a sum built in a loop can be a million nodes deep.
constexpr std::size_t kMaxRegion = 48;

bool unique_labels(const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (labels[i] == labels[j]) return false;
    }
  }
  return true;
}

/// Whether `labels` has as many labels as the union of the operands' labels and each is in
/// it. Counts the union instead of building it: this runs for nearly every node of a set.
bool is_operand_union(const OpGraph& graph, const std::vector<std::string>& labels,
                      const std::vector<NodeId>& operands) {
  auto held_before = [&](std::size_t op, std::size_t at) {
    const std::vector<std::string>& own = graph.node(operands[op]).labels;
    const auto end = own.begin() + static_cast<std::ptrdiff_t>(at);
    if (std::find(own.begin(), end, own[at]) != end) return true;
    for (std::size_t earlier = 0; earlier < op; ++earlier) {
      const std::vector<std::string>& other = graph.node(operands[earlier]).labels;
      if (std::find(other.begin(), other.end(), own[at]) != other.end()) return true;
    }
    return false;
  };
  std::size_t in_union = 0;
  for (std::size_t op = 0; op < operands.size(); ++op) {
    for (std::size_t at = 0; at < graph.node(operands[op]).labels.size(); ++at) in_union += held_before(op, at) ? 0 : 1;
  }
  if (in_union != labels.size()) return false;
  for (const std::string& l : labels) {
    bool found = false;
    for (NodeId op : operands) {
      const std::vector<std::string>& other = graph.node(op).labels;
      found = found || std::find(other.begin(), other.end(), l) != other.end();
    }
    if (!found) return false;
  }
  return true;
}

bool operands_have_unique_labels(const OpGraph& graph, const std::vector<NodeId>& operands) {
  for (NodeId op : operands) {
    if (!unique_labels(graph.node(op).labels)) return false;
  }
  return true;
}

bool is_float(const OpNode& node) { return node.dtype == DType::f32 || node.dtype == DType::f64; }

/// Element-wise over its operands' labels, reducing nothing: may sit inside a region.
/// `operands` are those of `id`.
bool is_pointwise(const OpGraph& graph, NodeId id, const std::vector<NodeId>& operands) {
  const OpNode& node = graph.node(id);
  if (!is_float(node) || !node.sparse_maps.empty() || !operands_have_unique_labels(graph, operands)) return false;
  switch (node.kind) {
    case OpKind::add:
    case OpKind::subtract:
    case OpKind::divide:
    case OpKind::contract:  // a product with an addend (GEMM beta) stays a GEMM
      if (operands.size() != 2) return false;
      return is_operand_union(graph, node.labels, operands);
    case OpKind::scale:
    case OpKind::fused:
    case OpKind::reduce:  // a permutation, when it keeps every label
      return is_operand_union(graph, node.labels, operands);
    case OpKind::input:
    case OpKind::output:
    case OpKind::cholesky:
    case OpKind::eigen_solve:
    case OpKind::qr:
    case OpKind::svd:
    case OpKind::factor:
    case OpKind::slice:
    case OpKind::chip:
    case OpKind::pow:
    case OpKind::mask:
    case OpKind::inverse:
    case OpKind::solve:
    case OpKind::spd_pow: return false;
  }
  return false;
}

/// May end a region with a reduction over the labels it drops. `ops` are those of `id`.
bool is_reducing_root(const OpGraph& graph, NodeId id, const std::vector<NodeId>& ops) {
  const OpNode& node = graph.node(id);
  if (!is_float(node) || !operands_have_unique_labels(graph, ops)) return false;
  if (node.kind == OpKind::fused || node.kind == OpKind::reduce) return true;
  if (node.kind != OpKind::contract) return false;
  if (ops.size() != 2) return false;
  const auto& a = graph.node(ops[0]).labels;
  const auto& b = graph.node(ops[1]).labels;
  auto subset = [](const std::vector<std::string>& x, const std::vector<std::string>& y) {
    return std::all_of(x.begin(), x.end(),
                       [&](const std::string& l) { return std::find(y.begin(), y.end(), l) != y.end(); });
  };
  return subset(a, b) || subset(b, a);
}

/// Builds the program of one region.
class RegionProgram {
 public:
  RegionProgram(const OpGraph& graph, const std::vector<NodeId>& region) : graph_(graph), region_(region) {}

  /// The value of `id` (a region node or an external operand), emitting what it needs.
  std::uint32_t value(NodeId root) {
    // Post-order without recursion.
    std::vector<std::pair<NodeId, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [id, expanded] = stack.back();
      stack.pop_back();
      if (values_.count(id)) continue;
      if (std::find(region_.begin(), region_.end(), id) == region_.end()) {
        values_[id] = load(id);
        continue;
      }
      const std::vector<NodeId> ops = graph_.operands(id);
      if (!expanded) {
        stack.push_back({id, true});
        for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
          if (!values_.count(*it)) stack.push_back({*it, false});
        }
        continue;
      }
      values_[id] = emit(id, ops);
    }
    return values_.at(root);
  }

  FusedParams params;
  std::vector<NodeId> operands;

 private:
  std::uint32_t push(FusedInstr in) {
    params.program.push_back(in);
    return static_cast<std::uint32_t>(params.program.size() - 1);
  }
  std::uint32_t load(NodeId id) {
    auto it = std::find(operands.begin(), operands.end(), id);
    std::uint32_t k = static_cast<std::uint32_t>(it - operands.begin());
    if (it == operands.end()) operands.push_back(id);
    return push({FusedOp::load, k});
  }
  std::uint32_t scaled(std::uint32_t v, double alpha, double alpha_imag = 0.0) {
    if (alpha == 1.0 && alpha_imag == 0.0) return v;
    const std::uint32_t c = push({FusedOp::constant, 0, 0, alpha, alpha_imag});
    return push({FusedOp::multiply, v, c});
  }

  std::uint32_t emit(NodeId id, const std::vector<NodeId>& ops) {
    const OpNode& node = graph_.node(id);
    switch (node.kind) {
      case OpKind::add:
      case OpKind::subtract:
      case OpKind::divide: {
        const ElementwiseParams& p = node.kind == OpKind::add ? node.get<AddParams>()
                                     : node.kind == OpKind::subtract
                                         ? static_cast<const ElementwiseParams&>(node.get<SubtractParams>())
                                         : node.get<DivideParams>();
        const std::uint32_t a = scaled(values_.at(ops[0]), p.alpha);
        const std::uint32_t b = scaled(values_.at(ops[1]), p.alpha_b);
        const FusedOp op = node.kind == OpKind::add        ? FusedOp::add
                           : node.kind == OpKind::subtract ? FusedOp::subtract
                                                           : FusedOp::divide;
        return push({op, a, b});
      }
      case OpKind::scale: {
        const ScaleParams& p = node.get<ScaleParams>();
        return scaled(values_.at(ops[0]), p.alpha, p.alpha_imag);
      }
      case OpKind::contract: {
        const std::uint32_t product = push({FusedOp::multiply, values_.at(ops[0]), values_.at(ops[1])});
        return scaled(product, node.get<ContractParams>().alpha);
      }
      case OpKind::reduce: return values_.at(ops[0]);
      case OpKind::fused: {
        // Inline the node's program: its loads become the values of its operands.
        const FusedParams& inner = node.get<FusedParams>();
        const std::uint32_t base_fn = static_cast<std::uint32_t>(params.functions.size());
        params.functions.insert(params.functions.end(), inner.functions.begin(), inner.functions.end());
        std::vector<std::uint32_t> map(inner.program.size());
        for (std::size_t i = 0; i < inner.program.size(); ++i) {
          FusedInstr in = inner.program[i];
          if (in.op == FusedOp::load) {
            map[i] = values_.at(ops.at(in.a));
            continue;
          }
          if (in.op != FusedOp::constant) {
            in.a = map[in.a];
            if (in.op == FusedOp::call) {
              in.b += base_fn;
            } else if (fused_op_values(in.op) == 2) {
              in.b = map[in.b];
            }
          }
          map[i] = push(in);
        }
        return map.back();
      }
      case OpKind::input:
      case OpKind::output:
      case OpKind::cholesky:
      case OpKind::eigen_solve:
      case OpKind::qr:
      case OpKind::svd:
      case OpKind::factor:
      case OpKind::slice:
      case OpKind::chip:
      case OpKind::pow:
      case OpKind::mask:
      case OpKind::inverse:
      case OpKind::solve:
      case OpKind::spd_pow: break;
    }
    return load(id);
  }

  const OpGraph& graph_;
  const std::vector<NodeId>& region_;  // at most kMaxRegion nodes: a scan
  std::unordered_map<NodeId, std::uint32_t> values_;
};

}  // namespace

void fuse_elementwise(OpGraph& graph) {
  const std::vector<NodeId> order = graph.topological_order();
  std::vector<bool> absorbed(graph.size(), false);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId root = *it;
    if (absorbed[root]) continue;
    const std::vector<NodeId> root_operands = graph.operands(root);
    if (root_operands.empty()) continue;
    const bool pointwise = is_pointwise(graph, root, root_operands);
    if (!pointwise && !is_reducing_root(graph, root, root_operands)) continue;
    // Grow the region from the root through operands that only it reads.
    std::vector<NodeId> region{root};
    std::vector<NodeId> frontier{root};
    while (!frontier.empty() && region.size() < kMaxRegion) {
      const NodeId id = frontier.back();
      frontier.pop_back();
      for (NodeId op : graph.operands(id)) {
        if (region.size() >= kMaxRegion || std::find(region.begin(), region.end(), op) != region.end()) continue;
        if (!graph.only_consumer(op) || !is_pointwise(graph, op, graph.operands(op))) continue;
        region.push_back(op);
        frontier.push_back(op);
      }
    }
    const OpNode& node = graph.node(root);
    // A lone node keeps its own kernel (GEMM, the element-wise kernels), except a product
    // that is a dot or matrix-vector product, which the fused kernel reduces in one pass.
    if (region.size() == 1 && node.kind != OpKind::contract) continue;
    if (region.size() == 1 && pointwise) continue;

    RegionProgram program(graph, region);
    const std::uint32_t result = program.value(root);
    // The root's value must be the last instruction (it is not for a permutation of an
    // operand outside the region, which the lone-node rule above already leaves alone).
    if (result + 1 != program.params.program.size()) continue;
    if (node.kind == OpKind::fused) program.params.reduce = node.get<FusedParams>().reduce;
    OpNode fused;
    fused.kind = OpKind::fused;
    fused.dtype = node.dtype;
    fused.labels = node.labels;
    fused.extents = node.extents;
    fused.sparse_maps = node.sparse_maps;
    fused.note = node.note;
    fused.params = std::move(program.params);
    const NodeId id = graph.add_node(std::move(fused), program.operands);
    absorbed.resize(graph.size(), false);
    graph.replace_uses(root, id);
    for (NodeId member : region) {
      absorbed[member] = true;
      graph.detach(member);
    }
  }
}

}  // namespace tenex::passes
