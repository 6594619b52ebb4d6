// tenex::explain: the plan of a set as text (docs/explain.md).
//
// explain(e) compiles e's linked set (its recorded statements, then e's value as one more
// output) with the function the pipeline runs sets with (compile.hpp): the same settings, the
// same backend choice, the same plan. explain() describes the plan the pipeline kept of the
// last set of this thread (keep_last_plan), without the tensors. One printer serves both:
// the plan's part of the text is the same, only the title and what a run measured differ.
#include "tenex/explain.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tenex/backend/backend.hpp"
#include "tenex/backend/registry.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/error.hpp"
#include "tenex/expression/assign_to.hpp"
#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/expression/detail/lowering.hpp"
#include "tenex/expression/detail/make.hpp"
#include "tenex/expression/expression.hpp"
#include "tenex/graph/cost.hpp"
#include "tenex/labels.hpp"
#include "tenex/runtime/compile.hpp"
#include "tenex/runtime/executor.hpp"
#include "tenex/runtime/last_plan.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex {

namespace detail {

namespace {

struct LastPlan {
  std::shared_ptr<const OpGraph> graph;
  double written_contraction_flops = 0;
  std::string sparse_note, placement_notes, unsupported;  // see Plan
  bool completed = false;                                 // the set ran to its end (stats are its own)
  RunStats stats;
  std::shared_ptr<const RunNotes> run_notes, host_run_notes;  // what the backends ran (Plan)
  const BackendEntry* backend = nullptr;                      // the backend that ran it
};

LastPlan& last_plan() {
  thread_local LastPlan plan;
  return plan;
}

/// "(i=30,k=40)" of a product's result, for the sparse line.
std::string product_text(const OpNode& node) {
  std::string text = "(";
  for (std::size_t i = 0; i < node.labels.size(); ++i) {
    if (i > 0) text += ',';
    text.append(node.labels[i]);
    text += '=';
    text.append(std::to_string(i < node.extents.size() ? node.extents[i] : 0));
  }
  text += ')';
  return text;
}

/// The line saying how the set's sparse maps are evaluated ("" when it has none).
std::string sparse_summary(const OpGraph& graph, const std::string& declined) {
  std::size_t restricted = 0, compact = 0;
  for (NodeId id = 0; id < graph.size(); ++id) {
    restricted += graph.node(id).pattern ? 1 : 0;
    compact += graph.node(id).blocks() ? 1 : 0;
  }
  if (restricted == 0) return "";
  if (!declined.empty()) return "sparse maps: evaluated dense and masked (" + declined + ")\n";
  if (compact == 0) {
    return "sparse maps: evaluated dense and masked (no node is sparse enough: more than half of its elements "
           "allowed, or allowed tuples that are not per-key products)\n";
  }
  std::string out = "sparse maps: " + std::to_string(compact) + (compact == 1 ? " node" : " nodes") +
                    " evaluated on their allowed elements only, stored as per-key blocks (a backend that cannot "
                    "declines and runs the set dense and masked)\n";
  // Each product that a map restricts: the CPU's choice and the estimate behind it.
  for (NodeId id = 0; id < graph.size(); ++id) {
    const OpNode& n = graph.node(id);
    const std::vector<NodeId>& ops = graph.operands(id);
    if (n.kind != OpKind::contract || ops.size() != 2) continue;
    const OpNode& a = graph.node(ops[0]);
    const OpNode& b = graph.node(ops[1]);
    if (!n.blocks() && !a.blocks() && !b.blocks()) continue;
    const SparseProductCost cost = sparse_product_cost(n.labels, n.pattern.get(), a.labels, a.pattern.get(), b.labels,
                                                       b.pattern.get(), n.extents, a.extents, b.extents);
    if (!cost.applies) continue;
    char text[400];
    std::snprintf(
        text, sizeof text,
        "sparse maps: product -> %s: %s (estimated %.3g s for %.2e allowed triples in %zu keys%s, against "
        "%.3g s for the dense GEMM's %.2e flops)\n",
        product_text(n).c_str(),
        cost.dense ? "dense GEMM on the expanded operands, allowed elements kept (the maps allow too much "
                     "for the per-key products to pay)"
                   : "per-key gathered products",
        cost.sparse_seconds, cost.triples, cost.keys,
        cost.grouped_keys ? (", " + std::to_string(cost.grouped_keys) + " grouped with equal domains").c_str() : "",
        cost.dense_seconds, cost.dense_flops);
    out += text;
  }
  return out;
}

/// "(i=30,k=40)"
std::string with_extents(const OpNode& node) {
  std::string text = "(";
  for (std::size_t i = 0; i < node.labels.size(); ++i) {
    if (i > 0) text += ',';
    text += is_new_mode_label(node.labels[i]) ? std::string("~") : node.labels[i];
    if (i < node.extents.size()) {
      text += '=';  // appended: "=" + std::to_string(...) is GCC 12's false -Wrestrict (bug 105329)
      text += std::to_string(node.extents[i]);
    }
  }
  return text + ")";
}

std::string format_ratio(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", value);
  return text;
}

std::string format_seconds(double seconds) {
  char text[32];
  if (seconds < 1e-3) {
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.3f s", seconds);
  }
  return text;
}

/// Rows of cells, each column padded to its widest cell; the first column right-aligned.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      line += c == 0 ? pad + row[c] : row[c] + (c + 1 < row.size() ? pad : std::string());
    }
    out += line + "\n";
  }
  return out;
}

