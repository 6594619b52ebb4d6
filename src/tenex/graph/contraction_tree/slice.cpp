// Slicing: summed labels fixed one value at a time, so that each slice of the network,
// contracted by the same path, fits the memory limit; the slices' results are summed. The
// labels are chosen one at a time among those the largest intermediates hold: the one that
// cuts the largest intermediate most per extra flop of all the slices together (cotengra's
// slice finder's rule), until every intermediate fits. A candidate is scored without
// re-scoring the path: slicing a label divides by its extent the size of each intermediate
// that holds it and the cost of each step whose operands hold it (a step that sums it still
// sums); the labels chosen, one slice is scored exactly.
#include <algorithm>
#include <cmath>

#include "tenex/graph/contraction_tree/methods.hpp"

namespace tenex::tree {

namespace {

constexpr double tolerance = 1e-9;

double total_of(double log2_slices, double log2_flops) {
  return log2_flops < -1e299 ? -1e300 : log2_slices + log2_flops;
}

/// The path's steps and intermediates on the network as sliced so far.
struct Profile {
  double log2_top = -1e300;                             // the costliest step's log2 flops
  double relative_total = 0;                            // the sum over steps of 2^(cost - top)
  std::vector<double> relative;                         // by label: that sum over the steps whose operands hold it
  std::vector<std::pair<double, std::size_t>> by_size;  // intermediates' log2 sizes, largest first
  std::vector<std::vector<std::size_t>> holding;        // by label: the intermediates holding it
  double log2_largest = 0;                              // as score() counts it
  double log2_flops() const { return relative_total > 0 ? log2_top + std::log2(relative_total) : -1e300; }
};

Profile profile_of(const Network& work, const Path& path) {
  const std::size_t n = work.size();
  Profile p;
  p.relative.assign(work.labels(), 0);
  p.holding.assign(work.labels(), {});
  const std::vector<Legs> legs = legs_of(work, path);
  std::vector<double> cost(path.size());
  for (std::size_t s = 0; s < path.size(); ++s) {
    double log2_union = 0;
    bool summed = false;
    work.merge(legs[path[s].first], legs[path[s].second], log2_union, summed);
    cost[s] = log2_union + (summed ? 1.0 : 0.0);
    p.log2_top = std::max(p.log2_top, cost[s]);
    const double size = work.log2_size(legs[n + s]);
    p.by_size.emplace_back(size, s);
    p.log2_largest = std::max(p.log2_largest, size);
    for (const auto& [l, count] : legs[n + s]) p.holding[static_cast<std::size_t>(l)].push_back(s);
  }
  for (std::size_t s = 0; s < path.size(); ++s) {
    const double r = std::exp2(cost[s] - p.log2_top);
    p.relative_total += r;
    // The labels of both operands, each once.
    const Legs& a = legs[path[s].first];
    const Legs& b = legs[path[s].second];
    std::size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      Label l;
      if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
        l = a[i++].first;
      } else if (i == a.size() || b[j].first < a[i].first) {
        l = b[j++].first;
      } else {
        l = a[i++].first;
        ++j;
      }
      p.relative[static_cast<std::size_t>(l)] += r;
    }
  }
  std::sort(p.by_size.begin(), p.by_size.end(), std::greater<>());
  return p;
}

struct Choice {
  Label label = -1;
  double value = -1;
};

/// Of the summed labels (not yet sliced, extent above 1) that the largest intermediates
/// hold, the one that cuts the largest most per extra log2 flops of every slice together;
/// ties broken by how many of the largest hold it. label -1: none.
Choice best_label(const Network& work, const Profile& p, double log2_slices, std::vector<char>& marked) {
  // How many of the largest intermediates hold each label.
  std::vector<char> largest(marked.size(), 0);
  for (const auto& [size, s] : p.by_size) {
    if (size < p.log2_largest - tolerance) break;
    largest[s] = 1;
  }
  std::vector<int> holding_largest(work.labels(), 0);
  int most = 1;
  for (std::size_t l = 0; l < work.labels(); ++l) {
    for (std::size_t s : p.holding[l]) {
      if (largest[s]) most = std::max(most, ++holding_largest[l]);
    }
  }
  const double total = total_of(log2_slices, p.log2_flops());
  Choice best;
  for (std::size_t l = 0; l < work.labels(); ++l) {
    if (!holding_largest[l] || work.kept[l] || work.extent[l] <= 1) continue;
    const double e = work.log2_extent[l];
    // The largest once sliced: of those holding it, less e; of the rest, the first.
    for (std::size_t s : p.holding[l]) marked[s] = 1;
    double largest_after = 0;
    bool held_seen = false;
    for (const auto& [size, s] : p.by_size) {
      if (!marked[s]) {
        largest_after = std::max(largest_after, size);
        break;
      }
      if (!held_seen) largest_after = std::max(largest_after, size - e);
      held_seen = true;
    }
    for (std::size_t s : p.holding[l]) marked[s] = 0;
    const double relative = std::max(p.relative_total - p.relative[l], 0.0) + std::exp2(-e) * p.relative[l];
    const double flops_after = relative > 0 ? p.log2_top + std::log2(relative) : -1e300;
    const double cut = p.log2_largest - largest_after + 0.01 * static_cast<double>(holding_largest[l]) / most;
    const double extra = std::max(total_of(log2_slices + e, flops_after) - total, 0.0);
    const double value = cut / (extra + 0.01);
    if (value > best.value) best = {static_cast<Label>(l), value};
  }
  return best;
}

}  // namespace

std::optional<Slicing> find_slices(const Network& network, const Path& path, double log2_max_size) {
  check_path(network.size(), path);
  Network work = network;  // the sliced labels at extent 1
  std::vector<Label> labels;
  std::vector<char> marked(path.size(), 0);
  double log2_slices = 0;
  while (true) {
    const Profile p = profile_of(work, path);
    if (p.log2_largest <= log2_max_size + tolerance) break;
    const Choice c = best_label(work, p, log2_slices, marked);
    if (c.label < 0) return std::nullopt;
    const auto u = static_cast<std::size_t>(c.label);
    log2_slices += work.log2_extent[u];
    work.extent[u] = 1;
    work.log2_extent[u] = 0;
    labels.push_back(c.label);
  }
  std::sort(labels.begin(), labels.end());
  Slicing out;
  out.labels = labels;
  out.slices = std::exp2(log2_slices);
  out.sliced = score(network.with_fixed(labels), path);
  out.log2_total_flops = total_of(log2_slices, out.sliced.log2_flops);
  return out;
}

}  // namespace tenex::tree
