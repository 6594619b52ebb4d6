#include "tenex/backend/executor.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/backend/run_stats.hpp"
#include "tenex/backend/truncated_modes.hpp"
#include "tenex/callable_exception.hpp"
#include "tenex/error.hpp"
#include "tenex/labels.hpp"
#include "tenex/last_truncation.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail {

namespace {

std::string node_text(const OpGraph& graph, NodeId id) {
  const OpNode& node = graph.node(id);
  return "the " + std::string(op_kind_name(node.kind)) + " node " + std::to_string(id) + " " +
         describe(node.labels, node.extents);
}

}  // namespace

namespace {

// With the operands the schedule already lists.
bool runs_sparse(const OpGraph& graph, NodeId id, const std::vector<NodeId>& operands) {
  const OpNode& node = graph.node(id);
  if (node.compact) return true;
  if (node.kind == OpKind::input) return false;
  for (NodeId op : operands) {
    if (graph.node(op).compact) return true;
  }
  return false;
}

// ---- Truncated modes (truncated_modes.hpp): a target is shrunk to the kept rank when written,
// and padded back with zeros where the same set reads it again. Row-major, on the host.

// Calls run(from, to, count) for each contiguous run of the last mode of `small` (extents
// <= `big`'s): `from` counts elements of `small`, `to` of `big`, in row-major order.
template <class Run>
void for_each_run(const std::vector<std::size_t>& small, const std::vector<std::size_t>& big, Run run) {
  const std::size_t rank = small.size();
  if (rank == 0) return run(std::size_t{0}, std::size_t{0}, std::size_t{1});
  for (std::size_t e : small) {
    if (e == 0) return;
  }
  std::vector<std::size_t> index(rank, 0), stride(rank, 1);
  for (std::size_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * big[d];
  std::size_t from = 0;
  while (true) {
    std::size_t to = 0;
    for (std::size_t d = 0; d + 1 < rank; ++d) to += index[d] * stride[d];
    run(from, to, small[rank - 1]);
    from += small[rank - 1];
    std::size_t d = rank - 1;
    while (d > 0) {
      if (++index[d - 1] < small[d - 1]) break;
      index[d - 1] = 0;
      --d;
    }
    if (d == 0) return;
  }
}

// In place: the elements of `small` (a block of `big` at the origin) moved to the front.
template <class T>
void compact_in_place(T* data, const std::vector<std::size_t>& big, const std::vector<std::size_t>& small) {
  for_each_run(small, big, [&](std::size_t from, std::size_t to, std::size_t count) {
    if (from != to) std::memmove(data + from, data + to, count * sizeof(T));
  });
}

// `out` (of `big`) = `in` (of `small`) padded with zeros.
template <class T>
void pad(const T* in, const std::vector<std::size_t>& small, T* out, const std::vector<std::size_t>& big) {
  std::size_t total = 1;
  for (std::size_t e : big) total *= e;
  std::fill(out, out + total, T(0));
  for_each_run(small, big, [&](std::size_t from, std::size_t to, std::size_t count) {
    std::copy(in + from, in + from + count, out + to);
  });
}

}  // namespace

bool runs_sparse(const OpGraph& graph, NodeId id) {
  const OpNode& node = graph.node(id);
  if (node.compact || node.kind == OpKind::input) return node.compact;
  return runs_sparse(graph, id, graph.operands(id));
}

template <class T>
std::string check_supported(const OpGraph& graph, const Backend<T>& backend, const Backend<T>* host) {
  std::string notes;
  for (NodeId id = 0; id < graph.size(); ++id) {
    std::string why;
    if (!backend.supports(graph.node(id), why)) {
      std::string host_why;
      const OpKind kind = graph.node(id).kind;
      if (host && kind != OpKind::input && kind != OpKind::output && host->supports(graph.node(id), host_why)) {
        notes += node_text(graph, id) + " ran on the " + std::string(host->name()) + " backend, not " +
                 std::string(backend.name()) + (why.empty() ? "" : ": " + why) + "\n";
        continue;
      }
      throw BackendError("tenex: the " + std::string(backend.name()) + " backend does not support " +
                         node_text(graph, id) + (why.empty() ? "" : ": " + why));
    }
  }
  return notes;
}

namespace {

/// The bytes a buffer of `bytes` takes: backends hand out whole 64-byte lines.
std::size_t buffer_bytes(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

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
          !graph.node(op).compact) {
        plan.takes_over[id] = 1;
        held -= owned[op];
        owned[op] = 0;
      }
    } else if (node.kind != OpKind::input) {
      const std::size_t bytes = buffer_bytes(node.elements * element_size);
      const bool addend = node.kind == OpKind::contract && ops.size() == 3;
      if (addend && !node.compact && !graph.node(ops[2]).compact && owned[ops[2]] == bytes && uses[ops[2]] == 1 &&
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

template <class T>
RunStats execute(const OpGraph& graph, std::size_t limit, Backend<T>& backend, Backend<T>* host) {
  return execute(graph, schedule_of(graph, limit), {}, limit, backend, host);
}

template <class T>
RunStats execute(const OpGraph& graph, const Schedule& schedule, const std::vector<std::shared_ptr<void>>& storages,
                 std::size_t limit, Backend<T>& backend, Backend<T>* host) {
  RunStats stats;
  backend.begin_set();
  struct EndSet {
    Backend<T>& backend;
    RunStats& stats;
    ~EndSet() { backend.end_set(stats); }
  } end_set{backend, stats};
  const bool on_host = backend.device() == Device::host;
  stats.graph_nodes = graph.size();
  const std::vector<NodeId>& order = schedule.order;
  const std::vector<std::vector<NodeId>>& operands = schedule.operands;
  MemoryPlan planned;
  const std::vector<char>* takes_over = &schedule.takes_over;
  if (limit != 0 || schedule.takes_over.size() != graph.size()) {
    planned = plan_memory(graph, order, operands, schedule.uses, sizeof(T), limit, backend.name());
    takes_over = &planned.takes_over;
  }
  auto storage_of = [&](NodeId id, const OpNode& node) -> Storage<T>& {
    const std::size_t slot = schedule.slot[id];
    return *static_cast<Storage<T>*>((slot == Schedule::unbound ? node.storage : storages.at(slot)).get());
  };
  // What the run keeps per node, in one allocation (a tiny set pays for each one).
  struct NodeState {
    Buffer owned;
    View<const T> value;
    std::size_t uses = 0;
    bool sparse = false;
  };
  std::vector<NodeState> nodes(graph.size());
  for (NodeId id = 0; id < graph.size(); ++id) nodes[id].uses = schedule.uses[id];
  std::size_t held_bytes = 0;

  auto allocate = [&](NodeId id, std::size_t elements) {
    const std::size_t bytes = elements * sizeof(T);
    try {
      return backend.allocate(bytes);
    } catch (const std::bad_alloc&) {
      throw BackendError("tenex: out of memory: " + node_text(graph, id) + " needs " + std::to_string(bytes) +
                         " bytes on the " + std::string(backend.name()) + " backend while " +
                         std::to_string(held_bytes) + " bytes of intermediates are held");
    }
  };
  for (NodeId id : order) nodes[id].sparse = runs_sparse(graph, id, operands[id]);
  // Truncated decompositions: their kept ranks, by node, once they have run.
  const TruncatedModes truncated = find_truncated_modes(graph, order, operands);
  std::vector<std::size_t> kept_rank(truncated.any() ? graph.size() : 0, 0);
  const bool decomposes = truncated.any() && std::any_of(order.begin(), order.end(), [&](NodeId id) {
                            return truncation_of(graph.node(id).params) != nullptr;
                          });
  if (decomposes && backend.name() != "cpu" && (!host || host == &backend)) {
    throw BackendError("tenex: the " + std::string(backend.name()) +
                       " backend does not run truncated decompositions (svd or eigen_solve with a Truncation), "
                       "and no CPU backend runs them for it; run the set on the CPU backend");
  }
  // Their kernels (and the factors reading their packed layout) are the CPU backend's.
  auto cpu_only = [&](NodeId id) {
    if (!truncated.any()) return false;
    const OpNode& node = graph.node(id);
    if (truncation_of(node.params)) return true;
    return node.kind == OpKind::factor && truncation_of(graph.node(operands[id][0]).params) != nullptr;
  };
  auto kept_extents = [&](NodeId id) {
    std::vector<std::size_t> extents = graph.node(id).extents;
    for (std::size_t d = 0; d < extents.size(); ++d) {
      if (truncated.source[id][d] != TruncatedModes::none) extents[d] = kept_rank[truncated.source[id][d]];
    }
    return extents;
  };
  // A node the backend declines: its operands copied to `host`'s memory, run there, the
  // result copied back into args.out.
  auto run_on_host = [&](const KernelArgs<T>& args) {
    KernelArgs<T> moved{args.node, args.operand_nodes, {}, {}};
    std::vector<Buffer> buffers;
    for (const View<const T>& op : args.operands) {
      buffers.push_back(host->allocate(op.size * sizeof(T)));
      backend.to_host(buffers.back().data(), op.data, op.size * sizeof(T));
      moved.operands.push_back(View<const T>{static_cast<const T*>(buffers.back().data()), op.size, Device::host});
    }
    Buffer out = host->allocate(args.out.size * sizeof(T));
    moved.out = View<T>{static_cast<T*>(out.data()), args.out.size, Device::host};
    // An operand aliasing the output (an addend handed over) is read from its copy.
    for (std::size_t k = 0; k < args.operands.size(); ++k) {
      if (args.operands[k].data == args.out.data) {
        if (args.out.size) std::memcpy(out.data(), buffers[k].data(), args.out.size * sizeof(T));
        moved.operands[k].data = moved.out.data;
      }
    }
    KernelCount count = host->run(moved);
    backend.from_host(args.out.data, out.data(), args.out.size * sizeof(T));
    ++stats.host_nodes;
    return count;
  };
  auto run = [&](NodeId id, const KernelArgs<T>& args) {
    try {
      std::string why;
      KernelCount count;
      if (nodes[id].sparse) {
        count = backend.run_sparse(args);
      } else if (host && host != &backend && (cpu_only(id) || !backend.supports(args.node, why))) {
        count = run_on_host(args);
      } else {
        count = backend.run(args);
      }
      stats.flops += count.flops;
      stats.kernels += count.calls;
    } catch (const std::bad_alloc&) {
      throw BackendError("tenex: out of memory while running " + node_text(graph, id) + " on the " +
                         std::string(backend.name()) + " backend (scratch memory)");
    }
  };
  auto release = [&](NodeId op) {
    NodeState& state = nodes[op];
    if (--state.uses == 0 && state.owned) {
      held_bytes -= state.owned.bytes();
      state.owned.reset();
    }
  };
  // Results written into a TensorView's memory (tensor/view_binding.hpp): by the kernel itself
  // where the memory is contiguous, the backend's buffers host memory, and apart from everything
  // else the set reads or writes; else computed apart and copied in when written, or after the
  // set's last read where the memory overlaps an operand of the set.
  enum class ViewWrite : char { none, direct, copy, after_reads };
  std::vector<ViewWrite> view_write;     // by node; empty when the set writes no view
  std::vector<NodeId> into_view;         // by node: 1 + the output whose view it computes into
  std::vector<Storage<T>*> after_reads;  // results of the second kind, fulfilled at the end
  for (NodeId id : order) {
    const OpNode& node = graph.node(id);
    if (node.kind != OpKind::output || !storage_of(id, node).binding()) continue;
    if (view_write.empty()) {
      view_write.assign(graph.size(), ViewWrite::none);
      into_view.assign(graph.size(), NodeId(0));
    }
    if (truncated.truncated(id)) {
      throw ShapeError("tenex: " + node_text(graph, id) +
                       ": the result of a truncated decomposition cannot be written to a TensorView (its extent "
                       "is decided when the set runs; a view's shape is fixed): assign it to a Tensor");
    }
    view_write[id] = ViewWrite::copy;
  }
  if (!view_write.empty()) {
    auto overlaps = [&](const ViewBinding& view, NodeId self) {
      for (NodeId other : order) {
        const OpNode& node = graph.node(other);
        if (other == self || (node.kind != OpKind::input && node.kind != OpKind::output)) continue;
        const Storage<T>& storage = storage_of(other, node);
        if (const auto& bound = storage.binding()) {
          if (view.overlaps(*bound)) return true;
        } else if (node.kind == OpKind::input && storage.host_valid() &&
                   view.overlaps(storage.host_buffer().data(), storage.shape().size() * sizeof(T))) {
          return true;  // a view of a tensor's own elements
        }
      }
      return false;
    };
    for (NodeId id : order) {
      if (view_write[id] == ViewWrite::none) continue;
      const Storage<T>& storage = storage_of(id, graph.node(id));
      if (overlaps(*storage.binding(), id)) {
        view_write[id] = ViewWrite::after_reads;
      } else if (storage.direct() && backend.host_buffers()) {
        view_write[id] = ViewWrite::direct;
        const NodeId op = operands[id][0];
        if ((*takes_over)[id] && !(*takes_over)[op]) into_view[op] = id + 1;
      }
    }
  }
  auto view_buffer = [&](NodeId output) {
    const ViewBinding& view = *storage_of(output, graph.node(output)).binding();
    return Buffer(view.data, graph.node(output).size() * sizeof(T), Device::host, nullptr);
  };
  auto flush_after_reads = [&](Storage<T>* storage) {
    storage->copy_out();
    storage->fulfil(nullptr);
  };

  // The operand lists handed to each kernel, reused from node to node.
  std::vector<const OpNode*> operand_nodes;
  std::vector<View<const T>> operand_values;
  operand_nodes.reserve(4);
  operand_values.reserve(4);

  for (NodeId id : order) {
    const OpNode& node = graph.node(id);
    if (node.kind == OpKind::input) {
      Storage<T>& storage = storage_of(id, node);
      if (auto it = std::find(after_reads.begin(), after_reads.end(), &storage); it != after_reads.end()) {
        flush_after_reads(*it);  // a result of this set read again: in its view by now
        after_reads.erase(it);
      }
      try {
        storage.resolve(on_host);
      } catch (...) {
        // An operand whose own set failed: its error is this set's, passed on as it is (a
        // tenex::map callable's exception stays the callable's; see callable_exception.hpp).
        if (const std::exception_ptr error = storage.error()) throw CallableException{error};
        throw;
      }
      nodes[id].value = backend.read(storage);
      if (const std::vector<std::size_t>& modes = node.get<InputParams>().truncated_modes; !modes.empty()) {
        // A tensor whose modes took a kept rank in another set: that rank is its extent there.
        const std::vector<std::size_t>& kept = storage.shape().extents();
        const NodeId from = truncated.source[id][modes[0]];
        bool fits = kept.size() == node.extents.size();
        for (std::size_t d = 0; fits && d < kept.size(); ++d) {
          const bool is_truncated = truncated.source[id][d] != TruncatedModes::none;
          fits = is_truncated ? kept[d] <= node.extents[d] && kept[d] == kept[modes[0]] : kept[d] == node.extents[d];
        }
        if (!fits) {
          throw InternalError("tenex: " + node_text(graph, id) + " reads a tensor of extents " +
                              storage.shape().to_string() + ", which its truncated modes do not explain");
        }
        if (from == id) kept_rank[id] = kept[modes[0]];
      } else if (!node.compact && !truncated.truncated(id) && storage.shape().extents() != node.extents) {
        throw ShapeError("tenex: " + node_text(graph, id) + " reads a tensor that now has extents " +
                         storage.shape().to_string() +
                         ": it took the kept rank of a truncated decomposition after this statement was written; "
                         "read it after its set has run (wait() or a read)");
      }
      if (truncated.truncated(id) && storage.shape().extents() != node.extents) {
        // A target of this set shrunk to its kept rank: read padded back to the graph's extents.
        std::vector<T> small(storage.shape().size()), big(node.size());
        backend.to_host(small.data(), nodes[id].value.data, small.size() * sizeof(T));
        pad(small.data(), storage.shape().extents(), big.data(), node.extents);
        nodes[id].owned = allocate(id, big.size());
        held_bytes += nodes[id].owned.bytes();
        backend.from_host(nodes[id].owned.data(), big.data(), big.size() * sizeof(T));
        nodes[id].value =
            View<const T>{static_cast<const T*>(nodes[id].owned.data()), big.size(), nodes[id].owned.device()};
      }
    } else {
      operand_nodes.clear();
      operand_values.clear();
      KernelArgs<T> args{node, std::move(operand_nodes), std::move(operand_values), {}};
      for (NodeId op : operands[id]) {
        args.operand_nodes.push_back(&graph.node(op));
        args.operands.push_back(nodes[op].value);
      }
      if (node.kind == OpKind::output) {
        Storage<T>& storage = storage_of(id, node);
        const NodeId op = operands[id][0];
        const ViewWrite to_view = view_write.empty() ? ViewWrite::none : view_write[id];
        // The value is already in the target's layout and nothing else reads it: hand it over.
        if ((*takes_over)[id]) {
          held_bytes -= nodes[op].owned.bytes();
          backend.write(storage, std::move(nodes[op].owned));
        } else if (to_view == ViewWrite::direct) {
          // The kernel writes the user's memory (the storage's elements already).
          Buffer buffer = view_buffer(id);
          args.out = View<T>{static_cast<T*>(buffer.data()), node.size(), Device::host};
          run(id, args);
        } else {
          Buffer buffer = allocate(id, node.size());
          args.out = View<T>{static_cast<T*>(buffer.data()), node.size(), buffer.device()};
          run(id, args);
          backend.write(storage, std::move(buffer));
        }
        // Into the view's memory where it is not there yet (a no-op where the kernel wrote it;
        // a handed-over addend's buffer is copied).
        if (to_view == ViewWrite::direct || to_view == ViewWrite::copy) storage.copy_out();

        if (truncated.truncated(id)) {
          // The target takes the kept rank: its elements moved to the front, on the host.
          const std::vector<std::size_t> extents = kept_extents(id);
          storage.ensure_host();
          compact_in_place(storage.writable_elements(), node.extents, extents);
          storage.set_truncated_shape(Shape(extents));
        }
        if (to_view == ViewWrite::after_reads) {
          after_reads.push_back(&storage);
        } else {
          storage.fulfil(nullptr);
        }
      } else {
        Buffer& owned = nodes[id].owned;
        if ((*takes_over)[id]) {
          // A contraction with an addend the executor owns, read by it alone, in its layout:
          // the addend's buffer is the output (the kernel sees operand 2 alias args.out).
          owned = std::move(nodes[operands[id][2]].owned);
        } else if (!into_view.empty() && into_view[id]) {
          // Its value is a view's result in the view's layout: computed in the user's memory.
          owned = view_buffer(into_view[id] - 1);
          held_bytes += owned.bytes();
        } else {
          owned = allocate(id, node.elements);
          held_bytes += owned.bytes();
        }
        stats.peak_bytes = std::max(stats.peak_bytes, held_bytes);
        args.out = View<T>{static_cast<T*>(owned.data()), node.elements, owned.device()};
        run(id, args);
        nodes[id].value = View<const T>{args.out.data, args.out.size, args.out.device};
        if (const TruncationParams* t = truncation_of(node.params); t && !kept_rank.empty()) {
          T report[2];
          const MatrixExtents matrix = decomposition_matrix(node.params, node.extents);
          const std::size_t at = packed_truncation_offset(node.params, matrix.m, matrix.n);
          backend.to_host(report, args.out.data + at, sizeof report);
          kept_rank[id] = static_cast<std::size_t>(std::real(report[0]));
          set_last_truncation({kept_rank[id], static_cast<double>(std::real(report[1]))});
        }
      }
      operand_nodes = std::move(args.operand_nodes);
      operand_values = std::move(args.operands);
    }
    stats.peak_bytes = std::max(stats.peak_bytes, held_bytes);
    for (NodeId op : operands[id]) release(op);
  }
  for (Storage<T>* storage : after_reads) flush_after_reads(storage);
  return stats;
}

#define TENEX_INSTANTIATE_EXECUTOR(T)                                                                      \
  template std::string check_supported<T>(const OpGraph&, const Backend<T>&, const Backend<T>*);           \
  template RunStats execute<T>(const OpGraph&, std::size_t, Backend<T>&, Backend<T>*);                     \
  template RunStats execute<T>(const OpGraph&, const Schedule&, const std::vector<std::shared_ptr<void>>&, \
                               std::size_t, Backend<T>&, Backend<T>*);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_EXECUTOR)
#undef TENEX_INSTANTIATE_EXECUTOR

}  // namespace tenex::detail
