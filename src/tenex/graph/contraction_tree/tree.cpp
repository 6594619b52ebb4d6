#include "tenex/graph/contraction_tree/tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tenex/error.hpp"

namespace tenex::tree {

double Cost::flops() const {
  if (log2_flops < -1e299) return 0;
  return log2_flops >= 1024 ? std::numeric_limits<double>::infinity() : std::exp2(log2_flops);
}

std::vector<Legs> legs_of(const Network& network, const Path& path) {
  std::vector<Legs> legs;
  legs.reserve(network.size() + path.size());
  for (std::size_t i = 0; i < network.size(); ++i) legs.push_back(network.leaf(i));
  for (const auto& [a, b] : path) {
    double log2_union = 0;
    bool summed = false;
    legs.push_back(network.merge(legs[a], legs[b], log2_union, summed));
  }
  return legs;
}

Cost score(const Network& network, const Path& path) {
  Cost cost;
  std::vector<Legs> legs;
  legs.reserve(network.size() + path.size());
  std::vector<double> log2_sizes;
  for (std::size_t i = 0; i < network.size(); ++i) {
    legs.push_back(network.leaf(i));
    log2_sizes.push_back(network.log2_size(legs.back()));
  }
  // Held: the intermediates made and not yet read (inputs are the user's, not counted).
  double log2_held = -1e300;
  std::vector<char> consumed(network.size() + path.size(), 0);
  for (const auto& [a, b] : path) {
    double log2_union = 0;
    bool summed = false;
    legs.push_back(network.merge(legs[a], legs[b], log2_union, summed));
    const double out = network.log2_size(legs.back());
    log2_sizes.push_back(out);
    cost.log2_flops = log2_add(cost.log2_flops, log2_union + (summed ? 1.0 : 0.0));
    cost.log2_largest = std::max(cost.log2_largest, out);
    // While the step runs its operands and its result are held; then the operands go.
    const double with_out = log2_add(log2_held, out);
    cost.log2_peak = std::max(cost.log2_peak, with_out);
    double held = with_out;
    for (std::size_t o : {a, b}) {
      if (o >= network.size() && !consumed[o]) {
        // Subtracting in log space: held - size(o), kept from going below nothing.
        const double h = std::exp2(held - log2_sizes[o]);
        held = h <= 1 + 1e-12 ? -1e300 : log2_sizes[o] + std::log2(h - 1);
      }
      consumed[o] = 1;
    }
    log2_held = held;
  }
  return cost;
}

bool cheaper(const Cost& a, const Cost& b) {
  const double d = a.log2_flops - b.log2_flops;
  if (d < -1e-9) return true;
  if (d > 1e-9) return false;
  return a.log2_largest < b.log2_largest - 1e-9;
}

void check_path(std::size_t inputs, const Path& path) {
  if (inputs == 0) throw InternalError("tenex: contraction order: a network without inputs");
  if (path.size() + 1 != inputs) {
    throw InternalError("tenex: contraction order: a path of " + std::to_string(path.size()) + " steps for " +
                        std::to_string(inputs) + " inputs");
  }
  std::vector<char> used(inputs + path.size(), 0);
  for (std::size_t i = 0; i < path.size(); ++i) {
    for (std::size_t o : {path[i].first, path[i].second}) {
      if (o >= inputs + i || used[o] || path[i].first == path[i].second) {
        throw InternalError("tenex: contraction order: step " + std::to_string(i) + " reads operand " +
                            std::to_string(o) + ", which is not available");
      }
      used[o] = 1;
    }
  }
}

std::vector<std::pair<std::size_t, std::size_t>> linear_path(std::size_t inputs, const Path& path) {
  std::vector<std::size_t> live(inputs);
  for (std::size_t i = 0; i < inputs; ++i) live[i] = i;
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const auto pa = static_cast<std::size_t>(std::find(live.begin(), live.end(), path[i].first) - live.begin());
    const auto pb = static_cast<std::size_t>(std::find(live.begin(), live.end(), path[i].second) - live.begin());
    out.emplace_back(std::min(pa, pb), std::max(pa, pb));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(std::max(pa, pb)));
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(std::min(pa, pb)));
    live.push_back(inputs + i);
  }
  return out;
}

}  // namespace tenex::tree
