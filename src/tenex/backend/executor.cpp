#include "tenex/backend/executor.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "tenex/backend/cpu/cpu_backend.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/error.hpp"
#include "tenex/expression/detail/evaluate.hpp"
#include "tenex/expression/detail/graph_builder.hpp"
#include "tenex/graph/passes/passes.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail {

namespace {

/// Zeroes the elements of `data` (laid out as `node`) that a sparse map excludes.
template <class T>
void apply_sparse_map(const OpNode& node, const SparseMapUse& use, T* data) {
  const std::size_t rank = node.labels.size();
  std::vector<std::size_t> source_modes, target_modes;
  for (const auto& l : use.source) source_modes.push_back(std::find(node.labels.begin(), node.labels.end(), l) - node.labels.begin());
  for (const auto& l : use.target) target_modes.push_back(std::find(node.labels.begin(), node.labels.end(), l) - node.labels.begin());
  const std::size_t total = node.size();
  std::vector<std::size_t> idx(rank, 0);
  SparseMap::Index source(source_modes.size()), target(target_modes.size());
  for (std::size_t flat = 0; flat < total; ++flat) {
    for (std::size_t i = 0; i < source_modes.size(); ++i) source[i] = idx[source_modes[i]];
    for (std::size_t i = 0; i < target_modes.size(); ++i) target[i] = idx[target_modes[i]];
    if (!use.map->allows(source, target)) data[flat] = T(0);
    for (std::size_t d = rank; d-- > 0;) {
      if (++idx[d] < node.extents[d]) break;
      idx[d] = 0;
    }
  }
}

template <class T>
void apply_sparse_maps(const OpGraph& graph, const OpNode& node, T* data) {
  for (std::size_t m : node.sparse_maps) apply_sparse_map(node, graph.sparse_maps()[m], data);
}

}  // namespace

template <class T>
RunStats execute(const OpGraph& graph, Backend<T>& backend) {
  RunStats stats;
  stats.graph_nodes = graph.size();
  const std::vector<NodeId> order = graph.topological_order();
  for (NodeId id : order) {
    if (!backend.supports(graph.node(id))) {
      throw BackendError("tenex: the " + std::string(backend.name()) + " backend does not support " +
                         std::string(op_kind_name(graph.node(id).kind)) + " nodes");
    }
  }
  std::vector<std::size_t> uses(graph.size(), 0);
  std::vector<std::vector<NodeId>> operands(graph.size());
  for (NodeId id = 0; id < graph.size(); ++id) {
    operands[id] = graph.operands(id);
    for (NodeId op : operands[id]) ++uses[op];
  }
  std::vector<AlignedArray<T>> owned(graph.size());
  std::vector<const T*> value(graph.size(), nullptr);
  std::size_t held_bytes = 0;

  auto release = [&](NodeId op) {
    if (--uses[op] == 0 && owned[op].data()) {
      held_bytes -= owned[op].size() * sizeof(T);
      owned[op] = AlignedArray<T>();
    }
  };

  for (NodeId id : order) {
    const OpNode& node = graph.node(id);
    if (node.kind == OpKind::input) {
      auto& storage = *std::static_pointer_cast<Storage<T>>(node.storage);
      storage.resolve();
      value[id] = storage.elements();
      if (!node.sparse_maps.empty()) {
        owned[id] = AlignedArray<T>(node.elements);
        if (node.elements) std::memcpy(owned[id].data(), value[id], node.elements * sizeof(T));
        apply_sparse_maps(graph, node, owned[id].data());
        value[id] = owned[id].data();
        held_bytes += node.elements * sizeof(T);
      }
    } else {
      KernelArgs<T> args{node, {}, {}, nullptr};
      for (NodeId op : operands[id]) {
        args.operand_nodes.push_back(&graph.node(op));
        args.operands.push_back(value[op]);
      }
      if (node.kind == OpKind::output) {
        auto& storage = *std::static_pointer_cast<Storage<T>>(node.storage);
        const NodeId op = operands[id][0];
        // The value is already in the target's layout and nothing else reads it: hand it over.
        if (owned[op].data() && uses[op] == 1 && node.params.operand_labels == node.labels &&
            graph.node(op).sparse_maps == node.sparse_maps) {
          held_bytes -= owned[op].size() * sizeof(T);
          storage.adopt(std::move(owned[op]));
        } else {
          storage.allocate();
          args.out = storage.elements();
          KernelCount count = backend.run(args);
          stats.flops += count.flops;
          stats.kernels += count.calls;
          apply_sparse_maps(graph, node, storage.elements());
        }
        storage.fulfil(nullptr);
      } else {
        owned[id] = AlignedArray<T>(node.elements);
        held_bytes += node.elements * sizeof(T);
        stats.peak_bytes = std::max(stats.peak_bytes, held_bytes);
        args.out = owned[id].data();
        KernelCount count = backend.run(args);
        stats.flops += count.flops;
        stats.kernels += count.calls;
        apply_sparse_maps(graph, node, owned[id].data());
        value[id] = owned[id].data();
      }
    }
    stats.peak_bytes = std::max(stats.peak_bytes, held_bytes);
    for (NodeId op : operands[id]) release(op);
  }
  return stats;
}

