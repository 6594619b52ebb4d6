// The result-shape rule of each op kind, one overload per parameter struct of the op table.
#pragma once

#include <string>
#include <vector>

#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

/// Checks `node` (labels, extents, elements) against its kind's rule for `operands`. With
/// `infer`, first fills in what the rule decides: the labels when empty (a contraction keeps
/// the labels on one operand only, element-wise nodes the union, unary nodes the operand's)
/// and the extents when empty (and the elements of a packed decomposition). Returns what is
/// wrong, or "" when the node obeys the rule. Without `infer`, `node` is left as it is.
std::string apply_shape_rule(OpNode& node, const std::vector<const OpNode*>& operands, bool infer);

}  // namespace tenex::detail
