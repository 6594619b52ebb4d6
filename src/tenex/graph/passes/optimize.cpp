// The passes, in the order they run, and TENEX_PASSES, which chooses among them.
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "tenex/error.hpp"
#include "tenex/graph/passes/passes.hpp"
#include "tenex/labels.hpp"
#include "tenex/settings.hpp"

namespace tenex::passes {

namespace {

/// Throws ShapeError naming the first node with more elements than std::size_t counts: a
/// product's intermediate as written may be (OpGraph::add_node lets it be), until the order
/// pass replaces it; one still there when the set runs is refused here.
void check_countable(const OpGraph& graph) {
  for (NodeId id = 0; id < graph.size(); ++id) {
    const OpNode& n = graph.node(id);
    std::size_t count = 1;
    for (std::size_t e : n.extents) {
      if (e != 0 && count > std::numeric_limits<std::size_t>::max() / e) {
        throw ShapeError("tenex: the intermediate " + std::string(op_kind_name(n.kind)) + " (\"" +
                         detail::join_labels(n.labels) + "\") " + detail::format_extents(n.extents) +
                         " of the order that runs has more elements than std::size_t can count");
      }
      count *= e;
    }
  }
}

struct Pass {
  std::string_view name;
  void (*run)(OpGraph&, std::size_t memory_limit);
};

// The optional passes in order. Masks (sparse maps), pruning and validation always run:
// results depend on the first, and the others change nothing a user can see.
constexpr Pass kPasses[] = {
    {"cse", [](OpGraph& g, std::size_t) { eliminate_common_subexpressions(g); }},
    {"order", [](OpGraph& g, std::size_t limit) { order_contractions(g, limit); }},
    {"cse", [](OpGraph& g, std::size_t) { eliminate_common_subexpressions(g); }},
    {"fold_scales", [](OpGraph& g, std::size_t) { fold_scales(g); }},
    {"gemm_beta", [](OpGraph& g, std::size_t) { fold_gemm_beta(g); }},
    {"slice", [](OpGraph& g, std::size_t limit) { slice_contractions(g, limit); }},
    {"collapse", [](OpGraph& g, std::size_t) { collapse_chains(g); }},
    {"fuse", [](OpGraph& g, std::size_t) { fuse_elementwise(g); }},
    {"fold_scales", [](OpGraph& g, std::size_t) { fold_conjugations(g); }},
    {"sparse", nullptr},  // after the masks: see optimize()
};

}  // namespace

std::vector<std::string_view> pass_names() {
  std::vector<std::string_view> names;
  for (const Pass& p : kPasses) {
    bool seen = false;
    for (std::string_view n : names) seen = seen || n == p.name;
    if (!seen) names.push_back(p.name);
  }
  return names;
}

std::vector<std::string_view> selected_passes(std::string_view setting) {
  const std::vector<std::string_view> all = pass_names();
  if (setting.empty() || setting == "all") return all;
  if (setting == "none") return {};
  std::vector<std::string_view> chosen;
  std::size_t start = 0;
  while (start <= setting.size()) {
    std::size_t end = setting.find(',', start);
    if (end == std::string_view::npos) end = setting.size();
    std::string_view name = setting.substr(start, end - start);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    bool known = false;
    for (std::string_view n : all) known = known || n == name;
    if (!known) {
      std::string list;
      for (std::string_view n : all) list += (list.empty() ? "" : ", ") + std::string(n);
      throw Error("tenex: TENEX_PASSES=" + std::string(setting) + ": unknown pass \"" + std::string(name) +
                  "\"; use none, all, or a comma-separated list of: " + list);
    }
    chosen.push_back(name);
    start = end + 1;
  }
  return chosen;
}

void optimize(OpGraph& graph, const std::vector<std::string_view>& chosen, std::size_t memory_limit,
              const SparseSupport& sparse_support, std::string* declined) {
  bool sparse = false;
  for (const Pass& p : kPasses) {
    for (std::string_view n : chosen) {
      if (n == p.name && !p.run) sparse = true;
      if (n == p.name && p.run) {
        p.run(graph, memory_limit);
        break;
      }
    }
  }
  insert_masks(graph);
  graph.prune();
  check_countable(graph);
  propagate_sparsity(graph);
  if (sparse) plan_sparse_evaluation(graph, sparse_support, declined);
  graph.validate();
}

void optimize(OpGraph& graph, std::size_t memory_limit) {
  const char* passes = tenex::detail::setting(tenex::detail::Setting::passes);
  optimize(graph, selected_passes(passes ? passes : ""), memory_limit);
}

}  // namespace tenex::passes
