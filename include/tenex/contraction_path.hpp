// tenex/contraction_path.hpp — the contraction tree tenex would choose for a product of many
// factors, without evaluating it (docs/networks.md). The same optimizer orders every product
// a set evaluates; this asks it directly, as opt_einsum.contract_path does.
//
//   auto info = tenex::contract_path({{"a", "b"}, {"b", "c"}, {"c", "d"}}, {"a", "d"},
//                                    {{"a", 8}, {"b", 16}, {"c", 16}, {"d", 8}});
//   info.path;       // {{0, 1}, {0, 1}}: opt_einsum's linear form
//   info.opt_cost;   // flops, opt_einsum's convention (the total explain() reports)
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tenex/export.hpp"

namespace tenex {

struct ContractPathOptions {
  /// "auto" (the default), "greedy", "dp" (exact; networks of at most 16 factors) or "hyper"
  /// (greedy restarts, bisection and reconfiguration for the whole budget).
  std::string optimize = "auto";
  /// The search budget in seconds; < 0: TENEX_ORDER_BUDGET or the default rule.
  double seconds = -1;
  /// Elements the largest intermediate may hold (0: no limit); beyond it labels are sliced.
  double memory_limit = 0;
};

struct ContractPathInfo {
  std::vector<std::pair<std::size_t, std::size_t>> path;      // opt_einsum's linear form
  std::vector<std::pair<std::size_t, std::size_t>> ssa_path;  // inputs 0..n-1, step i makes n + i
  double opt_cost = 0;                                        // flops of the path (all slices together)
  double naive_cost = 0;            // flops of one loop over every label (opt_einsum's naive_cost)
  double largest_intermediate = 0;  // elements (of one slice when sliced)
  double peak = 0;                  // elements of intermediates held at once (one slice)
  std::vector<std::string> sliced;  // labels sliced to fit memory_limit
  double slices = 1;                // the number of slices
  std::string method;               // which method found the path
  double seconds = 0;               // search time
  std::string text() const;         // a table like opt_einsum's PathInfo
};

/// `inputs`: each factor's labels; `output`: the result's; `extents`: every label's extent.
/// A label may be shared by any number of factors (a hyper-index). ShapeError for a label
/// without an extent, an output label no input holds, or a result that cannot be counted.
TENEX_API ContractPathInfo contract_path(const std::vector<std::vector<std::string>>& inputs,
                                         const std::vector<std::string>& output,
                                         const std::map<std::string, std::size_t>& extents,
                                         const ContractPathOptions& options = {});

}  // namespace tenex
