// tenex/backend/backend_interface.hpp — the interface every backend implements (ggml's backend
// interface is the model), for those who write one (tenex/backend/plugin.hpp, docs/extending.md
// "Writing a backend"). Like the IR it works on (tenex/ir.hpp), it may change between minor
// versions: a plugin says which version it was built against (TENEX_BACKEND_ABI_VERSION).
//
// A backend owns its memory (it allocates the buffers of intermediates and results and
// moves tensor values to its device), says what it supports before anything runs, and
// runs the op kinds of TENEX_FOR_EACH_OP it supports as kernels on buffer views. Declining a
// kind is supports() alone: the run function of every kind has a generated default that a
// backend overrides for the kinds it runs (the pipeline never calls the others; a node that
// supports() declines runs on the CPU backend, see BackendCapabilities::host_fallback).
//
// A device backend (CUDA) plugs in by deriving from Backend<T>, returning Device::cuda
// buffers from allocate(), copying a tensor's host value to its device in read() (keeping
// the copy in Storage::device_copy() for later sets), leaving results on the device in
// write() until the host reads them, and exporting a plugin entry (tenex/backend/plugin.hpp).
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/backend/backend.hpp"
#include "tenex/backend/kernel_count.hpp"
#include "tenex/error.hpp"
#include "tenex/graph/op_graph.hpp"
#include "tenex/tensor/buffer.hpp"

namespace tenex::detail {

template <class T>
class Storage;  // a tensor's value and where its copies live (read() and write())

template <class T>
struct KernelArgs {
  const OpNode& node;
  std::vector<const OpNode*> operand_nodes;
  std::vector<View<const T>> operands;
  View<T> out;  // node.elements elements on the backend's device
};

/// What a backend can do, asked by the executor and the pipeline instead of its name (a backend
/// built outside the library is as capable as it says).
struct BackendCapabilities {
  /// Its buffers are plain host memory, so that memory the caller owns (a TensorView's) may be
  /// handed to run() as args.out and to write() as the value.
  bool host_memory = false;
  /// It runs svd and eigen_solve with a Truncation, and the factors that read their packed
  /// kept-rank layout (cpu/linalg_truncated.cpp); else the host backend runs them for it.
  bool truncated_decompositions = false;
  /// A node that supports() declines runs on the CPU backend, its operands copied to the host
  /// and its result back (to_host, from_host); false: such a node fails the set (a backend
  /// whose values are not whole on this process, the distributed one).
  bool host_fallback = true;
  /// The storage kinds its kernels read and write (tenex/graph/storage_kind.hpp). The passes
  /// choose another kind than dense for a node only where the backend lists it, and the
  /// pipeline checks every node's kind against it before anything runs; nodes of another kind
  /// than dense, or reading one, run through run_structured().
  StorageKinds storage_kinds{StorageKind::dense};
};

/// What a backend ran on this thread since it was last asked (Backend::take_run_notes), kept
/// without text until explain() asks: a set pays nothing for it.
struct RunNotes {
  virtual ~RunNotes() = default;
  /// One line per call ("contraction 1 ran: ..."), each ending in a newline.
  virtual std::string text() const = 0;
};

template <class T>
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual Device device() const = 0;
  /// Whether this backend can run `node`; asked for every node before a set runs. When it
  /// cannot, `why` says so (shown in the error).
  virtual bool supports(const OpNode& node, std::string& why) const = 0;

  /// Runs a node whose result or one of whose operands is stored in another kind than dense
  /// (OpNode::layout), each in its layout: asked only of a backend whose capabilities() list
  /// that kind. The default is for a backend that lists dense alone.
  virtual KernelCount run_structured(const KernelArgs<T>& args) {
    throw InternalError("tenex: the " + std::string(name()) + " backend was asked to run the " +
                        std::string(op_kind_name(args.node.kind)) + " node in the " +
                        storage_kind_name(args.node.layout) + " storage kind, which its capabilities do not list");
  }

  /// One line on how this backend runs `node`, for explain()'s plan text (the kernel or plan
  /// kind it would choose), or empty when there is nothing to add to the node's own text.
  virtual std::string describe(const OpNode& node) const {
    (void)node;
    return {};
  }
  /// What this backend ran on this thread since the last call (null: nothing to tell), kept
  /// with the last plan for explain(); asked once per set, so it must be cheap.
  virtual std::shared_ptr<const RunNotes> take_run_notes() { return nullptr; }

  /// What this backend can do besides the kernels supports() accepts.
  virtual BackendCapabilities capabilities() const { return {}; }
  /// A buffer of `bytes` on this backend's device (uninitialised).
  virtual Buffer allocate(std::size_t bytes) = 0;
  /// The value of a resolved `storage` on this backend's device, moved there if needed.
  virtual View<const T> read(Storage<T>& storage) = 0;
  /// Makes `buffer` (from allocate(), holding the value) the value of the pending `storage`.
  virtual void write(Storage<T>& storage, Buffer&& buffer) = 0;

  /// Copies between this backend's memory and the host, for a node that supports() declines
  /// and the CPU backend runs instead (a device backend moves the operands and the result).
  virtual void to_host(void* host, const void* data, std::size_t bytes) {
    if (bytes) std::memcpy(host, data, bytes);
  }
  virtual void from_host(void* data, const void* host, std::size_t bytes) {
    if (bytes) std::memcpy(data, host, bytes);
  }
  /// Called before a set's first node, and after its last node or its failure (streams,
  /// per-set bookkeeping); end_set adds what the backend counted to `stats`.
  virtual void begin_set() {}
  virtual void end_set(RunStats& stats) noexcept { (void)stats; }

  // The kernels, one per op kind; each default is for a kind the backend declines.
#define TENEX_BACKEND_METHOD(kind, arity, Params)                                   \
  virtual KernelCount run_##kind(const Params& params, const KernelArgs<T>& args) { \
    (void)params;                                                                   \
    return declined(args.node);                                                     \
  }
  TENEX_FOR_EACH_OP(TENEX_BACKEND_METHOD)
#undef TENEX_BACKEND_METHOD

  /// Runs the kernel of args.node's kind.
  KernelCount run(const KernelArgs<T>& args) {
    switch (args.node.kind) {
#define TENEX_BACKEND_DISPATCH(kind, arity, Params) \
  case OpKind::kind: return run_##kind(std::get<Params>(args.node.params), args);
      TENEX_FOR_EACH_OP(TENEX_BACKEND_DISPATCH)
#undef TENEX_BACKEND_DISPATCH
    }
    return {};
  }

 protected:
  /// The default kernel: a node of a kind this backend runs no kernel for reached it, which
  /// means its supports() accepted a kind it does not run.
  KernelCount declined(const OpNode& node) const {
    throw InternalError("tenex: the " + std::string(name()) + " backend accepted a " +
                        std::string(op_kind_name(node.kind)) + " node in supports() but runs no kernel for it (run_" +
                        std::string(op_kind_name(node.kind)) + ")");
  }
};

}  // namespace tenex::detail
