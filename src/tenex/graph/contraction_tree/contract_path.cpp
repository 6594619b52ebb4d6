// tenex::contract_path: the optimizer asked directly (include/tenex/contraction_path.hpp).
#include "tenex/contraction_path.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "tenex/error.hpp"
#include "tenex/graph/contraction_tree/methods.hpp"

namespace tenex {

namespace {

tree::Method method_named(const std::string& name) {
  if (name == "auto") return tree::Method::automatic;
  if (name == "greedy") return tree::Method::greedy;
  if (name == "dp" || name == "optimal") return tree::Method::dp;
  if (name == "hyper") return tree::Method::hyper;
  throw Error("tenex::contract_path: optimize=\"" + name + "\" is not one of auto, greedy, dp, optimal, hyper");
}

double linear(double log2) { return log2 < -1e299 ? 0 : log2 >= 1024 ? HUGE_VAL : std::exp2(log2); }

std::string format(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, v < 1e6 ? "%.0f" : "%.3e", v);
  return buffer;
}

void check_inputs(const std::vector<std::vector<std::string>>& inputs, const std::vector<std::string>& output,
                  const std::map<std::string, std::size_t>& extents) {
  std::set<std::string> held;
  for (const auto& labels : inputs) {
    for (const std::string& l : labels) {
      if (!extents.count(l)) throw ShapeError("tenex::contract_path: the label \"" + l + "\" has no extent");
      held.insert(l);
    }
  }
  double log2_result = 0;
  for (const std::string& l : output) {
    if (!held.count(l)) throw ShapeError("tenex::contract_path: the output label \"" + l + "\" is on no input");
    const std::size_t e = extents.at(l);
    log2_result += e == 0 ? 0 : std::log2(static_cast<double>(e));
  }
  if (log2_result >= 64) {
    throw ShapeError("tenex::contract_path: the result has more elements than std::size_t can count");
  }
}

/// opt_einsum's naive cost: one loop over every label, (terms - 1) products, and one more
/// when some label is on two inputs (opt_einsum's `inner_product`).
double naive_cost(const tree::Network& network) {
  double log2_all = 0;
  std::size_t occurrences = 0;
  for (std::size_t l = 0; l < network.labels(); ++l) log2_all += network.log2_extent[l];
  for (const auto& input : network.inputs) occurrences += input.size();
  const bool inner = occurrences > network.labels();
  const double terms = static_cast<double>(std::max<std::size_t>(network.size(), 2) - 1) + (inner ? 1 : 0);
  return linear(log2_all) * terms;
}

}  // namespace

ContractPathInfo contract_path(const std::vector<std::vector<std::string>>& inputs,
                               const std::vector<std::string>& output,
                               const std::map<std::string, std::size_t>& extents, const ContractPathOptions& options) {
  if (inputs.empty()) throw ShapeError("tenex::contract_path: no inputs");
  check_inputs(inputs, output, extents);
  const tree::Network network = tree::make_network(inputs, extents, output);
  tree::Options o = tree::options_from_environment();
  o.method = method_named(options.optimize);
  if (options.seconds >= 0) o.seconds = options.seconds;
  if (options.memory_limit > 0) o.log2_max_size = std::log2(options.memory_limit);
  if (o.method == tree::Method::dp && network.size() > 16) {
    throw Error("tenex::contract_path: optimize=\"dp\" orders at most 16 factors; this product has " +
                std::to_string(network.size()));
  }
  const tree::Result r = tree::optimize(network, o);
  ContractPathInfo info;
  info.ssa_path = r.path;
  info.path = tree::linear_path(network.size(), r.path);
  info.naive_cost = naive_cost(network);
  info.method = r.method;
  info.seconds = r.seconds;
  const tree::Cost& one = r.slicing.labels.empty() ? r.cost : r.slicing.sliced;
  info.opt_cost = r.slicing.labels.empty() ? r.cost.flops() : linear(r.slicing.log2_total_flops);
  info.largest_intermediate = linear(one.log2_largest);
  info.peak = linear(one.log2_peak);
  for (tree::Label l : r.slicing.labels) info.sliced.push_back(network.names[static_cast<std::size_t>(l)]);
  info.slices = r.slicing.slices;
  return info;
}

std::string ContractPathInfo::text() const {
  std::string out;
  out += "  Optimized FLOP count: " + format(opt_cost) + "\n";
  out += "  Naive FLOP count: " + format(naive_cost) + "\n";
  out += "  Theoretical speedup: " + format(opt_cost > 0 ? naive_cost / opt_cost : 1) + "\n";
  out += "  Largest intermediate: " + format(largest_intermediate) + " elements\n";
  out += "  Method: " + method + " (" + format(seconds * 1e3) + " ms)\n";
  if (!sliced.empty()) {
    out += "  Sliced:";
    for (const std::string& l : sliced) out += " " + l;
    out += " (" + format(slices) + " slices)\n";
  }
  return out;
}

}  // namespace tenex
