#include "tenex/runtime/compile.hpp"

#include <string>
#include <utility>

#include "tenex/backend/registry.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/error.hpp"
#include "tenex/expression/detail/lowering.hpp"
#include "tenex/graph/cost.hpp"
#include "tenex/graph/passes/passes.hpp"
#include "tenex/runtime/executor.hpp"

namespace tenex::detail {

CompileSettings compile_settings() {
  CompileSettings settings;
  settings.env = set_settings();
  settings.memory_limit = memory_limit(settings.env.memory_limit);
  return settings;
}

void resolve_backend(SetRecord& set, const CompileSettings& settings) {
  if (!set.backend_from_environment) return;
  set.backend = environment_backend(settings.env.backend);
  set.backend_from_environment = false;
}

namespace {

/// The sparse pass's question (passes::SparseSupport): whether `backend` holds values as
/// blocks (its storage kinds) and runs `node` at all.
template <class T>
bool stores_blocks(const Backend<T>& backend, const OpNode& node, std::string& why) {
  const StorageKinds kinds = backend.capabilities().storage_kinds;
  if (!kinds.contains(StorageKind::blocks)) {
    why = "the " + std::string(backend.name()) +
          " backend evaluates sparse maps dense and masked (its storage kinds: " + kinds.text() + ")";
    return false;
  }
  return backend.supports(node, why);
}

}  // namespace

template <class T>
void set_backends(const BackendEntry& chosen, SetBackends<T>& out) {
  // A backend without this element type (complex on the CUDA backend) leaves the set to the
  // CPU; one that declines a node has the CPU run it, where it says it may (host_fallback).
  const BackendEntry* cpu = find_backend(BackendKind::cpu);
  const BackendEntry& entry = has_element_type<T>(chosen) ? chosen : *cpu;
  out.entry = &entry;
  out.backend = &thread_backend<T>(entry, out.made);
  out.host = nullptr;
  if (&entry != cpu && out.backend->capabilities().host_fallback) out.host = &thread_backend<T>(*cpu, out.made_host);
}

template <class T>
Plan compile(const SetRecord& set, const SetBackends<T>& backends, const CompileSettings& settings) {
  Plan plan;
  plan.backend = backends.entry;
  const char* passes = settings.env.passes;
  // What the passes read besides the set joins the plan cache's key (not while dumping: a dump
  // shows the graph each set builds). An unset TENEX_PASSES is keyed as a NUL, which no value
  // can hold, so that a short key stays in the string's own buffer (no allocation per set).
  std::string read = passes ? std::string(passes) : std::string(1, '\0');
  read += "|";
  read += backends.entry->name;
  if (settings.memory_limit != 0) read += "|memory limit " + std::to_string(settings.memory_limit);
  if (!settings.env.order.empty() || !settings.env.order_budget.empty()) {
    read += "|order " + std::string(settings.env.order) + " " + std::string(settings.env.order_budget);
  }
  SetKey key;
  // The key is written into this thread's buffer of the last key (grown once, not allocated
  // and zeroed per set); a set run inside this one (a tenex::map callable's) takes another.
  thread_local std::string spare_bytes;
  key.bytes.swap(spare_bytes);
  struct GiveBack {
    std::string& spare;
    std::string& bytes;
    ~GiveBack() { spare.swap(bytes); }
  } give_back{spare_bytes, key.bytes};
  const bool cacheable = settings.env.plan_cache && settings.env.dump_graph.empty() && make_set_key(set, read, key);
  if (cacheable) plan.cached = find_plan(key);
  if (plan.cached) {
    plan.reused = true;
    plan.storages = std::move(key.storages);
    plan.written_contraction_flops = plan.cached->written_contraction_flops;
    plan.sparse_note = plan.cached->sparse_note;
    plan.placement_notes = plan.cached->placement_notes;
    return plan;
  }

  // Build, then the passes, asking the backend what it evaluates sparsely.
  plan.graph.emplace(build_set_graph(set.dtype, set.assignments, set.sparse_maps));
  OpGraph& graph = *plan.graph;
  plan.written_contraction_flops = chain_contraction_flops(graph);
  const Backend<T>& backend = *backends.backend;
  passes::optimize(
      graph, passes::selected_passes(passes ? passes : ""), settings.memory_limit,
      [&backend](const OpNode& node, std::string& why) { return stores_blocks(backend, node, why); },
      &plan.sparse_note);
  // Every node: the backend's, or (a device backend's declined node) the host's.
  try {
    plan.placement_notes = check_supported(graph, backend, backends.host);
  } catch (const BackendError& e) {
    plan.unsupported = e.what();
    return plan;
  }
  if (cacheable) {
    plan.cached = make_cached_plan(key, graph, plan.written_contraction_flops, plan.sparse_note, plan.placement_notes);
    if (plan.cached) {
      remember_plan(key, plan.cached);
      plan.storages = std::move(key.storages);
      plan.graph.reset();
    }
  }
  return plan;
}

#define TENEX_INSTANTIATE_COMPILE(T)                                   \
  template void set_backends<T>(const BackendEntry&, SetBackends<T>&); \
  template Plan compile<T>(const SetRecord&, const SetBackends<T>&, const CompileSettings&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_COMPILE)
#undef TENEX_INSTANTIATE_COMPILE

}  // namespace tenex::detail