struct Report {
  std::string title;
  const void* value = nullptr;  // storage of the output that stands for the value asked for
  // The plan's (see Plan):
  double written_contraction_flops = -1;
  std::string_view sparse_note, placement_notes, unsupported;
  std::string run;  // what running it measured: lines after the plan
  // The backend's line on how it runs a node (Backend::describe), null where none is asked.
  std::function<std::string(const OpNode&)> describe;
};

/// The kernel column of `node`'s row: the backend's description, else the cost model's kernel.
std::string kernel_text(const Report& report, const OpNode& node, const std::string& model_kernel) {
  if (!report.describe) return model_kernel;
  std::string said = report.describe(node);
  return said.empty() ? model_kernel : said;
}

/// Backend::describe of the backend of `entry` for the element type of `graph` (this thread's
/// backend, made if need be), or null.
std::function<std::string(const OpNode&)> describer(const BackendEntry* entry, const OpGraph& graph) {
  if (!entry || graph.size() == 0 || graph.node(0).dtype == DType::shape) return nullptr;
  return visit_dtype(graph.node(0).dtype, [&](auto zero) -> std::function<std::string(const OpNode&)> {
    using T = decltype(zero);
    if (!has_element_type<T>(*entry)) return nullptr;
    thread_local std::unique_ptr<Backend<T>> made;  // only once the thread's backends are gone
    const Backend<T>* backend = &thread_backend<T>(*entry, made);
    return [backend](const OpNode& node) { return backend->describe(node); };
  });
}

/// Plans with many contraction steps (a tensor network) list the costliest few of them,
/// not hundreds of rows: past `most_contraction_rows`, the other contractions and slices are
/// folded into one row.
constexpr std::size_t most_contraction_rows = 24, costliest_shown = 5;

void compact_rows(std::vector<std::vector<std::string>>& rows, const std::vector<double>& row_flops) {
  std::vector<std::size_t> contractions;
  for (std::size_t i = 0; i < row_flops.size(); ++i) {
    if (row_flops[i] >= 0) contractions.push_back(i);
  }
  if (contractions.size() <= most_contraction_rows) return;
  std::vector<std::size_t> costly = contractions;
  std::partial_sort(costly.begin(), costly.begin() + costliest_shown, costly.end(),
                    [&](std::size_t a, std::size_t b) { return row_flops[a] > row_flops[b]; });
  costly.resize(costliest_shown);
  std::vector<char> hidden(row_flops.size(), 0);
  double hidden_flops = 0;
  for (std::size_t i : contractions) {
    if (std::find(costly.begin(), costly.end(), i) == costly.end()) {
      hidden[i] = 1;
      hidden_flops += row_flops[i];
    }
  }
  std::vector<std::vector<std::string>> kept{rows[0]};
  bool folded = false;
  for (std::size_t i = 0; i < row_flops.size(); ++i) {
    if (!hidden[i]) {
      kept.push_back(std::move(rows[i + 1]));
    } else if (!folded) {
      kept.push_back({"...", std::to_string(contractions.size() - costliest_shown) + " more contraction steps",
                      "(the 5 costliest are listed)", "", format_count(hidden_flops), ""});
      folded = true;
    }
  }
  rows = std::move(kept);
}

