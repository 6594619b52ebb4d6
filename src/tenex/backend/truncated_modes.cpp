#include "tenex/backend/truncated_modes.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "tenex/error.hpp"
#include "tenex/labels.hpp"

namespace tenex::detail {

namespace {

constexpr NodeId none = TruncatedModes::none;
constexpr std::size_t absent = static_cast<std::size_t>(-1);

std::size_t position(const OpNode& node, const std::string& label) {
  const auto at = std::find(node.labels.begin(), node.labels.end(), label);
  return at == node.labels.end() ? absent : static_cast<std::size_t>(at - node.labels.begin());
}

[[noreturn]] void refuse(const OpNode& node, const std::string& label, const std::string& why) {
  throw ShapeError(
      "tenex: the " + std::string(op_kind_name(node.kind)) + " node " + describe(node.labels, node.extents) +
      " reads label \"" + label +
      "\", the mode of a truncated decomposition (svd or eigen_solve with a Truncation) in the same set, " + why +
      "; its extent is the kept rank, known only once the decomposition has run: assign the factors "
      "to tensors and use them in a later set (after wait() or a read)");
}

class Analysis {
 public:
  Analysis(const OpGraph& graph, const std::vector<std::vector<NodeId>>& operands, TruncatedModes& result)
      : graph_(graph), operands_(operands), source_(result.source), zero_(graph.size()) {}

  void visit(NodeId id) {
    const OpNode& node = graph_.node(id);
    const std::vector<NodeId>& ops = operands_[id];
    source_[id].assign(node.labels.size(), none);
    zero_[id].assign(node.labels.size(), 0);
    switch (node.kind) {
      case OpKind::input: {
        // A target of this set read again: its modes by position, padded back with zeros.
        if (ops.size() == 1 && source_[ops[0]].size() == node.labels.size()) {
          source_[id] = source_[ops[0]];
          for (std::size_t d = 0; d < node.labels.size(); ++d) zero_[id][d] = source_[id][d] != none;
          return;
        }
        // A tensor whose modes took the kept rank of a decomposition run in another set: read
        // padded back with zeros, the input itself the source of the kept rank (one per tensor,
        // however many inputs read it).
        const std::vector<std::size_t>& modes = node.get<InputParams>().truncated_modes;
        if (modes.empty()) return;
        const NodeId from = first_reader_.try_emplace(graph_.binding(id).get(), id).first->second;
        for (std::size_t d : modes) {
          source_[id][d] = from;
          zero_[id][d] = 1;
        }
        return;
      }
      case OpKind::output: {
        const std::vector<std::string>& renamed = node.get<OutputParams>().operand_labels;
        for (std::size_t d = 0; d < node.labels.size(); ++d) {
          const auto at = std::find(renamed.begin(), renamed.end(), node.labels[d]);
          if (at == renamed.end()) continue;
          const auto p = static_cast<std::size_t>(at - renamed.begin());
          if (p < source_[ops[0]].size()) {
            source_[id][d] = source_[ops[0]][p];
            zero_[id][d] = zero_[ops[0]][p];
          }
        }
        return;
      }
      case OpKind::factor: {
        const OpNode& packed = graph_.node(ops[0]);
        if (!truncation_of(packed.params)) return refuse_any(node, ops, "as a factor");
        // The mode of the values: the last of U and of the eigenvectors, the first of S,
        // the eigenvalues and Vt.
        const std::size_t mode = node.get<FactorParams>().which == 0 ? node.labels.size() - 1 : 0;
        if (mode < node.labels.size()) {
          source_[id][mode] = ops[0];
          zero_[id][mode] = 1;
        }
        return;
      }
      case OpKind::reduce:
      case OpKind::scale:
      case OpKind::mask: return combine(id, [&](const std::string& label) { return zero_of(ops[0], label); });
      case OpKind::contract:
        return combine(id, [&](const std::string& label) {
          const bool product = zero_of(ops[0], label) || zero_of(ops[1], label);
          return product && (ops.size() < 3 || position(node, label) == absent || zero_of(ops[2], label));
        });
      case OpKind::add:
      case OpKind::subtract:
        return combine(id, [&](const std::string& label) { return zero_of(ops[0], label) && zero_of(ops[1], label); });
      case OpKind::divide:
        return combine(id, [&](const std::string& label) {
          return zero_of(ops[0], label) && position(graph_.node(ops[1]), label) == absent;
        });
      case OpKind::fused: return combine(id, [&](const std::string& label) { return fused_zero(id, label); });
      case OpKind::cholesky:
      case OpKind::eigen_solve:
      case OpKind::qr:
      case OpKind::svd:
      case OpKind::slice:
      case OpKind::chip:
      case OpKind::pow:
      case OpKind::inverse:
      case OpKind::solve:
      case OpKind::spd_pow: return refuse_any(node, ops, "as the operand of " + std::string(op_kind_name(node.kind)));
    }
  }

