// The graph passes run before a set is evaluated; optimize() lists them in order.
#pragma once

#include "tenex/graph/op_graph.hpp"

namespace tenex::passes {

/// Merges nodes that compute the same thing from the same operands.
void eliminate_common_subexpressions(OpGraph& graph);
/// Folds scale nodes into the alpha of the contraction or element-wise node they scale.
void fold_scales(OpGraph& graph);
/// Runs every pass, then drops what no output needs.
void optimize(OpGraph& graph);

}  // namespace tenex::passes
