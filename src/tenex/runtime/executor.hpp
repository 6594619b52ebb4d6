// Executor: walks an optimized graph in topological order on one backend, asks the
// backend for the buffers of intermediates and results, frees each after its last use,
// writes the outputs into their targets, and counts what it did. Its steps: schedule.cpp
// (the order, the buffers handed over, the memory plan), execute.cpp (the run: inputs read,
// nodes computed on the backend or on the host, outputs written, views filled).
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

#include "tenex/backend/backend.hpp"
#include "tenex/backend/backend_interface.hpp"
#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

/// Throws BackendError naming the first node neither `backend` nor `host` (the CPU backend
/// that runs what a device backend declines; null: none) supports. Returns, one line per
/// node that `host` runs, why `backend` declined it ("" when none: explain() shows it).
template <class T>
std::string check_supported(const OpGraph& graph, const Backend<T>& backend, const Backend<T>* host = nullptr);

/// Whether node `id` of `graph` is stored in another kind than dense, or reads a value that
/// is (OpNode::layout): the backend must evaluate it with run_structured.
bool runs_structured(const OpGraph& graph, NodeId id);

/// Runs `graph`; fulfils every output's target storage. Throws on the first failure
/// (tenex::Error; out of memory names the node, its labels, extents and bytes). A node
/// `backend` does not support runs on `host` (see check_supported), its operands copied to
/// the host and its result back.
/// `memory_limit` caps the intermediates held (0: none; the pipeline reads it once per set).
template <class T>
RunStats execute(const OpGraph& graph, std::size_t memory_limit, Backend<T>& backend, Backend<T>* host = nullptr);

/// What execute() works out about a graph before running it, kept by a graph that runs
/// many times (a cached plan, runtime/plan_cache.hpp) so that a run walks no Boost graph.
struct Schedule {
  static constexpr std::size_t unbound = std::numeric_limits<std::size_t>::max();
  std::vector<NodeId> order;                  // every node after its operands
  std::vector<std::vector<NodeId>> operands;  // by node, in operand order
  std::vector<std::size_t> uses;              // by node: how many operand slots read it
  /// By node: where an input or output finds its storage in the `storages` given to
  /// execute (a shared graph holds none), or `unbound` for the node's own storage.
  std::vector<std::size_t> slot;
  /// By node, when not empty: whether it takes over an operand's buffer (an output handed
  /// its operand's buffer, a contraction writing into its addend's), worked out once for a
  /// graph that runs many times; execute() works it out itself when empty or under a
  /// memory limit.
  std::vector<char> takes_over;
};
/// Under a memory limit (memory_limit(), or the one given) the order holds fewer
/// intermediates at once.
Schedule schedule_of(const OpGraph& graph);
Schedule schedule_of(const OpGraph& graph, std::size_t memory_limit);
/// Fills schedule.takes_over for `graph`.
void plan_buffer_hand_overs(const OpGraph& graph, Schedule& schedule);

/// Runs `graph` in `schedule`'s order, the inputs and outputs bound to `storages` by
/// schedule.slot. `graph` is only read, so threads may share it.
template <class T>
RunStats execute(const OpGraph& graph, const Schedule& schedule, const std::vector<std::shared_ptr<void>>& storages,
                 std::size_t memory_limit, Backend<T>& backend, Backend<T>* host = nullptr);

}  // namespace tenex::detail