/// The text of a plan: the title, then the plan's part, the same whether it is about to run
/// (explain(e)) or ran (explain()), then report.run.
std::string describe_plan(const OpGraph& graph, const Report& report) {
  const std::vector<std::string> names = tensor_names(graph);
  const std::vector<NodeId> order = schedule_of(graph).order;  // the executor's order
  std::vector<std::size_t> step_of(graph.size(), 0);
  std::vector<std::vector<std::string>> rows{{"step", "operation", "operands -> result", "kernel", "flops", "result"}};
  double flops = 0;
  std::size_t kernels = 0, steps = 0, outputs = 0;
  std::size_t largest = 0;
  NodeId largest_id = graph.size();
  const char* dtype = "double";
  std::vector<double> row_flops;  // by row after the header: a contraction's (or slice's) flops, else -1
  std::string trees;              // the order pass's notes on the trees it chose
  for (NodeId id : order) {
    const OpNode& node = graph.node(id);
    dtype = dtype_name(node.dtype);
    if (node.kind == OpKind::input) continue;
    step_of[id] = ++steps;
    const NodeCost cost = node_cost(graph, id);
    flops += cost.flops;
    kernels += cost.kernels;
    std::string operands;
    for (NodeId op : graph.operands(id)) {
      const OpNode& o = graph.node(op);
      const std::string name = o.kind == OpKind::input ? (names[op].empty() ? std::string("shape") : names[op])
                                                       : "#" + std::to_string(step_of[op]);
      operands += (operands.empty() ? "" : " ") + name + with_extents(o);
    }
    std::string result = with_extents(node);
    if (node.kind == OpKind::output) {
      ++outputs;
      result = (graph.binding(id).get() == report.value ? std::string("value") : names[id]) + result;
    } else {
      if (packed_factor_count(node.kind) > 0) result += " packed";
      if (cost.bytes > largest || largest_id == graph.size()) {
        largest = cost.bytes;
        largest_id = id;
      }
    }
    std::string size = std::to_string(node.elements) + " elements, " + format_bytes(cost.bytes);
    if (node.pattern) {
      size += ", " + format_fraction(node.pattern->fraction()) + " allowed" + (node.blocks() ? " (blocks)" : "");
    }
    rows.push_back({std::to_string(steps), std::string(op_kind_name(node.kind)) + describe_params(node.params),
                    operands + " -> " + result, kernel_text(report, node, cost.kernel), format_count(cost.flops),
                    size});
    row_flops.push_back(node.kind == OpKind::contract || node.kind == OpKind::slice ? cost.flops : -1);
    if (node.note.rfind("tree of ", 0) == 0) trees += "contraction " + node.note + "\n";
  }
  compact_rows(rows, row_flops);

  std::string out = report.title + " (" + dtype + "): " + std::to_string(steps) + " steps, " + std::to_string(outputs) +
                    (outputs == 1 ? " result" : " results") + "\n";
  out += table(rows);
  out += "total: " + format_count(flops) + " flops in " + std::to_string(kernels) +
         (kernels == 1 ? " kernel" : " kernels") + "\n";
  if (largest_id < graph.size()) {
    out += "largest intermediate: " + format_bytes(largest) + " (step " + std::to_string(step_of[largest_id]) + ", " +
           with_extents(graph.node(largest_id)) + ")\n";
  } else {
    out += "largest intermediate: none\n";
  }
  // The products as built, before the passes, and everything else as planned.
  const double written = report.written_contraction_flops < 0
                             ? flops
                             : flops - contraction_flops(graph) + report.written_contraction_flops;
  out += "written order: " + format_count(written) + " flops (products as built, before the passes)";
  if (flops > 0) out += "; theoretical speed-up " + format_ratio(written / flops);
  out += "\n";
  out += trees;
  out += sparse_summary(graph, std::string(report.sparse_note));
  out += report.placement_notes;
  if (!report.unsupported.empty()) out += "the backend cannot run this plan: " + std::string(report.unsupported) + "\n";
  out += report.run;
  return out;
}

}  // namespace

