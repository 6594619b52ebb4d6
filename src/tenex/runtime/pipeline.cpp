// The pipeline: how a linked set runs, top to bottom.
//
//   build the graph -> passes -> dump if asked -> choose the backend -> check support ->
//   execute -> fulfil or fail the results
//
// The expression layer hands its sets here through the SetRunner it is given at load
// time, so no lower layer includes this one.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "tenex/backend/cpu/cpu_backend.hpp"
#include "tenex/backend/executor.hpp"
#include "tenex/backend/registry.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/error.hpp"
#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/expression/detail/lowering.hpp"
#include "tenex/graph/cost.hpp"
#include "tenex/graph/passes/passes.hpp"
#include "tenex/runtime/last_plan.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail {

namespace {

/// TENEX_DUMP_GRAPH=DIR: the optimized graph of each set in DIR/set-N.dot. A missing
/// folder is created; one that cannot be made or written is an error of the set.
void dump_graph(const OpGraph& graph) {
  const char* dir = std::getenv("TENEX_DUMP_GRAPH");
  if (!dir || !*dir) return;
  static std::atomic<unsigned long long> counter{0};
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    throw Error("tenex: TENEX_DUMP_GRAPH=" + std::string(dir) + ": cannot create the folder" +
                (error ? " (" + error.message() + ")" : std::string(" (a file of that name exists)")) +
                "; name a writable folder or unset TENEX_DUMP_GRAPH");
  }
  const std::string path = std::string(dir) + "/set-" + std::to_string(counter.fetch_add(1)) + ".dot";
  std::ofstream out(path);
  out << graph.to_dot();
  if (!out) {
    throw Error("tenex: TENEX_DUMP_GRAPH: cannot write " + path + "; name a writable folder or unset TENEX_DUMP_GRAPH");
  }
}

void register_builtin_backends() {
  static const bool registered = [] {
    register_backend(cpu_backend_entry());
    return true;
  }();
  (void)registered;
}

template <class T>
void run_typed(SetRecord& set) {
  const auto start = std::chrono::steady_clock::now();
  check_backend_environment();
  OpGraph graph = build_set_graph(set.dtype, set.assignments, set.sparse_maps);  // 1. build
  const double written_flops = chain_contraction_flops(graph);                   //    (for explain())
  passes::optimize(graph, memory_limit());                                       // 2. passes
  // explain() describes this set from here on, whatever happens next (the graph, without
  // its tensors, moves to the thread's last plan when this function is left).
  struct KeepPlan {
    OpGraph& graph;
    double written_flops;
    int exceptions = std::uncaught_exceptions();
    ~KeepPlan() { keep_last_plan(graph, written_flops, std::uncaught_exceptions() == exceptions); }
  } keep{graph, written_flops};
  dump_graph(graph);                                        // 3. dump if asked
  const BackendEntry& entry = choose_backend(set.backend);  // 4. choose the backend
  std::unique_ptr<Backend<T>> backend = make_backend<T>(entry);
  check_supported(graph, *backend);           // 5. ask what it supports
  RunStats stats = execute(graph, *backend);  // 6. execute
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  set_last_run_stats(stats);
}

template <class T>
void fail_pending(std::vector<Assignment>& batch, const std::exception_ptr& error) {
  for (Assignment& a : batch) {
    auto storage = std::static_pointer_cast<Storage<T>>(a.target);
    if (storage->pending()) storage->fulfil(error);
  }
}

}  // namespace

/// Runs one set; every result is fulfilled, with the set's error when it failed.
void run_set(SetRecord& set) noexcept {
  if (set.dtype == DType::shape) return;
  std::exception_ptr error;
  try {
    if (set.dtype == DType::f32) {
      run_typed<float>(set);
    } else {
      run_typed<double>(set);
    }
  } catch (const Error&) {
    error = std::current_exception();
  } catch (const std::bad_alloc&) {
    error = std::make_exception_ptr(
        BackendError("tenex: out of memory while building or optimizing the graph of a set of " +
                     std::to_string(set.assignments.size()) + " statements"));
  } catch (const std::exception& e) {
    error = std::make_exception_ptr(InternalError(std::string("tenex: evaluation failed: ") + e.what()));
  } catch (...) {
    error = std::make_exception_ptr(InternalError("tenex: evaluation failed with an unknown exception"));
  }
  // 7. Every target still pending gets the error (or, if none occurred, a broken invariant).
  if (!error) error = std::make_exception_ptr(InternalError("tenex: a result of the set was never written"));
  try {
    if (set.dtype == DType::f32) {
      fail_pending<float>(set.assignments, error);
    } else {
      fail_pending<double>(set.assignments, error);
    }
  } catch (...) {
  }
}

namespace {
// Installed when the library loads: the linked state runs its sets through run_set, and
// the registry knows the built-in backends before anyone asks (cuda_available()).
const bool installed = (install_set_runner(&run_set), register_builtin_backends(), true);
}  // namespace

}  // namespace tenex::detail
