// Executor: walks an optimized graph in topological order on one backend, asks the
// backend for the buffers of intermediates and results, frees each after its last use,
// writes the outputs into their targets, and counts what it did.
#pragma once

#include "tenex/backend/backend.hpp"
#include "tenex/backend/backend_interface.hpp"
#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

/// Throws BackendError naming the first node `backend` does not support.
template <class T>
void check_supported(const OpGraph& graph, const Backend<T>& backend);

/// Runs `graph`; fulfils every output's target storage. Throws on the first failure
/// (tenex::Error; out of memory names the node, its labels, extents and bytes).
template <class T>
RunStats execute(const OpGraph& graph, Backend<T>& backend);

}  // namespace tenex::detail