template RunStats execute<float>(const OpGraph&, Backend<float>&);
template RunStats execute<double>(const OpGraph&, Backend<double>&);

namespace {

void dump_graph(const OpGraph& graph) {
  const char* dir = std::getenv("TENEX_DUMP_GRAPH");
  if (!dir || !*dir) return;
  static std::atomic<unsigned long long> counter{0};
  const std::string path = std::string(dir) + "/set-" + std::to_string(counter.fetch_add(1)) + ".dot";
  // A debugging aid must not break the computation: a file that cannot be written is skipped.
  std::ofstream out(path);
  if (out) out << graph.to_dot();
}

template <class T>
void evaluate_typed(BackendKind kind, std::vector<Assignment>& batch, const std::vector<RegisteredSparseMap>& maps) {
  const auto start = std::chrono::steady_clock::now();
  if (kind == BackendKind::cuda) {
    throw BackendError(
        "tenex: this set asks for the CUDA backend, which this build does not have; use TENEX_BACKEND=cpu or auto");
  }
  OpGraph graph = build_set_graph(dtype_of<Tensor<T>>(), batch, maps);
  passes::optimize(graph);
  dump_graph(graph);
  CpuBackend<T> backend;
  RunStats stats = execute(graph, backend);
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  set_last_run_stats(stats);
}

template <class T>
void fail_all(std::vector<Assignment>& batch, const std::exception_ptr& error) {
  for (Assignment& a : batch) {
    auto storage = std::static_pointer_cast<Storage<T>>(a.target);
    if (storage->pending()) storage->fulfil(error);
  }
}

}  // namespace

void evaluate_set(DType dtype, BackendKind backend, std::vector<Assignment> batch,
                  const std::vector<RegisteredSparseMap>& sparse_maps) noexcept {
  if (dtype == DType::shape) return;
  std::exception_ptr error;
  try {
    if (dtype == DType::f32) {
      evaluate_typed<float>(backend, batch, sparse_maps);
    } else {
      evaluate_typed<double>(backend, batch, sparse_maps);
    }
  } catch (const Error&) {
    error = std::current_exception();
  } catch (const std::bad_alloc&) {
    error = std::make_exception_ptr(BackendError("tenex: out of memory while evaluating a set"));
  } catch (const std::exception& e) {
    error = std::make_exception_ptr(InternalError(std::string("tenex: evaluation failed: ") + e.what()));
  } catch (...) {
    error = std::make_exception_ptr(InternalError("tenex: evaluation failed with an unknown exception"));
  }
  // Every target still pending gets the error (or, if none occurred, a broken invariant).
  if (!error) error = std::make_exception_ptr(InternalError("tenex: a result of the set was never written"));
  try {
    if (dtype == DType::f32) {
      fail_all<float>(batch, error);
    } else {
      fail_all<double>(batch, error);
    }
  } catch (...) {
  }
}

}  // namespace tenex::detail