void keep_last_plan(Plan&& plan, bool completed) noexcept {
  LastPlan& last = last_plan();
  std::shared_ptr<const OpGraph> kept;
  if (plan.cached) {
    kept = std::shared_ptr<const OpGraph>(plan.cached, &plan.cached->graph);
  } else if (plan.graph) {
    // Tensors are told apart by their storage's address only: pointers that own nothing.
    OpGraph& graph = *plan.graph;
    for (NodeId id = 0; id < graph.size(); ++id) {
      const std::shared_ptr<void>& value = graph.binding(id);
      if (value) graph.bind(id, std::shared_ptr<void>(std::shared_ptr<void>(), value.get()));
    }
    try {
      kept = std::make_shared<const OpGraph>(std::move(graph));
    } catch (...) {  // out of memory: explain() shows no plan rather than a wrong one
    }
  }
  last.run_notes = std::move(plan.run_notes);
  last.host_run_notes = std::move(plan.host_run_notes);
  last.backend = plan.backend;
  last.completed = completed;
  last.stats = completed ? last_run_stats() : RunStats{};
  last.written_contraction_flops = plan.written_contraction_flops;
  last.sparse_note.swap(plan.sparse_note);
  last.placement_notes.swap(plan.placement_notes);
  last.unsupported.swap(plan.unsupported);
  last.graph = std::move(kept);
}

}  // namespace detail

std::string explain() {
  const detail::LastPlan& plan = detail::last_plan();
  if (!plan.graph) {
    return "tenex plan: no set has been evaluated on this thread yet; explain(e) shows the plan an expression "
           "would run\n";
  }
  const OpGraph& graph = *plan.graph;
  detail::Report report;
  report.title = "tenex plan of the last set evaluated on this thread";
  report.written_contraction_flops = plan.written_contraction_flops;
  report.sparse_note = plan.sparse_note;
  report.placement_notes = plan.placement_notes;
  report.unsupported = plan.unsupported;
  if (!plan.completed) {
    report.run = "the set failed while running; see the error its results carry\n";
  } else if (plan.stats.seconds > 0) {
    report.run = "measured: " + detail::format_seconds(plan.stats.seconds) + ", " +
                 detail::format_count(plan.stats.flops) + " flops counted by the backend in " +
                 std::to_string(plan.stats.kernels) + " kernel calls, peak of intermediates " +
                 detail::format_bytes(plan.stats.peak_bytes) + "\n";
    if (plan.stats.device_peak_bytes > 0 || plan.stats.host_to_device_bytes > 0) {
      report.run += "device: peak " + detail::format_bytes(plan.stats.device_peak_bytes) + ", copied to the device " +
                    detail::format_bytes(plan.stats.host_to_device_bytes) + ", back during the set " +
                    detail::format_bytes(plan.stats.device_to_host_bytes) + "\n";
    }
  }
  // What the backends say they ran (the CPU: the plan each contraction ran, and why).
  if (plan.run_notes) report.run += plan.run_notes->text();
  if (plan.host_run_notes) report.run += plan.host_run_notes->text();
  report.describe = detail::describer(plan.backend, graph);
  return detail::describe_plan(graph, report);
}

