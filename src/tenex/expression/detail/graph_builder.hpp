// Turns expression nodes and recorded assignments into an OpGraph.
#pragma once

#include <vector>

#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

/// Adds `node` (all its labels kept) and what it needs to `graph`; memoized in the graph.
NodeId add_expression_to_graph(OpGraph& graph, const NodePtr& node, const std::vector<RegisteredSparseMap>& maps);

/// The graph of one batch of assignments: one output node per assignment.
OpGraph build_set_graph(DType dtype, const std::vector<Assignment>& batch,
                        const std::vector<RegisteredSparseMap>& maps);

}  // namespace tenex::detail
