#include "tenex/graph/shape_rule.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "tenex/labels.hpp"

namespace tenex::detail {

namespace {

using Operands = std::vector<const OpNode*>;

/// Extent of each label over the operands; a label with two extents is an error.
std::string extents_by_label(const Operands& operands, std::map<std::string, std::size_t>& out) {
  for (const OpNode* op : operands) {
    for (std::size_t i = 0; i < op->labels.size() && i < op->extents.size(); ++i) {
      auto [it, inserted] = out.emplace(op->labels[i], op->extents[i]);
      if (!inserted && it->second != op->extents[i]) {
        return "label \"" + op->labels[i] + "\" has extents " + std::to_string(it->second) + " and " +
               std::to_string(op->extents[i]) + " in the operands";
      }
    }
  }
  return {};
}

/// The result's labels must come from the operands; extents follow from them.
std::string labels_from_operands(OpNode& node, const Operands& operands, bool infer) {
  std::map<std::string, std::size_t> extents;
  if (std::string error = extents_by_label(operands, extents); !error.empty()) return error;
  std::vector<std::size_t> expected;
  for (const std::string& l : node.labels) {
    auto it = extents.find(l);
    if (it == extents.end()) return "label \"" + l + "\" is on no operand";
    expected.push_back(it->second);
  }
  if (infer && node.extents.empty()) node.extents = expected;
  if (node.extents != expected)
    return "extents " + format_extents(node.extents) + " should be " + format_extents(expected);
  return {};
}

std::string same_as_operand(OpNode& node, const Operands& operands, bool infer) {
  if (operands.size() != 1) return {};
  if (infer && node.labels.empty()) node.labels = operands[0]->labels;
  if (node.labels != operands[0]->labels) {
    return "labels (" + join_labels(node.labels) + ") should be the operand's (" + join_labels(operands[0]->labels) +
           ")";
  }
  if (infer && node.extents.empty()) node.extents = operands[0]->extents;
  if (node.extents != operands[0]->extents) {
    return "extents " + format_extents(node.extents) + " should be the operand's " +
           format_extents(operands[0]->extents);
  }
  return {};
}

std::string matrix_operand(const Operands& operands, bool square) {
  for (const OpNode* op : operands) {
    if (op->extents.size() != 2) return "the operand " + describe(op->labels, op->extents) + " is not a matrix";
    if (square && op->extents[0] != op->extents[1]) {
      return "the operand " + describe(op->labels, op->extents) + " is not square";
    }
  }
  return {};
}

// One rule per parameter struct of the op table: a new kind without one does not compile.
std::string rule(const InputParams& p, OpNode& node, const Operands& operands, bool) {
  if (node.labels.size() != node.extents.size()) return "has a different number of labels and extents";
  if (operands.size() > 1) return "an input has at most one operand (the output writing it)";
  for (std::size_t mode : p.truncated_modes) {
    if (mode >= node.labels.size())
      return "names truncated mode " + std::to_string(mode) + " of a rank-" + std::to_string(node.labels.size()) +
             " tensor";
  }
  return {};
}

std::string rule(const OutputParams& p, OpNode& node, const Operands& operands, bool infer) {
  if (operands.size() != 1) return {};
  const OpNode& op = *operands[0];
  std::vector<std::string> renamed = p.operand_labels.empty() ? op.labels : p.operand_labels;
  if (renamed.size() != op.labels.size())
    return "renames " + std::to_string(op.labels.size()) + " operand labels to " + std::to_string(renamed.size());
  if (infer && node.labels.empty()) node.labels = renamed;
  std::vector<std::size_t> expected;
  for (const std::string& l : node.labels) {
    std::size_t at = find_label(renamed, l);
    if (at == renamed.size()) return "label \"" + l + "\" is not one of the operand's (" + join_labels(renamed) + ")";
    expected.push_back(op.extents[at]);
  }
  if (node.labels.size() != renamed.size())
    return "writes " + std::to_string(node.labels.size()) + " of " + std::to_string(renamed.size()) + " operand modes";
  if (infer && node.extents.empty()) node.extents = expected;
  if (node.extents != expected)
    return "extents " + format_extents(node.extents) + " should be " + format_extents(expected);
  return {};
}

std::string rule(const ReduceParams&, OpNode& node, const Operands& operands, bool infer) {
  if (operands.size() != 1) return {};
  if (infer && node.labels.empty()) node.labels = operands[0]->labels;
  return labels_from_operands(node, operands, infer);
}

std::string rule(const ContractParams&, OpNode& node, const Operands& operands, bool infer) {
  if (operands.size() < 2 || operands.size() > 3) {
    return "takes two or three operands (a and b, or a, b and the addend), got " + std::to_string(operands.size());
  }
  const Operands product{operands[0], operands[1]};
  if (infer && node.labels.empty()) {
    // Plain Einstein notation: keep the labels on one operand only.
    for (std::size_t side = 0; side < 2; ++side) {
      for (const std::string& l : product[side]->labels) {
        if (!contains_label(product[1 - side]->labels, l) && !contains_label(node.labels, l)) node.labels.push_back(l);
      }
    }
  }
  if (std::string error = labels_from_operands(node, product, infer); !error.empty()) return error;
  if (operands.size() == 3) {
    // The addend has the result's labels and extents, in any order.
    const OpNode& d = *operands[2];
    std::vector<std::string> sorted_d = d.labels, sorted_c = node.labels;
    std::sort(sorted_d.begin(), sorted_d.end());
    std::sort(sorted_c.begin(), sorted_c.end());
    if (sorted_d != sorted_c) {
      return "the addend's labels (" + join_labels(d.labels) + ") are not the result's (" + join_labels(node.labels) +
             ")";
    }
    std::map<std::string, std::size_t> extents;
    if (std::string error = extents_by_label(operands, extents); !error.empty()) return error;
  }
  return {};
}

std::string rule_elementwise(OpNode& node, const Operands& operands, bool infer) {
  if (infer && node.labels.empty()) {
    for (const OpNode* op : operands) {
      for (const std::string& l : op->labels) {
        if (!contains_label(node.labels, l)) node.labels.push_back(l);
      }
    }
  }
  return labels_from_operands(node, operands, infer);
}
std::string rule(const AddParams&, OpNode& node, const Operands& operands, bool infer) {
  return rule_elementwise(node, operands, infer);
}
std::string rule(const SubtractParams&, OpNode& node, const Operands& operands, bool infer) {
  return rule_elementwise(node, operands, infer);
}
std::string rule(const DivideParams&, OpNode& node, const Operands& operands, bool infer) {
  return rule_elementwise(node, operands, infer);
}

std::string rule(const ScaleParams&, OpNode& node, const Operands& operands, bool infer) {
  return same_as_operand(node, operands, infer);
}
std::string rule(const MaskParams& p, OpNode& node, const Operands& operands, bool infer) {
  for (const SparseMapUse& use : p.maps) {
    for (const auto* group : {&use.source, &use.target}) {
      for (const std::string& l : *group) {
        if (operands.size() == 1 && !contains_label(operands[0]->labels, l)) {
          return "masks label \"" + l + "\", which the operand lacks";
        }
      }
    }
  }
  return same_as_operand(node, operands, infer);
}

std::string rule(const CholeskyParams&, OpNode& node, const Operands& operands, bool infer) {
  if (std::string error = matrix_operand(operands, true); !error.empty()) return error;
  return same_as_operand(node, operands, infer);
}
std::string rule(const PowParams&, OpNode& node, const Operands& operands, bool infer) {
  if (std::string error = matrix_operand(operands, true); !error.empty()) return error;
  return same_as_operand(node, operands, infer);
}

/// A decomposition's operand: `rows` modes of rows and at least one of columns (a matrix:
/// rows = 1), their products equal when `square`.
std::string decomposition_operand(const Operands& operands, std::size_t rows, const OpParams& params, bool square) {
  for (const OpNode* op : operands) {
    if (rows == 1 && op->extents.size() < 2)
      return "the operand " + describe(op->labels, op->extents) + " is not a matrix";
    if (rows == 0 || op->extents.size() <= rows) {
      return "the operand " + describe(op->labels, op->extents) + " has no column modes after its " +
             std::to_string(rows) + " row modes";
    }
    const MatrixExtents matrix = decomposition_matrix(params, op->extents);
    if (square && matrix.m != matrix.n) return "the operand " + describe(op->labels, op->extents) + " is not square";
  }
  return {};
}

std::string rule_packed(OpNode& node, const Operands& operands, bool infer, std::size_t rows, bool square) {
  if (std::string error = decomposition_operand(operands, rows, node.params, square); !error.empty()) return error;
  if (operands.size() == 2 && operands[0]->extents != operands[1]->extents) return "operands of different shapes";
  if (operands.empty()) return {};
  if (std::string error = same_as_operand(node, {operands[0]}, infer); !error.empty()) return error;
  const MatrixExtents matrix = decomposition_matrix(node.params, node.extents);
  if (infer) node.elements = packed_size(node.params, matrix.m, matrix.n);
  return {};
}
std::string rule(const EigenSolveParams& p, OpNode& node, const Operands& operands, bool infer) {
  if (operands.empty() || operands.size() > 2) {
    return "takes one or two operands (a, or a and b), got " + std::to_string(operands.size());
  }
  return rule_packed(node, operands, infer, p.rows, true);
}
std::string rule(const QrParams& p, OpNode& node, const Operands& operands, bool infer) {
  return rule_packed(node, operands, infer, p.rows, false);
}
std::string rule(const SvdParams& p, OpNode& node, const Operands& operands, bool infer) {
  return rule_packed(node, operands, infer, p.rows, false);
}

/// The extents of factor `which` of the packed decomposition `packed`: its row modes then
/// the new mode (U, Q, eigenvectors), the new mode (S, eigenvalues), or the new mode then its
/// column modes (R, Vt).
std::vector<std::size_t> factor_extents(const OpNode& packed, std::size_t which) {
  const MatrixExtents matrix = decomposition_matrix(packed.params, packed.extents);
  const std::size_t k = packed_rank(packed.params, matrix.m, matrix.n);
  const std::size_t rows = std::min(decomposition_rows(packed.params), packed.extents.size());
  const auto first = packed.extents.begin(), split = first + static_cast<std::ptrdiff_t>(rows);
  const bool last = which + 1 == packed_factor_count(packed.kind);
  std::vector<std::size_t> extents;
  if (which == 0) {
    extents.assign(first, split);
    extents.push_back(k);
  } else if (last && packed.kind != OpKind::eigen_solve) {
    extents.push_back(k);
    extents.insert(extents.end(), split, packed.extents.end());
  } else {
    extents.push_back(k);
  }
  return extents;
}

std::string rule(const FactorParams& p, OpNode& node, const Operands& operands, bool infer) {
  if (operands.size() != 1) return {};
  const OpNode& packed = *operands[0];
  if (packed_factor_count(packed.kind) == 0) {
    return "the operand is a node of kind " + std::string(op_kind_name(packed.kind)) + ", not a packed decomposition";
  }
  if (p.which >= packed_factor_count(packed.kind)) {
    return "factor " + std::to_string(p.which) + " of a " + std::string(op_kind_name(packed.kind)) + " does not exist";
  }
  const std::vector<std::size_t> expected = factor_extents(packed, p.which);
  if (node.labels.size() != expected.size()) {
    return "factor " + std::to_string(p.which) + " has " + std::to_string(expected.size()) + " modes, labels (" +
           join_labels(node.labels) + ") name " + std::to_string(node.labels.size());
  }
  if (infer && node.extents.empty()) node.extents = expected;
  if (node.extents != expected)
    return "extents " + format_extents(node.extents) + " should be " + format_extents(expected);
  return {};
}

std::string rule(const SliceParams& p, OpNode& node, const Operands& operands, bool infer) {
  if (operands.size() != 1) return {};
  const OpNode& op = *operands[0];
  if (p.lo.size() != op.extents.size() || p.hi.size() != op.extents.size()) {
    return "needs " + std::to_string(op.extents.size()) + " bounds in lo and hi";
  }
  std::vector<std::size_t> expected;
  for (std::size_t d = 0; d < op.extents.size(); ++d) {
    if (p.lo[d] > p.hi[d] || p.hi[d] > op.extents[d]) {
      return "bounds [" + std::to_string(p.lo[d]) + ", " + std::to_string(p.hi[d]) + ") do not fit extent " +
             std::to_string(op.extents[d]);
    }
    expected.push_back(p.hi[d] - p.lo[d]);
  }
  if (infer && node.labels.empty()) node.labels = op.labels;
  if (node.labels != op.labels) return "labels (" + join_labels(node.labels) + ") should be the operand's";
  if (infer && node.extents.empty()) node.extents = expected;
  if (node.extents != expected)
    return "extents " + format_extents(node.extents) + " should be " + format_extents(expected);
  return {};
}

std::string rule(const ChipParams& p, OpNode& node, const Operands& operands, bool infer) {
  if (operands.size() != 1) return {};
  const OpNode& op = *operands[0];
  if (p.mode >= op.extents.size()) return "mode " + std::to_string(p.mode) + " does not exist";
  if (p.index >= op.extents[p.mode]) {
    return "index " + std::to_string(p.index) + " is out of range for extent " + std::to_string(op.extents[p.mode]);
  }
  std::vector<std::string> labels = op.labels;
  std::vector<std::size_t> extents = op.extents;
  labels.erase(labels.begin() + static_cast<std::ptrdiff_t>(p.mode));
  extents.erase(extents.begin() + static_cast<std::ptrdiff_t>(p.mode));
  if (infer && node.labels.empty()) node.labels = labels;
  if (node.labels != labels) return "labels (" + join_labels(node.labels) + ") should be (" + join_labels(labels) + ")";
  if (infer && node.extents.empty()) node.extents = extents;
  if (node.extents != extents)
    return "extents " + format_extents(node.extents) + " should be " + format_extents(extents);
  return {};
}

std::string rule(const FusedParams& p, OpNode& node, const Operands& operands, bool infer) {
  if (p.program.empty()) return "has an empty program";
  const std::size_t n = p.program.size();
  for (std::size_t i = 0; i < n; ++i) {
    const FusedInstr& in = p.program[i];
    const std::string at = "instruction " + std::to_string(i) + " (" + std::string(fused_op_name(in.op)) + ")";
    if (in.op == FusedOp::load && in.a >= operands.size() && !operands.empty()) {
      return at + " loads operand " + std::to_string(in.a);
    }
    const int values = fused_op_values(in.op);
    if (values == 2 && in.b >= i)
      return at + " reads value " + std::to_string(in.b) + ", which is not computed before it";
    if (values >= 1 && in.a >= i)
      return at + " reads value " + std::to_string(in.a) + ", which is not computed before it";
    if (in.op == FusedOp::call && (in.b >= p.functions.size() || !p.functions[in.b])) {
      return at + " calls function " + std::to_string(in.b) + ", which the node does not have";
    }
  }
  for (const OpNode* op : operands) {
    for (std::size_t i = 0; i < op->labels.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (op->labels[i] == op->labels[j]) {
          return "operand " + describe(op->labels, op->extents) + " repeats label \"" + op->labels[i] + "\"";
        }
      }
    }
  }
  if (infer && node.labels.empty()) {
    for (const OpNode* op : operands) {
      for (const std::string& l : op->labels) {
        if (!contains_label(node.labels, l)) node.labels.push_back(l);
      }
    }
  }
  return labels_from_operands(node, operands, infer);
}

// Matrix functions.
std::string rule(const InverseParams&, OpNode& node, const Operands& operands, bool infer) {
  if (std::string error = matrix_operand(operands, true); !error.empty()) return error;
  return same_as_operand(node, operands, infer);
}
std::string rule(const SpdPowParams&, OpNode& node, const Operands& operands, bool infer) {
  if (std::string error = matrix_operand(operands, true); !error.empty()) return error;
  return same_as_operand(node, operands, infer);
}
/// x keeps b's labels, except that the solved mode, when it carries one of a's labels, takes
/// a's other one (unless b has that label too): solve(a(i,j), b(i,k)) is (j,k).
std::string rule(const SolveParams& p, OpNode& node, const Operands& operands, bool infer) {
  if (operands.size() != 2) return {};
  if (std::string error = matrix_operand({operands[0]}, true); !error.empty()) return error;
  const OpNode& a = *operands[0];
  const OpNode& b = *operands[1];
  if (p.mode >= b.extents.size()) {
    return "solved mode " + std::to_string(p.mode) + " does not exist in b " + describe(b.labels, b.extents);
  }
  if (b.extents[p.mode] != a.extents[0]) {
    return "b's solved mode has extent " + std::to_string(b.extents[p.mode]) + " but a is " +
           describe(a.labels, a.extents);
  }
  std::vector<std::string> labels = b.labels;
  if (a.labels.size() == 2 && p.mode < labels.size()) {
    const std::string& solved = labels[p.mode];
    const std::string other = solved == a.labels[0] ? a.labels[1] : solved == a.labels[1] ? a.labels[0] : solved;
    if (!contains_label(labels, other)) labels[p.mode] = other;
  }
  if (infer && node.labels.empty()) node.labels = labels;
  if (node.labels != labels) return "labels (" + join_labels(node.labels) + ") should be (" + join_labels(labels) + ")";
  if (infer && node.extents.empty()) node.extents = b.extents;
  if (node.extents != b.extents)
    return "extents " + format_extents(node.extents) + " should be " + format_extents(b.extents);
  return {};
}

}  // namespace

std::string apply_shape_rule(OpNode& node, const std::vector<const OpNode*>& operands, bool infer) {
  std::string error = std::visit(
      [&](const auto& p) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) {
          return "has no parameters";
        } else {
          return rule(p, node, operands, infer);
        }
      },
      node.params);
  if (!error.empty() || node.kind == OpKind::input) return error;
  // Only an input may repeat a label (a diagonal read); every result has each label once.
  for (std::size_t i = 0; i < node.labels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (node.labels[i] == node.labels[j]) return "repeats label \"" + node.labels[i] + "\"";
    }
  }
  return {};
}

}  // namespace tenex::detail
