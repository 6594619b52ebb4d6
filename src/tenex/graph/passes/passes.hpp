// The graph passes run before a set is evaluated; optimize() lists them in order.
#pragma once

#include "tenex/graph/op_graph.hpp"

namespace tenex::passes {

/// Merges nodes that compute the same thing from the same operands.
void eliminate_common_subexpressions(OpGraph& graph);
/// Folds scale nodes into the alpha of the contraction or element-wise node they scale.
void fold_scales(OpGraph& graph);
/// Flattens chains of contractions (through scales) that nothing else reads into one
/// n-ary product and re-evaluates it in the order of fewest flops (dynamic programming up
/// to 10 factors, greedy beyond). Sharing is read from the graph: a contraction with two
/// consumers is a named intermediate and is computed once.
void order_contractions(OpGraph& graph);
/// Puts a mask node after every node that sparse maps restrict (sparse masking is a node
/// kind, run by the backend like any other).
void insert_masks(OpGraph& graph);
/// Runs every pass, then drops what no output needs.
void optimize(OpGraph& graph);

}  // namespace tenex::passes