namespace detail {
namespace {

/// What explain(e) and plan_of(e) describe: e's set compiled as the pipeline compiles it, with
/// e's value written to a stand-in target, without running it or touching the plan cache.
template <class T>
void compile_for_explain(const Expression<T>& e, Plan& plan, Report& report) {
  const Handle& handle = require_handle(Access::handle(e));
  const std::shared_ptr<LinkedState> root = LinkedState::root(handle.state);
  // The set's statements, then e's value written to a stand-in target that no one reads.
  // A statement (AssignTo) is already among them: its plan is the set's.
  std::vector<Assignment> batch = root->recorded();
  const bool statement = dynamic_cast<const AssignTo<T>*>(&e) != nullptr;
  static const auto stand_in = std::make_shared<char>(0);
  std::string what = "the statement";
  if (!statement) {
    const NodePtr value = einstein_operand(operand_node(e));
    OpNode shown;
    shown.labels = value->labels;
    shown.extents = value->extents;
    what = std::string(e.name()) + " " + with_extents(shown);
    Assignment asked;
    asked.rhs = value;
    asked.rhs_labels = value->labels;
    asked.target_labels = value->labels;
    asked.target = stand_in;
    batch.push_back(std::move(asked));
  }
  SetRecord set;
  set.dtype = dtype_of<T>();
  root->backend(set);
  set.assignments = std::move(batch);
  set.sparse_maps = root->sparse_maps();
  CompileSettings settings = compile_settings();
  settings.env.plan_cache = false;
  check_backend_environment(settings.env.backend);
  resolve_backend(set, settings);
  const BackendEntry& entry = choose_backend(set.backend);
  visit_dtype(set.dtype, [&](auto zero) {
    SetBackends<decltype(zero)> backends;
    set_backends(entry, backends);
    plan = compile(set, backends, settings);
  });
  report.describe = describer(plan.backend, plan.optimized());
  const std::size_t statements = statement ? set.assignments.size() : set.assignments.size() - 1;
  report.title = "tenex plan of " + what;
  if (statement) {
    if (statements > 1) report.title += " and the " + std::to_string(statements - 1) + " others of its set";
  } else if (statements > 0) {
    report.title += " with the " + std::to_string(statements) + (statements == 1 ? " statement" : " statements") +
                    " its set has recorded";
  }
  report.value = stand_in.get();
  report.written_contraction_flops = plan.written_contraction_flops;
  report.sparse_note = plan.sparse_note;
  report.placement_notes = plan.placement_notes;
  report.unsupported = plan.unsupported;
}

/// The steps of a plan in the executor's order, as describe_plan lists them.
std::vector<PlanStep> plan_steps(const OpGraph& graph, const Report& report) {
  const std::vector<std::string> names = tensor_names(graph);
  const std::vector<NodeId> order = schedule_of(graph).order;
  std::vector<std::size_t> step_of(graph.size(), 0);
  std::vector<PlanStep> steps;
  for (NodeId id : order) {
    const OpNode& node = graph.node(id);
    if (node.kind == OpKind::input) continue;
    step_of[id] = steps.size() + 1;
    const NodeCost cost = node_cost(graph, id);
    PlanStep step;
    step.operation = std::string(op_kind_name(node.kind)) + describe_params(node.params);
    step.kernel = kernel_text(report, node, cost.kernel);
    for (NodeId op : graph.operands(id)) {
      const OpNode& o = graph.node(op);
      step.operands.push_back((o.kind == OpKind::input ? (names[op].empty() ? std::string("shape") : names[op])
                                                       : "#" + std::to_string(step_of[op])) +
                              with_extents(o));
    }
    step.result =
        (node.kind == OpKind::output ? (graph.binding(id).get() == report.value ? std::string("value") : names[id])
                                     : std::string()) +
        with_extents(node);
    step.flops = cost.flops;
    step.bytes = cost.bytes;
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace
}  // namespace detail

template <class T>
std::string explain(const Expression<T>& e) {
  (void)detail::require_handle(detail::Access::handle(e));
  if constexpr (std::is_same_v<T, Shape>) {
    return "tenex plan: a Shape expression computes shapes only and runs nothing; its result is " + e.to_string() +
           "\n";
  } else {
    detail::Plan plan;
    detail::Report report;
    detail::compile_for_explain(e, plan, report);
    return detail::describe_plan(plan.optimized(), report);
  }
}

template <class T>
std::vector<PlanStep> plan_of(const Expression<T>& e) {
  (void)detail::require_handle(detail::Access::handle(e));
  if constexpr (std::is_same_v<T, Shape>) {
    return {};  // a Shape expression runs nothing
  } else {
    detail::Plan plan;
    detail::Report report;
    detail::compile_for_explain(e, plan, report);
    return detail::plan_steps(plan.optimized(), report);
  }
}

#define TENEX_INSTANTIATE_EXPLAIN(T)                               \
  template TENEX_API std::string explain<T>(const Expression<T>&); \
  template TENEX_API std::vector<PlanStep> plan_of<T>(const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_EXPLAIN)
#undef TENEX_INSTANTIATE_EXPLAIN

}  // namespace tenex
