// The entry point from the linked state into graph building, passes and backends.
#pragma once

#include <vector>

#include "tenex/expression/detail/linked_state.hpp"

namespace tenex::detail {

/// Builds the graph of `batch`, optimizes it, runs it on `backend`, and fulfils every
/// target storage of the batch, with the error when evaluation fails. Never throws.
void evaluate_set(DType dtype, BackendKind backend, std::vector<Assignment> batch,
                  const std::vector<RegisteredSparseMap>& sparse_maps) noexcept;

}  // namespace tenex::detail
