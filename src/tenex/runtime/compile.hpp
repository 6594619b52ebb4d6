// compile: a set and the backend chosen to run it -> the Plan that runs. One function, shared
// by the pipeline (which then executes the plan) and explain(e) (which prints it), so that
// what explain shows is what runs.
//
// The backend is chosen first; the passes ask it what it supports (whether it evaluates
// sparse maps on per-key blocks), and the memory limit, the sparse decisions and the nodes a
// device backend hands to the CPU are decided here, once. A set shaped like one compiled
// before (a loop body) gets that set's plan from the plan cache (plan_cache.hpp) instead.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/backend/backend_interface.hpp"
#include "tenex/backend/registry.hpp"
#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/graph/op_graph.hpp"
#include "tenex/runtime/plan_cache.hpp"
#include "tenex/settings.hpp"

namespace tenex::detail {

/// What compiling reads besides the set: the environment, read once per set (tests change
/// it between sets), and the memory limit.
struct CompileSettings {
  SetSettings env;
  std::size_t memory_limit = 0;  // set_memory_limit's, else TENEX_MEMORY_LIMIT's; 0: none
};
CompileSettings compile_settings();
/// The backend `set` asks for: TENEX_BACKEND's (read into `settings`) when the set recorded
/// no set_default_backend choice.
void resolve_backend(SetRecord& set, const CompileSettings& settings);

/// The backends a set runs on: the chosen one and, for a device backend, the CPU backend that
/// runs what it declines (tenex::map's callables).
template <class T>
struct SetBackends {
  const BackendEntry* entry = nullptr;
  Backend<T>* backend = nullptr;
  Backend<T>* host = nullptr;                   // null: none
  std::unique_ptr<Backend<T>> made, made_host;  // own them once the thread's are gone (at exit)
};
/// This thread's backends for `entry` (see thread_backend).
template <class T>
void set_backends(const BackendEntry& entry, SetBackends<T>& out);

/// A compiled set: the optimized graph and what was decided about running it.
struct Plan {
  const BackendEntry* backend = nullptr;
  std::optional<OpGraph> graph;              // made for this set: holds its tensors
  std::shared_ptr<const CachedPlan> cached;  // or the plan cache's, run bound to `storages`
  std::vector<std::shared_ptr<void>> storages;
  bool reused = false;                    // `cached` was found, not made
  double written_contraction_flops = -1;  // see keep_last_plan
  std::string sparse_note;                // why the backend runs the sparse maps dense and masked
  std::string placement_notes;            // the nodes the host runs for a device backend, and why
  std::string unsupported;                // the error when the backends cannot run a node ("" when they can)
  // What the backend, and the host backend for the nodes it declined, ran (for explain()).
  std::shared_ptr<const RunNotes> run_notes, host_run_notes;

  const OpGraph& optimized() const { return cached ? cached->graph : *graph; }
};

/// Builds the graph of `set`, runs the passes (TENEX_PASSES, the memory limit, what the
/// backend supports) and asks the backends about every node, or finds the plan cache's plan of
/// a set of the same structure (when `settings` allow it; a plan made is then cached). Throws
/// what building or optimizing throws; a node no backend supports is `unsupported`, not
/// thrown, so that explain() still describes the plan.
template <class T>
Plan compile(const SetRecord& set, const SetBackends<T>& backends, const CompileSettings& settings);

}  // namespace tenex::detail
