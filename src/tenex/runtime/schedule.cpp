// The executor's plan before anything runs (executor.hpp): the order of a set's nodes, the
// buffers handed over, and the memory its intermediates take under a limit.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/backend/backend.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/error.hpp"
#include "tenex/labels.hpp"
#include "tenex/runtime/executor.hpp"
#include "tenex/runtime/schedule_steps.hpp"

namespace tenex::detail {

std::string node_text(const OpGraph& graph, NodeId id) {
  const OpNode& node = graph.node(id);
  return "the " + std::string(op_kind_name(node.kind)) + " node " + std::to_string(id) + " " +
         describe(node.labels, node.extents);
}

bool runs_structured(const OpGraph& graph, NodeId id, const std::vector<NodeId>& operands) {
  const OpNode& node = graph.node(id);
  if (node.layout != StorageKind::dense) return true;
  if (node.kind == OpKind::input) return false;
  for (NodeId op : operands) {
    if (graph.node(op).layout != StorageKind::dense) return true;
  }
  return false;
}

bool runs_structured(const OpGraph& graph, NodeId id) {
  const OpNode& node = graph.node(id);
  if (node.layout != StorageKind::dense || node.kind == OpKind::input) return node.layout != StorageKind::dense;
  return runs_structured(graph, id, graph.operands(id));
}

namespace {

/// The bytes a buffer of `bytes` takes: backends hand out whole 64-byte lines.
std::size_t buffer_bytes(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

/// Every node after its operands, depth first from the results: each node's operands are
/// computed just before it, and a contraction's addend (a running sum) before its factors.
/// Under a memory limit this holds fewer intermediates at once than the graph's own order:
/// the batches of a sliced contraction (passes/slice_contractions.cpp) run one after another,
/// each batch's slices and partial product freed before the next is made.
std::vector<NodeId> depth_first_order(const OpGraph& graph) {
  const std::size_t n = graph.size();
  std::vector<char> state(n, 0);  // 0: not seen, 1: on the stack, 2: placed
  std::vector<NodeId> order;
  order.reserve(n);
  struct Frame {
    NodeId id;
    std::vector<NodeId> operands;  // in the order they are visited
    std::size_t next = 0;
  };
  // Each node's weight: the nodes below it, counted with repeats (a running sum over many
  // slices, whatever kind of node adds them, weighs more than one slice's operands).
  std::vector<double> weight(n, 1.0);
  for (NodeId id : graph.topological_order()) {
    for (NodeId op : graph.operands(id)) weight[id] += weight[op];
  }
  auto frame_of = [&](NodeId id) {
    Frame f{id, graph.operands(id)};
    if (graph.node(id).kind == OpKind::contract && f.operands.size() == 3) {
      std::rotate(f.operands.begin(), f.operands.begin() + 2, f.operands.end());  // addend first
    } else if (f.operands.size() > 1) {
      // An operand heavier than all the others together (an accumulation) is made first, so
      // the others are not held while it runs.
      const auto heaviest = std::max_element(f.operands.begin(), f.operands.end(),
                                             [&](NodeId a, NodeId b) { return weight[a] < weight[b]; });
      if (2 * weight[*heaviest] > weight[id]) std::rotate(f.operands.begin(), heaviest, heaviest + 1);
    }
    return f;
  };
  std::vector<Frame> stack;
  for (NodeId root = 0; root < n; ++root) {
    if (state[root] || graph.has_consumers(root)) continue;
    stack.push_back(frame_of(root));
    state[root] = 1;
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.operands.size()) {
        const NodeId op = top.operands[top.next++];
        if (state[op] == 0) {
          state[op] = 1;
          stack.push_back(frame_of(op));
        }
        continue;
      }
      state[top.id] = 2;
      order.push_back(top.id);
      stack.pop_back();
    }
  }
  if (order.size() != n) return graph.topological_order();  // (a cycle: let it report)
  return order;
}

}  // namespace


MemoryPlan plan_memory(const OpGraph& graph, const std::vector<NodeId>& order,
                       const std::vector<std::vector<NodeId>>& operands, std::vector<std::size_t> uses,
                       std::size_t element_size, std::size_t limit, std::string_view backend) {
  MemoryPlan plan;
  plan.takes_over.assign(graph.size(), 0);
  std::vector<std::size_t> owned(graph.size(), 0);  // bytes of the buffer each node holds
  std::size_t held = 0;
  for (NodeId id : order) {
    const OpNode& node = graph.node(id);
    const std::vector<NodeId>& ops = operands[id];
    if (node.kind == OpKind::output) {
      const NodeId op = ops[0];
      if (owned[op] && uses[op] == 1 && node.get<OutputParams>().operand_labels == node.labels &&
          !graph.node(op).blocks()) {
        plan.takes_over[id] = 1;
        held -= owned[op];
        owned[op] = 0;
      }
    } else if (node.kind != OpKind::input) {
      const std::size_t bytes = buffer_bytes(node.elements * element_size);
      const bool addend = node.kind == OpKind::contract && ops.size() == 3;
      if (addend && !node.blocks() && !graph.node(ops[2]).blocks() && owned[ops[2]] == bytes && uses[ops[2]] == 1 &&
          ops[2] != ops[0] && ops[2] != ops[1] && graph.node(ops[2]).labels == node.labels &&
          node.get<ContractParams>().beta != 0.0) {
        plan.takes_over[id] = 1;  // the addend's buffer becomes this node's: held stays
        owned[id] = bytes;
        owned[ops[2]] = 0;
      } else {
        if (limit != 0 && (bytes > limit || held > limit - bytes)) {
          throw BackendError("tenex: memory limit: " + node_text(graph, id) + " needs " + std::to_string(bytes) +
                             " bytes on the " + std::string(backend) + " backend while " + std::to_string(held) +
                             " bytes of intermediates are held; the limit is " + std::to_string(limit) +
                             " bytes (set_memory_limit or TENEX_MEMORY_LIMIT)");
        }
        owned[id] = bytes;
        held += bytes;
      }
      plan.peak = std::max(plan.peak, held);
    }
    for (NodeId op : ops) {
      if (--uses[op] == 0 && owned[op]) {
        held -= owned[op];
        owned[op] = 0;
      }
    }
  }
  return plan;
}

Schedule schedule_of(const OpGraph& graph) { return schedule_of(graph, memory_limit()); }

Schedule schedule_of(const OpGraph& graph, std::size_t limit) {
  Schedule schedule;
  schedule.order = limit != 0 ? depth_first_order(graph) : graph.topological_order();
  schedule.uses.assign(graph.size(), 0);
  schedule.operands.resize(graph.size());
  schedule.slot.assign(graph.size(), Schedule::unbound);
  for (NodeId id = 0; id < graph.size(); ++id) {
    schedule.operands[id] = graph.operands(id);
    for (NodeId op : schedule.operands[id]) ++schedule.uses[op];
  }
  return schedule;
}

void plan_buffer_hand_overs(const OpGraph& graph, Schedule& schedule) {
  // Which buffers are handed over does not depend on the element size (an addend has the
  // result's elements): 8 bytes stands for either type.
  schedule.takes_over =
      plan_memory(graph, schedule.order, schedule.operands, schedule.uses, sizeof(double), 0, "").takes_over;
}

}  // namespace tenex::detail