 private:
  bool zero_of(NodeId op, const std::string& label) const {
    const std::size_t p = position(graph_.node(op), label);
    return p != absent && p < zero_[op].size() && zero_[op][p];
  }

  void refuse_any(const OpNode& node, const std::vector<NodeId>& ops, const std::string& why) const {
    for (NodeId op : ops) {
      for (std::size_t d = 0; d < source_[op].size(); ++d) {
        if (source_[op][d] != none) refuse(node, graph_.node(op).labels[d], why);
      }
    }
  }

  // Labels bind by name: a mode is truncated where an operand's mode of its label is (two
  // decompositions under one label are refused). `zero(label)`: whether the node's value is
  // zero beyond the kept rank along that label; a label summed away must be.
  template <class Zero>
  void combine(NodeId id, Zero zero) {
    const OpNode& node = graph_.node(id);
    const bool reduces_by_sum = node.kind != OpKind::fused || node.get<FusedParams>().reduce == ReduceOp::sum;
    for (NodeId op : operands_[id]) {
      const OpNode& operand = graph_.node(op);
      for (std::size_t p = 0; p < source_[op].size(); ++p) {
        const NodeId from = source_[op][p];
        if (from == none) continue;
        const std::string& label = operand.labels[p];
        const std::size_t d = position(node, label);
        if (d == absent) {
          if (!reduces_by_sum) refuse(node, label, "as a maximum or minimum over it");
          if (!zero(label)) refuse(node, label, "in a sum over it of values that are not zero beyond the kept rank");
          continue;
        }
        if (source_[id][d] != none && source_[id][d] != from) {
          refuse(node, label, "together with the mode of another truncated decomposition under the same label");
        }
        source_[id][d] = from;
      }
    }
    for (std::size_t d = 0; d < node.labels.size(); ++d) {
      if (source_[id][d] != none) zero_[id][d] = zero(node.labels[d]) ? 1 : 0;
    }
  }

  // Whether the fused program is zero where every operand holding `label` is (beyond the
  // kept rank), by the function table's keeps_zero rules.
  bool fused_zero(NodeId id, const std::string& label) const {
    const FusedParams& params = graph_.node(id).get<FusedParams>();
    const std::vector<NodeId>& ops = operands_[id];
    std::vector<char> value(params.program.size(), 0);
    for (std::size_t i = 0; i < params.program.size(); ++i) {
      const FusedInstr& in = params.program[i];
      if (in.op == FusedOp::load) {
        value[i] = in.a < ops.size() && zero_of(ops[in.a], label);
        continue;
      }
      const int reads = fused_op_values(in.op);
      const bool a = reads >= 1 && in.a < i && value[in.a];
      const bool b = reads >= 2 && in.b < i && value[in.b];
      value[i] = fused_op_keeps_zero(in, a, b);
    }
    return !value.empty() && value.back();
  }

  const OpGraph& graph_;
  const std::vector<std::vector<NodeId>>& operands_;
  std::vector<std::vector<NodeId>>& source_;
  std::vector<std::vector<char>> zero_;
  std::unordered_map<const void*, NodeId> first_reader_;  // by storage: its first truncated input
};

}  // namespace

bool is_truncation_source(const OpGraph& graph, NodeId id) {
  const OpNode& node = graph.node(id);
  if (truncation_of(node.params)) return true;
  return node.kind == OpKind::input && !node.get<InputParams>().truncated_modes.empty();
}

bool TruncatedModes::truncated(NodeId id) const {
  if (source.empty()) return false;
  return std::any_of(source[id].begin(), source[id].end(), [](NodeId s) { return s != none; });
}

TruncatedModes find_truncated_modes(const OpGraph& graph, const std::vector<NodeId>& order,
                                    const std::vector<std::vector<NodeId>>& operands) {
  TruncatedModes result;
  const bool any = std::any_of(order.begin(), order.end(), [&](NodeId id) { return is_truncation_source(graph, id); });
  if (!any) return result;
  result.source.resize(graph.size());
  Analysis analysis(graph, operands, result);
  for (NodeId id : order) analysis.visit(id);
  return result;
}

}  // namespace tenex::detail
