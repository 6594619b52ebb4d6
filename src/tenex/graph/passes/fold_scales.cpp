#include <type_traits>
#include <variant>

#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

namespace {

bool is_foldable(OpKind kind) {
  return kind == OpKind::contract || kind == OpKind::add || kind == OpKind::subtract || kind == OpKind::divide ||
         kind == OpKind::scale;
}

/// Multiplies the result of `node` by `factor` through its parameters.
void scale_result(OpNode& node, double factor) {
  std::visit(
      [factor](auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, ContractParams>) {
          p.alpha *= factor;
          p.beta *= factor;
        } else if constexpr (std::is_same_v<P, ScaleParams>) {
          p.alpha *= factor;
        } else if constexpr (std::is_same_v<P, AddParams> || std::is_same_v<P, SubtractParams>) {
          p.alpha *= factor;
          p.alpha_b *= factor;
        } else if constexpr (std::is_same_v<P, DivideParams>) {
          p.alpha *= factor;
        }
      },
      node.params);
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
            !operand.sparse_maps.empty() || operand.get<ScaleParams>().alpha_imag != 0.0) {
          continue;
        }
        const double factor = operand.get<ScaleParams>().alpha;
        if (node.kind == OpKind::contract) {
          ContractParams& p = node.get<ContractParams>();
          (i == 2 ? p.beta : p.alpha) *= factor;  // operand 2: the addend
        } else if (node.kind == OpKind::divide) {
          if (i == 0) {
            node.get<DivideParams>().alpha *= factor;
          } else {
            if (factor == 0.0) continue;
            node.get<DivideParams>().alpha /= factor;
          }
        } else {
          ElementwiseParams& p = node.kind == OpKind::add ? static_cast<ElementwiseParams&>(node.get<AddParams>())
                                                          : node.get<SubtractParams>();
          (i == 0 ? p.alpha : p.alpha_b) *= factor;
        }
        graph.set_operand(id, i, graph.operands(operands[i]).at(0));
        if (!graph.has_consumers(operands[i])) graph.detach(operands[i]);
      }
    }
  }
  for (NodeId id : graph.topological_order()) {
    const OpNode& scale = graph.node(id);
    if (scale.kind != OpKind::scale || graph.operands(id).empty()) continue;  // detached: dead
    const NodeId operand = graph.operands(id).at(0);
    OpNode& target = graph.node(operand);
    // Only a value nobody else reads may change its factor; the labels must match too.
    if (!is_foldable(target.kind) || !graph.only_consumer(operand) || target.labels != scale.labels ||
        target.sparse_maps != scale.sparse_maps || scale.get<ScaleParams>().alpha_imag != 0.0) {
      continue;
    }
    scale_result(target, scale.get<ScaleParams>().alpha);
    graph.replace_uses(id, operand);
    graph.detach(id);  // the scale reads nothing now, so a scale above it may fold too
  }
}

namespace {

// Whether `node` only conjugates its one operand, element by element, with nothing reduced.
bool only_conjugates(const OpGraph& graph, NodeId id) {
  const OpNode& node = graph.node(id);
  if (node.kind != OpKind::fused || !node.sparse_maps.empty() || graph.operands(id).size() != 1) return false;
  const FusedParams& p = node.get<FusedParams>();
  return p.program.size() == 2 && p.program[0].op == FusedOp::load && p.program[0].a == 0 &&
         p.program[1].op == FusedOp::conj && p.program[1].a == 0 &&
         graph.node(graph.operands(id)[0]).labels == node.labels &&
         graph.node(graph.operands(id)[0]).sparse_maps.empty();
}

}  // namespace

void fold_conjugations(OpGraph& graph) {
  for (NodeId id : graph.topological_order()) {
    OpNode& node = graph.node(id);
    if (node.kind != OpKind::contract || !is_complex_dtype(node.dtype) || !node.sparse_maps.empty()) continue;
    const std::vector<NodeId> operands = graph.operands(id);
    for (std::size_t i = 0; i < 2 && i < operands.size(); ++i) {
      if (!only_conjugates(graph, operands[i])) continue;
      ContractParams& p = node.get<ContractParams>();
      bool& conj = i == 0 ? p.conj_a : p.conj_b;
      conj = !conj;
      graph.set_operand(id, i, graph.operands(operands[i]).at(0));
      if (!graph.has_consumers(operands[i])) graph.detach(operands[i]);
    }
  }
}

}  // namespace tenex::passes
