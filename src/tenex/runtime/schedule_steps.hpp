// The executor's steps before it runs a node (runtime/schedule.cpp), shared by execute.cpp:
// the memory plan, the nodes run on per-key blocks, and how a node is named in messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

/// "the contract node 4 (i=3, j=5)": a node as error messages name it.
std::string node_text(const OpGraph& graph, NodeId id);

/// runs_structured (executor.hpp) with the operands the schedule already lists.
bool runs_structured(const OpGraph& graph, NodeId id, const std::vector<NodeId>& operands);

/// What the executor will do with memory, decided before anything runs: which nodes take
/// over an operand's buffer, and the peak of the intermediates held.
struct MemoryPlan {
  std::vector<char> takes_over;  // output: hands its operand's buffer to the target;
                                 // contract with an addend: writes into the addend's buffer
  std::size_t peak = 0;
};

/// Walks `order` as execute() will, without running anything. Throws BackendError when an
/// intermediate would take the bytes held past `limit` (0: none), so that a set over the
/// limit fails before it allocates or writes anything.
MemoryPlan plan_memory(const OpGraph& graph, const std::vector<NodeId>& order,
                       const std::vector<std::vector<NodeId>>& operands, std::vector<std::size_t> uses,
                       std::size_t element_size, std::size_t limit, std::string_view backend);

}  // namespace tenex::detail
