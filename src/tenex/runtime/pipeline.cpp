// The pipeline: how a linked set runs, top to bottom.
//
//   read the settings -> choose the backend -> compile (build the graph, the passes asking
//   the backend what it supports, check every node) -> dump if asked -> execute -> fulfil
//   or fail the results
//
// compile (compile.hpp) is the function explain(e) calls too, so explain shows what runs. A
// set shaped like one that ran before (a loop body) gets that set's plan from the plan cache
// (plan_cache.hpp), bound to its own tensors.
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

#include "tenex/backend/cpu/shared_machine.hpp"
#include "tenex/backend/registry.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/callable_exception.hpp"
#include "tenex/error.hpp"
#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/runtime/compile.hpp"
#include "tenex/runtime/executor.hpp"
#include "tenex/runtime/last_plan.hpp"
#include "tenex/runtime/plan_cache.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail {

namespace {

/// TENEX_DUMP_GRAPH=DIR (`dir`, as the set's settings read it): the optimized graph of each
/// set in DIR/set-N.dot. A missing folder is created; one that cannot be made or written is an
/// error of the set.
void dump_graph(const OpGraph& graph, std::string_view dir) {
  if (dir.empty()) return;
  static std::atomic<unsigned long long> counter{0};
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path folder(dir);
  fs::create_directories(folder, error);
  if (error || !fs::is_directory(folder)) {
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

template <class T>
void run_typed(SetRecord& set) {
  const auto start = std::chrono::steady_clock::now();
  // On a machine whose cores other processes hold, the set runs on one thread (planned so too).
  const cpu::SharedMachineThreads threads;
  const CompileSettings settings = compile_settings();  // 1. the settings, read once per set
  check_backend_environment(settings.env.backend);
  resolve_backend(set, settings);
  SetBackends<T> backends;
  set_backends(choose_backend(set.backend), backends);  // 2. choose the backend
  Plan plan = compile(set, backends, settings);         // 3. compile (or the plan cache's plan)
  // explain() describes this plan from here on, whatever happens next.
  struct KeepPlan {
    Plan& plan;
    SetBackends<T>& backends;
    int exceptions = std::uncaught_exceptions();
    ~KeepPlan() {
      try {
        plan.run_notes = backends.backend->take_run_notes();
        if (backends.host) plan.host_run_notes = backends.host->take_run_notes();
      } catch (...) {  // out of memory: explain() tells less
      }
      keep_last_plan(std::move(plan), std::uncaught_exceptions() == exceptions);
    }
  } keep{plan, backends};
  if (plan.graph)
    dump_graph(*plan.graph, settings.env.dump_graph);  // 4. dump if asked (a dump turns the plan cache off)
  if (!plan.unsupported.empty()) throw BackendError(plan.unsupported);
  RunStats stats = plan.cached ? execute(plan.cached->graph, plan.cached->schedule, plan.storages,  // 5. execute
                                         settings.memory_limit, *backends.backend, backends.host)
                               : execute(*plan.graph, settings.memory_limit, *backends.backend, backends.host);
  stats.plan_reused = plan.reused;
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
    const bool pending = visit_dtype(
        set.dtype, [&](auto zero) { return static_cast<const Storage<decltype(zero)>*>(a.target.get())->pending(); });
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
    visit_dtype(set.dtype, [&](auto zero) { run_typed<decltype(zero)>(set); });
  } catch (...) {
    error = error_of_current_exception(set.assignments.size());
  }
  // 6. Every target still pending gets the error (or, if none occurred, a broken invariant).
  if (!error && !any_pending(set)) return;
  if (!error) error = std::make_exception_ptr(InternalError("tenex: a result of the set was never written"));
  try {
    visit_dtype(set.dtype, [&](auto zero) { fail_pending<decltype(zero)>(set.assignments, error); });
  } catch (...) {
  }
}

namespace {
// Installed when the library loads: the linked state runs its sets through run_set, and
// the registry knows the built-in CPU backend before anyone asks.
const bool installed = (install_set_runner(&run_set), true);
}  // namespace

}  // namespace tenex::detail
