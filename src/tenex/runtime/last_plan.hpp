// What the pipeline keeps of the last set it ran on this thread, for tenex::explain().
#pragma once

#include <memory>
#include <string>

#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

/// Keeps `graph` (the optimized graph of the set just run) as this thread's last plan,
/// without its tensors: every storage becomes a pointer that owns nothing, kept only to
/// tell tensors apart. `written_contraction_flops`: the contraction flops of the graph as
/// built, before the passes (what evaluating the products in written order costs; < 0 when
/// it had fewer than two contractions, so the passes could not reorder them). No
/// strings are built here; explain() builds them when it is called. `completed`: the set
/// ran to its end (RunStats are its own).
void keep_last_plan(OpGraph& graph, double written_contraction_flops, bool completed) noexcept;
/// The same for a graph that holds no tensors already (a cached plan's), shared, not copied.
void keep_last_plan(std::shared_ptr<const OpGraph> graph, double written_contraction_flops, bool completed) noexcept;

/// Why the last set on this thread ran its sparse maps dense and masked (the backend's
/// answer to supports_sparse), or empty when it did not have to; explain() shows it.
void set_last_sparse_note(std::string note) noexcept;

}  // namespace tenex::detail
