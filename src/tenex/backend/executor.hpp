// Executor: walks an optimized graph in topological order on one backend,
// allocates intermediates, frees each after its last use, applies sparse maps,
// writes the outputs into their targets, and counts what it did.
#pragma once

#include "tenex/backend/backend.hpp"
#include "tenex/backend/backend_interface.hpp"
#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

template <class T>
RunStats execute(const OpGraph& graph, Backend<T>& backend);

}  // namespace tenex::detail
