// Greedy with a network-aware score: of the pairs of live operands sharing a label, the one
// whose result is smallest against the sizes of the pair it replaces first (cotengra's
// score, size(ab) - costmod * (size(a) + size(b))), optionally with Gumbel noise of a
// temperature (Boltzmann sampling: restarts explore near-greedy trees); then outer products
// of the smallest operands.
#include <algorithm>
#include <cmath>
#include <queue>
#include <random>
#include <tuple>

#include "tenex/graph/contraction_tree/methods.hpp"

namespace tenex::tree {

namespace {

double linear(double log2_size) { return log2_size > 1000 ? 1e301 : std::exp2(log2_size); }

struct Live {
  std::vector<Legs> legs;
  std::vector<double> log2_size;
  std::vector<char> live;
};

}  // namespace

Path greedy(const Network& network, const GreedyOptions& options) {
  const std::size_t n = network.size();
  Path path;
  if (n < 2) return path;
  Live ops;
  std::vector<std::vector<std::size_t>> holding(network.labels());  // live operands by label (lazily pruned)
  for (std::size_t i = 0; i < n; ++i) {
    ops.legs.push_back(network.leaf(i));
    ops.log2_size.push_back(network.log2_size(ops.legs.back()));
    ops.live.push_back(1);
    for (Label l : network.inputs[i]) holding[static_cast<std::size_t>(l)].push_back(i);
  }
  std::mt19937_64 random(options.seed);
  std::uniform_real_distribution<double> uniform(1e-300, 1.0);
  using Candidate = std::tuple<double, std::size_t, std::size_t>;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](std::size_t a, std::size_t b) {
    double log2_union = 0;
    bool summed = false;
    const Legs out = network.merge(ops.legs[a], ops.legs[b], log2_union, summed);
    const double s =
        linear(network.log2_size(out)) - options.costmod * (linear(ops.log2_size[a]) + linear(ops.log2_size[b]));
    double key = std::copysign(std::log2(1 + std::abs(s)), s);
    if (options.temperature > 0) key -= options.temperature * -std::log(-std::log(uniform(random)));
    queue.emplace(key, std::min(a, b), std::max(a, b));
  };
  auto pair_up = [&](std::size_t a) {
    std::vector<std::size_t> met;
    for (const auto& [l, count] : ops.legs[a]) {
      auto& list = holding[static_cast<std::size_t>(l)];
      std::erase_if(list, [&](std::size_t h) { return !ops.live[h]; });
      for (std::size_t h : list) {
        if (h != a) met.push_back(h);
      }
    }
    std::sort(met.begin(), met.end());
    met.erase(std::unique(met.begin(), met.end()), met.end());
    for (std::size_t h : met) consider(a, h);
  };
  auto contract = [&](std::size_t a, std::size_t b) {
    double log2_union = 0;
    bool summed = false;
    Legs out = network.merge(ops.legs[a], ops.legs[b], log2_union, summed);
    ops.live[a] = ops.live[b] = 0;
    const std::size_t c = ops.legs.size();
    for (const auto& [l, count] : out) holding[static_cast<std::size_t>(l)].push_back(c);
    ops.log2_size.push_back(network.log2_size(out));
    ops.legs.push_back(std::move(out));
    ops.live.push_back(1);
    path.emplace_back(a, b);
    return c;
  };
  for (std::size_t i = 0; i < n; ++i) {
    // Each pair once: with the operands after it.
    std::vector<std::size_t> met;
    for (Label l : network.inputs[i]) {
      for (std::size_t h : holding[static_cast<std::size_t>(l)]) {
        if (h > i) met.push_back(h);
      }
    }
    std::sort(met.begin(), met.end());
    met.erase(std::unique(met.begin(), met.end()), met.end());
    for (std::size_t h : met) consider(i, h);
  }
  while (!queue.empty()) {
    const auto [key, a, b] = queue.top();
    queue.pop();
    if (!ops.live[a] || !ops.live[b]) continue;
    pair_up(contract(a, b));
  }
  // Nothing shares a label any more: outer products, the two smallest first.
  using BySize = std::pair<double, std::size_t>;
  std::priority_queue<BySize, std::vector<BySize>, std::greater<>> rest;
  for (std::size_t s = 0; s < ops.legs.size(); ++s) {
    if (ops.live[s]) rest.emplace(ops.log2_size[s], s);
  }
  while (rest.size() > 1) {
    const std::size_t a = rest.top().second;
    rest.pop();
    const std::size_t b = rest.top().second;
    rest.pop();
    const std::size_t c = contract(std::min(a, b), std::max(a, b));
    rest.emplace(ops.log2_size[c], c);
  }
  return path;
}

}  // namespace tenex::tree
