// Slicing: summed labels fixed one value at a time, so that each slice of the network,
// contracted by the same path, fits the memory limit; the slices' results are summed. The
// labels are chosen one at a time among those the largest intermediates hold: the one that
// cuts the largest intermediate most per extra flop of all the slices together (cotengra's
// slice finder's rule), until every intermediate fits.
#include <algorithm>
#include <cmath>

#include "tenex/graph/contraction_tree/methods.hpp"

namespace tenex::tree {

namespace {

constexpr double tolerance = 1e-9;

double total_of(double log2_slices, const Cost& cost) {
  return cost.log2_flops < -1e299 ? -1e300 : log2_slices + cost.log2_flops;
}

/// The labels that slicing may cut from the largest intermediates: summed, not yet sliced,
/// of extent above 1, each with how many of those intermediates hold it.
std::vector<std::pair<Label, int>> candidates_of(const Network& work, const Path& path, const Cost& cost,
                                                 const std::vector<char>& sliced) {
  const std::vector<Legs> legs = legs_of(work, path);
  std::vector<int> holding(work.labels(), 0);
  for (std::size_t i = work.size(); i < legs.size(); ++i) {
    if (work.log2_size(legs[i]) < cost.log2_largest - tolerance) continue;
    for (const auto& [l, count] : legs[i]) ++holding[static_cast<std::size_t>(l)];
  }
  std::vector<std::pair<Label, int>> out;
  for (std::size_t l = 0; l < holding.size(); ++l) {
    if (holding[l] && !work.kept[l] && !sliced[l] && work.extent[l] > 1)
      out.emplace_back(static_cast<Label>(l), holding[l]);
  }
  return out;
}

}  // namespace

std::optional<Slicing> find_slices(const Network& network, const Path& path, double log2_max_size) {
  check_path(network.size(), path);
  Network work = network;  // the sliced labels at extent 1
  std::vector<char> sliced(network.labels(), 0);
  std::vector<Label> labels;
  double log2_slices = 0;
  Cost cost = score(work, path);
  while (cost.log2_largest > log2_max_size + tolerance) {
    const auto candidates = candidates_of(work, path, cost, sliced);
    if (candidates.empty()) return std::nullopt;
    int most_holding = 0;
    for (const auto& c : candidates) most_holding = std::max(most_holding, c.second);
    const double total = total_of(log2_slices, cost);
    double best_value = -1;
    Label best = candidates.front().first;
    Cost best_cost;
    for (const auto& [l, holding] : candidates) {
      const auto u = static_cast<std::size_t>(l);
      const double extent = work.extent[u], log2_extent = work.log2_extent[u];
      work.extent[u] = 1;
      work.log2_extent[u] = 0;
      const Cost c = score(work, path);
      work.extent[u] = extent;
      work.log2_extent[u] = log2_extent;
      // The cut of the largest (ties broken by how many of the largest hold the label) per
      // extra log2 flops of every slice together.
      const double cut = cost.log2_largest - c.log2_largest + 0.01 * static_cast<double>(holding) / most_holding;
      const double extra = std::max(total_of(log2_slices + log2_extent, c) - total, 0.0);
      const double value = cut / (extra + 0.01);
      if (value > best_value) {
        best_value = value;
        best = l;
        best_cost = c;
      }
    }
    const auto u = static_cast<std::size_t>(best);
    log2_slices += work.log2_extent[u];
    work.extent[u] = 1;
    work.log2_extent[u] = 0;
    sliced[u] = 1;
    labels.push_back(best);
    cost = best_cost;
  }
  std::sort(labels.begin(), labels.end());
  Slicing out;
  out.labels = labels;
  out.slices = std::exp2(log2_slices);
  out.sliced = score(network.with_fixed(labels), path);
  out.log2_total_flops = total_of(log2_slices, out.sliced);
  return out;
}

}  // namespace tenex::tree
