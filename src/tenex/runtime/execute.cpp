// The executor's run (executor.hpp) as named steps: the memory plan and where results written
// to TensorViews go (before anything runs), then per node in the schedule's order: read an
// input, compute a node (on the backend, or on the host for what it declines), write an output
// into its target; each operand released after its last use.
#include <algorithm>
#include <complex>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "tenex/backend/run_stats.hpp"
#include "tenex/backend/truncated_modes.hpp"
#include "tenex/callable_exception.hpp"
#include "tenex/error.hpp"
#include "tenex/last_truncation.hpp"
#include "tenex/runtime/executor.hpp"
#include "tenex/runtime/schedule_steps.hpp"
#include "tenex/runtime/truncated_values.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail {

template <class T>
std::string check_supported(const OpGraph& graph, const Backend<T>& backend, const Backend<T>* host) {
  std::string notes;
  const StorageKinds kinds = backend.capabilities().storage_kinds;
  for (NodeId id = 0; id < graph.size(); ++id) {
    std::string why;
    if (!kinds.contains(graph.node(id).layout)) {
      throw BackendError("tenex: the " + std::string(backend.name()) + " backend does not store " +
                         storage_kind_name(graph.node(id).layout) + " values (its storage kinds: " + kinds.text() +
                         "), which " + node_text(graph, id) + " is");
    }
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

// Results written into a TensorView's memory (tensor/view_binding.hpp): by the kernel itself
// where the memory is contiguous, the backend's buffers host memory, and apart from everything
// else the set reads or writes; else computed apart and copied in when written, or after the
// set's last read where the memory overlaps an operand of the set.
enum class ViewWrite : char { none, direct, copy, after_reads };

/// One run of a graph: what it keeps per node, and its steps.
template <class T>
class Execution {
 public:
  Execution(const OpGraph& graph, const Schedule& schedule, const std::vector<std::shared_ptr<void>>& storages,
            Backend<T>& backend, Backend<T>* host, RunStats& stats)
      : graph_(graph), schedule_(schedule), storages_(storages), backend_(backend), host_(host), stats_(stats),
        capabilities_(backend.capabilities()), nodes_(graph.size()),
        truncated_(find_truncated_modes(graph, schedule.order, schedule.operands)) {
    for (NodeId id = 0; id < graph.size(); ++id) nodes_[id].uses = schedule.uses[id];
    for (NodeId id : schedule.order) nodes_[id].structured = runs_structured(graph, id, schedule.operands[id]);
    if (truncated_.any()) kept_rank_.assign(graph.size(), 0);
  }

  /// Before anything runs: the memory plan (and the limit's check), where truncated
  /// decompositions run, where results written to views go.
  void prepare(std::size_t limit);
  /// Every node in the schedule's order.
  void run();

 private:
  struct NodeState {
    Buffer owned;
    View<const T> value;
    std::size_t uses = 0;
    bool structured = false;  // not dense, or reads a value that is not: run_structured
  };

  Storage<T>& storage_of(NodeId id) const {
    const std::size_t slot = schedule_.slot[id];
    const std::shared_ptr<void>& storage = slot == Schedule::unbound ? graph_.binding(id) : storages_.at(slot);
    return *static_cast<Storage<T>*>(storage.get());
  }
  const std::vector<NodeId>& operands(NodeId id) const { return schedule_.operands[id]; }
  bool takes_over(NodeId id) const { return (*takes_over_)[id] != 0; }

  void check_truncation_placement() const;
  void plan_view_writes();
  bool overlaps_other_storage(const ViewBinding& view, NodeId self) const;
  void read_input(NodeId id);
  void check_input_extents(NodeId id, const Storage<T>& storage);
  void pad_truncated_input(NodeId id, const Storage<T>& storage);
  KernelArgs<T> arguments(NodeId id);
  void compute(NodeId id, KernelArgs<T>& args);
  void write_output(NodeId id, KernelArgs<T>& args);
  void run_kernel(NodeId id, const KernelArgs<T>& args);
  KernelCount run_on_host(const KernelArgs<T>& args);
  bool host_only(NodeId id) const;
  Buffer allocate(NodeId id, std::size_t elements);
  Buffer view_buffer(NodeId output) const;
  void release(NodeId op);

  const OpGraph& graph_;
  const Schedule& schedule_;
  const std::vector<std::shared_ptr<void>>& storages_;
  Backend<T>& backend_;
  Backend<T>* host_;
  RunStats& stats_;
  const BackendCapabilities capabilities_;
  std::vector<NodeState> nodes_;
  std::size_t held_bytes_ = 0;
  MemoryPlan planned_;
  const std::vector<char>* takes_over_ = nullptr;
  // Truncated decompositions: their kept ranks, by node, once they have run.
  const TruncatedModes truncated_;
  std::vector<std::size_t> kept_rank_;
  std::vector<ViewWrite> view_write_;     // by node; empty when the set writes no view
  std::vector<NodeId> into_view_;         // by node: 1 + the output whose view it computes into
  std::vector<Storage<T>*> after_reads_;  // results written to their views at the end
  // The operand lists handed to each kernel, reused from node to node.
  std::vector<const OpNode*> operand_nodes_;
  std::vector<View<const T>> operand_values_;
};

template <class T>
void Execution<T>::prepare(std::size_t limit) {
  takes_over_ = &schedule_.takes_over;
  if (limit != 0 || schedule_.takes_over.size() != graph_.size()) {
    planned_ =
        plan_memory(graph_, schedule_.order, schedule_.operands, schedule_.uses, sizeof(T), limit, backend_.name());
    takes_over_ = &planned_.takes_over;
  }
  check_truncation_placement();
  plan_view_writes();
  operand_nodes_.reserve(4);
  operand_values_.reserve(4);
}

template <class T>
void Execution<T>::check_truncation_placement() const {
  if (!truncated_.any() || capabilities_.truncated_decompositions || (host_ && host_ != &backend_)) return;
  const bool decomposes = std::any_of(schedule_.order.begin(), schedule_.order.end(),
                                      [&](NodeId id) { return truncation_of(graph_.node(id).params) != nullptr; });
  if (decomposes) {
    throw BackendError("tenex: the " + std::string(backend_.name()) +
                       " backend does not run truncated decompositions (svd or eigen_solve with a Truncation), "
                       "and no CPU backend runs them for it; run the set on the CPU backend");
  }
}

// Truncated decompositions, and the factors reading their packed layout, run where the
// capability is: on the host when the backend lacks it.
template <class T>
bool Execution<T>::host_only(NodeId id) const {
  if (!truncated_.any() || capabilities_.truncated_decompositions) return false;
  const OpNode& node = graph_.node(id);
  if (truncation_of(node.params)) return true;
  return node.kind == OpKind::factor && truncation_of(graph_.node(operands(id)[0]).params) != nullptr;
}

template <class T>
void Execution<T>::plan_view_writes() {
  for (NodeId id : schedule_.order) {
    const OpNode& node = graph_.node(id);
    if (node.kind != OpKind::output || !storage_of(id).binding()) continue;
    if (view_write_.empty()) {
      view_write_.assign(graph_.size(), ViewWrite::none);
      into_view_.assign(graph_.size(), NodeId(0));
    }
    if (truncated_.truncated(id)) {
      throw ShapeError("tenex: " + node_text(graph_, id) +
                       ": the result of a truncated decomposition cannot be written to a TensorView (its extent "
                       "is decided when the set runs; a view's shape is fixed): assign it to a Tensor");
    }
    view_write_[id] = ViewWrite::copy;
  }
  if (view_write_.empty()) return;
  for (NodeId id : schedule_.order) {
    if (view_write_[id] == ViewWrite::none) continue;
    const Storage<T>& storage = storage_of(id);
    if (overlaps_other_storage(*storage.binding(), id)) {
      view_write_[id] = ViewWrite::after_reads;
    } else if (storage.direct() && capabilities_.host_memory) {
      view_write_[id] = ViewWrite::direct;
      const NodeId op = operands(id)[0];
      if (takes_over(id) && !takes_over(op)) into_view_[op] = id + 1;
    }
  }
}

template <class T>
bool Execution<T>::overlaps_other_storage(const ViewBinding& view, NodeId self) const {
  for (NodeId other : schedule_.order) {
    const OpNode& node = graph_.node(other);
    if (other == self || (node.kind != OpKind::input && node.kind != OpKind::output)) continue;
    const Storage<T>& storage = storage_of(other);
    if (const auto& bound = storage.binding()) {
      if (view.overlaps(*bound)) return true;
    } else if (node.kind == OpKind::input && storage.host_valid() &&
               view.overlaps(storage.host_buffer().data(), storage.shape().size() * sizeof(T))) {
      return true;  // a view of a tensor's own elements
    }
  }
  return false;
}

template <class T>
void Execution<T>::run() {
  for (NodeId id : schedule_.order) {
    const OpKind kind = graph_.node(id).kind;
    if (kind == OpKind::input) {
      read_input(id);
    } else {
      KernelArgs<T> args = arguments(id);
      if (kind == OpKind::output) {
        write_output(id, args);
      } else {
        compute(id, args);
      }
      operand_nodes_ = std::move(args.operand_nodes);
      operand_values_ = std::move(args.operands);
    }
    stats_.peak_bytes = std::max(stats_.peak_bytes, held_bytes_);
    for (NodeId op : operands(id)) release(op);
  }
  for (Storage<T>* storage : after_reads_) {
    storage->copy_out();
    storage->fulfil(nullptr);
  }
}

template <class T>
void Execution<T>::read_input(NodeId id) {
  const OpNode& node = graph_.node(id);
  Storage<T>& storage = storage_of(id);
  if (auto it = std::find(after_reads_.begin(), after_reads_.end(), &storage); it != after_reads_.end()) {
    (*it)->copy_out();  // a result of this set read again: in its view by now
    (*it)->fulfil(nullptr);
    after_reads_.erase(it);
  }
  try {
    storage.resolve(backend_.device() == Device::host);
  } catch (...) {
    // An operand whose own set failed: its error is this set's, passed on as it is (a
    // tenex::map callable's exception stays the callable's; see callable_exception.hpp).
    if (const std::exception_ptr error = storage.error()) throw CallableException{error};
    throw;
  }
  nodes_[id].value = backend_.read(storage);
  check_input_extents(id, storage);
  if (truncated_.truncated(id) && storage.shape().extents() != node.extents) pad_truncated_input(id, storage);
}

template <class T>
void Execution<T>::check_input_extents(NodeId id, const Storage<T>& storage) {
  const OpNode& node = graph_.node(id);
  const std::vector<std::size_t>& modes = node.get<InputParams>().truncated_modes;
  if (modes.empty()) {
    if (!node.blocks() && !truncated_.truncated(id) && storage.shape().extents() != node.extents) {
      throw ShapeError("tenex: " + node_text(graph_, id) + " reads a tensor that now has extents " +
                       storage.shape().to_string() +
                       ": it took the kept rank of a truncated decomposition after this statement was written; "
                       "read it after its set has run (wait() or a read)");
    }
    return;
  }
  // A tensor whose modes took a kept rank in another set: that rank is its extent there.
  const std::vector<std::size_t>& kept = storage.shape().extents();
  const NodeId from = truncated_.source[id][modes[0]];
  bool fits = kept.size() == node.extents.size();
  for (std::size_t d = 0; fits && d < kept.size(); ++d) {
    const bool is_truncated = truncated_.source[id][d] != TruncatedModes::none;
    fits = is_truncated ? kept[d] <= node.extents[d] && kept[d] == kept[modes[0]] : kept[d] == node.extents[d];
  }
  if (!fits) {
    throw InternalError("tenex: " + node_text(graph_, id) + " reads a tensor of extents " +
                        storage.shape().to_string() + ", which its truncated modes do not explain");
  }
  if (from == id) kept_rank_[id] = kept[modes[0]];
}

// A target of this set shrunk to its kept rank: read padded back to the graph's extents.
template <class T>
void Execution<T>::pad_truncated_input(NodeId id, const Storage<T>& storage) {
  const OpNode& node = graph_.node(id);
  std::vector<T> small(storage.shape().size()), big(node.size());
  backend_.to_host(small.data(), nodes_[id].value.data, small.size() * sizeof(T));
  pad(small.data(), storage.shape().extents(), big.data(), node.extents);
  Buffer& owned = nodes_[id].owned;
  owned = allocate(id, big.size());
  held_bytes_ += owned.bytes();
  backend_.from_host(owned.data(), big.data(), big.size() * sizeof(T));
  nodes_[id].value = View<const T>{static_cast<const T*>(owned.data()), big.size(), owned.device()};
}

template <class T>
KernelArgs<T> Execution<T>::arguments(NodeId id) {
  operand_nodes_.clear();
  operand_values_.clear();
  KernelArgs<T> args{graph_.node(id), std::move(operand_nodes_), std::move(operand_values_), {}};
  for (NodeId op : operands(id)) {
    args.operand_nodes.push_back(&graph_.node(op));
    args.operands.push_back(nodes_[op].value);
  }
  return args;
}

template <class T>
void Execution<T>::compute(NodeId id, KernelArgs<T>& args) {
  const OpNode& node = graph_.node(id);
  Buffer& owned = nodes_[id].owned;
  if (takes_over(id)) {
    // A contraction with an addend the executor owns, read by it alone, in its layout:
    // the addend's buffer is the output (the kernel sees operand 2 alias args.out).
    owned = std::move(nodes_[operands(id)[2]].owned);
  } else if (!into_view_.empty() && into_view_[id]) {
    // Its value is a view's result in the view's layout: computed in the user's memory.
    owned = view_buffer(into_view_[id] - 1);
    held_bytes_ += owned.bytes();
  } else {
    owned = allocate(id, node.elements);
    held_bytes_ += owned.bytes();
  }
  stats_.peak_bytes = std::max(stats_.peak_bytes, held_bytes_);
  args.out = View<T>{static_cast<T*>(owned.data()), node.elements, owned.device()};
  run_kernel(id, args);
  nodes_[id].value = View<const T>{args.out.data, args.out.size, args.out.device};
  if (const TruncationParams* t = truncation_of(node.params); t && !kept_rank_.empty()) {
    // The kept rank and the discarded weight, where the packed layout reports them.
    T report[2];
    const MatrixExtents matrix = decomposition_matrix(node.params, node.extents);
    const std::size_t at = packed_truncation_offset(node.params, matrix.m, matrix.n);
    backend_.to_host(report, args.out.data + at, sizeof report);
    kept_rank_[id] = static_cast<std::size_t>(std::real(report[0]));
    set_last_truncation({kept_rank_[id], static_cast<double>(std::real(report[1]))});
  }
}

template <class T>
void Execution<T>::write_output(NodeId id, KernelArgs<T>& args) {
  const OpNode& node = graph_.node(id);
  Storage<T>& storage = storage_of(id);
  const NodeId op = operands(id)[0];
  const ViewWrite to_view = view_write_.empty() ? ViewWrite::none : view_write_[id];
  if (takes_over(id)) {
    // The value is already in the target's layout and nothing else reads it: hand it over.
    held_bytes_ -= nodes_[op].owned.bytes();
    backend_.write(storage, std::move(nodes_[op].owned));
  } else if (to_view == ViewWrite::direct) {
    // The kernel writes the user's memory (the storage's elements already).
    Buffer buffer = view_buffer(id);
    args.out = View<T>{static_cast<T*>(buffer.data()), node.size(), Device::host};
    run_kernel(id, args);
  } else {
    Buffer buffer = allocate(id, node.size());
    args.out = View<T>{static_cast<T*>(buffer.data()), node.size(), buffer.device()};
    run_kernel(id, args);
    backend_.write(storage, std::move(buffer));
  }
  // Into the view's memory where it is not there yet (a no-op where the kernel wrote it; a
  // handed-over addend's buffer is copied).
  if (to_view == ViewWrite::direct || to_view == ViewWrite::copy) storage.copy_out();
  if (truncated_.truncated(id)) {
    // The target takes the kept rank: its elements moved to the front, on the host.
    std::vector<std::size_t> extents = node.extents;
    for (std::size_t d = 0; d < extents.size(); ++d) {
      if (truncated_.source[id][d] != TruncatedModes::none) extents[d] = kept_rank_[truncated_.source[id][d]];
    }
    storage.ensure_host();
    compact_in_place(storage.writable_elements(), node.extents, extents);
    storage.set_truncated_shape(Shape(extents));
  }
  if (to_view == ViewWrite::after_reads) {
    after_reads_.push_back(&storage);
  } else {
    storage.fulfil(nullptr);
  }
}

template <class T>
void Execution<T>::run_kernel(NodeId id, const KernelArgs<T>& args) {
  try {
    std::string why;
    KernelCount count;
    if (nodes_[id].structured) {
      count = backend_.run_structured(args);
    } else if (host_ && host_ != &backend_ && (host_only(id) || !backend_.supports(args.node, why))) {
      count = run_on_host(args);
    } else {
      count = backend_.run(args);
    }
    stats_.flops += count.flops;
    stats_.kernels += count.calls;
  } catch (const std::bad_alloc&) {
    throw BackendError("tenex: out of memory while running " + node_text(graph_, id) + " on the " +
                       std::string(backend_.name()) + " backend (scratch memory)");
  }
}

// A node the backend declines: its operands copied to the host's memory, run there, the
// result copied back into args.out.
template <class T>
KernelCount Execution<T>::run_on_host(const KernelArgs<T>& args) {
  KernelArgs<T> moved{args.node, args.operand_nodes, {}, {}};
  std::vector<Buffer> buffers;
  for (const View<const T>& op : args.operands) {
    buffers.push_back(host_->allocate(op.size * sizeof(T)));
    backend_.to_host(buffers.back().data(), op.data, op.size * sizeof(T));
    moved.operands.push_back(View<const T>{static_cast<const T*>(buffers.back().data()), op.size, Device::host});
  }
  Buffer out = host_->allocate(args.out.size * sizeof(T));
  moved.out = View<T>{static_cast<T*>(out.data()), args.out.size, Device::host};
  // An operand aliasing the output (an addend handed over) is read from its copy.
  for (std::size_t k = 0; k < args.operands.size(); ++k) {
    if (args.operands[k].data == args.out.data) {
      if (args.out.size) std::memcpy(out.data(), buffers[k].data(), args.out.size * sizeof(T));
      moved.operands[k].data = moved.out.data;
    }
  }
  KernelCount count = host_->run(moved);
  backend_.from_host(args.out.data, out.data(), args.out.size * sizeof(T));
  ++stats_.host_nodes;
  return count;
}

template <class T>
Buffer Execution<T>::allocate(NodeId id, std::size_t elements) {
  const std::size_t bytes = elements * sizeof(T);
  try {
    return backend_.allocate(bytes);
  } catch (const std::bad_alloc&) {
    throw BackendError("tenex: out of memory: " + node_text(graph_, id) + " needs " + std::to_string(bytes) +
                       " bytes on the " + std::string(backend_.name()) + " backend while " +
                       std::to_string(held_bytes_) + " bytes of intermediates are held");
  }
}

template <class T>
Buffer Execution<T>::view_buffer(NodeId output) const {
  const ViewBinding& view = *storage_of(output).binding();
  return Buffer(view.data, graph_.node(output).size() * sizeof(T), Device::host, nullptr);
}

template <class T>
void Execution<T>::release(NodeId op) {
  NodeState& state = nodes_[op];
  if (--state.uses == 0 && state.owned) {
    held_bytes_ -= state.owned.bytes();
    state.owned.reset();
  }
}

}  // namespace

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
  stats.graph_nodes = graph.size();
  Execution<T> execution(graph, schedule, storages, backend, host, stats);
  execution.prepare(limit);
  execution.run();
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
