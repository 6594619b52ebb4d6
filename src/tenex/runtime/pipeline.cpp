// The pipeline: how a linked set runs, top to bottom.
//
//   build the graph -> passes -> dump if asked -> choose the backend -> check support ->
//   execute -> fulfil or fail the results
//
// A set shaped like one that ran before (a loop body) skips the first three steps: the plan
// cache (plan_cache.hpp) gives it that set's optimized graph, bound to its own tensors.
//
// The expression layer hands its sets here through the SetRunner it is given at load
// time, so no lower layer includes this one.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "tenex/backend/cpu/cpu_backend.hpp"
#include "tenex/backend/executor.hpp"
#include "tenex/backend/registry.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/callable_exception.hpp"
#include "tenex/error.hpp"
#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/expression/detail/lowering.hpp"
#include "tenex/graph/cost.hpp"
#include "tenex/graph/passes/passes.hpp"
#include "tenex/runtime/last_plan.hpp"
#include "tenex/runtime/plan_cache.hpp"
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

/// The CPU backend is built in; the others are plugins the registry loads when asked
/// (backend/plugins.hpp). Every backend enters the registry through register_backend.
void register_builtin_backends() {
  static const bool registered = (register_backend(cpu_backend_entry()), true);
  (void)registered;
}

template <class T>
void run_typed(SetRecord& set) {
  const auto start = std::chrono::steady_clock::now();
  const PipelineEnvironment env = pipeline_environment();  // TENEX_* read once per set
  check_backend_environment(env.backend);
  set_last_placement_notes({});
  // 0. The plan of a set of the same structure and extents, if one ran (not while dumping).
  //    What the passes read besides the set is part of the key.
  const std::size_t limit = memory_limit();
  std::string with_limit;
  if (limit != 0) with_limit = std::string(env.passes) + "|memory limit " + std::to_string(limit);
  const std::string_view settings = limit != 0 ? std::string_view(with_limit) : env.passes;
  SetKey key;
  const bool cacheable = env.plan_cache && env.dump_graph.empty() && make_set_key(set, settings, key);
  std::shared_ptr<const CachedPlan> plan = cacheable ? find_plan(key) : nullptr;
  const bool reused = plan != nullptr;
  std::optional<OpGraph> graph;
  double written_flops = plan ? plan->written_contraction_flops : -1;
  if (!plan) {
    graph = build_set_graph(set.dtype, set.assignments, set.sparse_maps);  // 1. build
    written_flops = chain_contraction_flops(*graph);                       //    (for explain())
    passes::optimize(*graph, limit);                                       // 2. passes
    dump_graph(*graph);                                                    // 3. dump if asked
    if (cacheable && (plan = make_cached_plan(key, *graph, written_flops))) remember_plan(key, plan);
  }
  // explain() describes this set from here on, whatever happens next: the cached plan, or
  // the graph (without its tensors) when this function is left.
  struct KeepPlan {
    const std::shared_ptr<const CachedPlan>& plan;
    std::optional<OpGraph>& graph;
    double written_flops;
    int exceptions = std::uncaught_exceptions();
    ~KeepPlan() {
      const bool completed = std::uncaught_exceptions() == exceptions;
      if (plan) {
        keep_last_plan(std::shared_ptr<const OpGraph>(plan, &plan->graph), written_flops, completed);
      } else if (graph) {
        keep_last_plan(*graph, written_flops, completed);
      }
    }
  } keep{plan, graph, written_flops};
  const BackendEntry& entry = choose_backend(set.backend);  // 4. choose the backend
  std::unique_ptr<Backend<T>> made;
  Backend<T>& backend = thread_backend<T>(entry, made);
  std::string declined;  // 5. ask what it supports: a backend that cannot evaluate sparse
  if (!accepts_sparse(plan ? plan->graph : *graph, backend, declined)) {  // maps runs them dense and masked
    graph.emplace(build_set_graph(set.dtype, set.assignments, set.sparse_maps));
    written_flops = chain_contraction_flops(*graph);
    std::vector<std::string_view> chosen =
        passes::selected_passes(env.passes == std::string_view("\0", 1) ? "" : env.passes);
    std::erase(chosen, std::string_view("sparse"));
    passes::optimize(*graph, chosen, limit);
    plan = nullptr;
  }
  set_last_sparse_note(declined);
  // A device backend hands what it declines (tenex::map's callables) to the CPU backend.
  std::unique_ptr<Backend<T>> made_host;
  Backend<T>* host = nullptr;
  if (backend.device() != Device::host) {
    if (const BackendEntry* cpu = find_backend(BackendKind::cpu)) host = &thread_backend<T>(*cpu, made_host);
  }
  set_last_placement_notes(check_supported(plan ? plan->graph : *graph, backend, host));     // 5. ask what it supports
  RunStats stats = plan ? execute(plan->graph, plan->schedule, key.storages, backend, host)  // 6. execute
                        : execute(*graph, backend, host);
  stats.plan_reused = reused;
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

bool any_pending(const SetRecord& set) {
  for (const Assignment& a : set.assignments) {
    const bool pending = set.dtype == DType::f32 ? static_cast<const Storage<float>*>(a.target.get())->pending()
                                                 : static_cast<const Storage<double>*>(a.target.get())->pending();
    if (pending) return true;
  }
  return false;
}

}  // namespace

namespace {

// Made when the library loads: the error a set gets when memory is so short that not even its
// message can be written.
const std::exception_ptr& out_of_memory_error() {
  static const std::exception_ptr error = std::make_exception_ptr(
      BackendError("tenex: out of memory while evaluating a set (not even the error's message could be written)"));
  return error;
}
const bool out_of_memory_error_made = (out_of_memory_error(), true);

/// The tenex::Error the exception being handled becomes (called in a catch block). An allocation
/// that fails anywhere in the pipeline is a BackendError on the set's results, never a crash.
std::exception_ptr error_of_current_exception(std::size_t statements) noexcept {
  try {
    try {
      throw;
    } catch (const CallableException& e) {
      return e.error;  // a tenex::map callable's own exception, for the reader (as std::future)
    } catch (const Error&) {
      return std::current_exception();
    } catch (const std::bad_alloc&) {
      return std::make_exception_ptr(
          BackendError("tenex: out of memory while building, optimizing or running the graph of a set of " +
                       std::to_string(statements) + " statements"));
    } catch (const std::exception& e) {
      return std::make_exception_ptr(InternalError(std::string("tenex: evaluation failed: ") + e.what()));
    } catch (...) {
      return std::make_exception_ptr(InternalError("tenex: evaluation failed with an unknown exception"));
    }
  } catch (...) {
    return out_of_memory_error();  // writing the message failed
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
  } catch (...) {
    error = error_of_current_exception(set.assignments.size());
  }
  // 7. Every target still pending gets the error (or, if none occurred, a broken invariant).
  if (!error && !any_pending(set)) return;
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
// the registry knows the built-in CPU backend before anyone asks.
const bool installed = (install_set_runner(&run_set), register_builtin_backends(), true);
}  // namespace

}  // namespace tenex::detail
