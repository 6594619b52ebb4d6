// The contraction tree optimizer's methods (src/tenex/graph/contraction_tree/): `optimal`
// against a brute-force enumeration of every tree of small random networks (hyper-labels,
// kept labels, disconnected parts, a memory limit), greedy, bisection and reconfiguration
// as valid paths no cheaper than the optimum, score() against opt_einsum's flop count
// recomputed directly, slicing against a dense evaluation, and no failure on two thousand
// random networks of up to 300 inputs. The optimizer is private to the library, so this file
// is built into tenex_pass_tests with its sources.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tenex/graph/contraction_tree/methods.hpp"

namespace {

using tenex::tree::BisectOptions;
using tenex::tree::Cost;
using tenex::tree::GreedyOptions;
using tenex::tree::Label;
using tenex::tree::Legs;
using tenex::tree::Network;
using tenex::tree::Path;
using Operands = std::vector<std::vector<std::string>>;
using Random = std::mt19937_64;

constexpr double inf = std::numeric_limits<double>::infinity();

std::string name(std::size_t k) {
  std::string text(1, 'x');
  text += std::to_string(k);
  return text;
}

std::size_t below(Random& random, std::size_t n) {
  return std::uniform_int_distribution<std::size_t>(0, n - 1)(random);
}

/// A network of `labels` labels, each given to a few of the inputs.
struct Draft {
  Operands operands;
  std::map<std::string, std::size_t> extents;
  std::vector<std::string> keep;
  void add(const std::vector<std::size_t>& holders, std::size_t extent, bool kept) {
    const std::string l = name(extents.size());
    extents[l] = extent;
    for (std::size_t h : holders) operands[h].push_back(l);
    if (kept) keep.push_back(l);
  }
  Network network() const { return tenex::tree::make_network(operands, extents, keep); }
};

/// Distinct inputs among [first, first + count).
std::vector<std::size_t> pick(Random& random, std::size_t first, std::size_t count, std::size_t how_many) {
  std::vector<std::size_t> all(count);
  for (std::size_t i = 0; i < count; ++i) all[i] = first + i;
  std::shuffle(all.begin(), all.end(), random);
  all.resize(std::min(how_many, count));
  return all;
}

/// A small random network: extents 1-5, some labels held by one input (kept: `optimal`
/// counts a summed label of one input as traced before the first step, score() at its step)
/// or by three or more, some kept, a quarter of them in two disconnected halves.
Network small_network(Random& random, std::size_t n) {
  Draft d;
  d.operands.resize(n);
  const bool split = n >= 4 && below(random, 4) == 0;
  const std::size_t labels = n + below(random, n + 1);
  for (std::size_t k = 0; k < labels; ++k) {
    std::size_t first = 0, count = n;
    if (split) {
      const bool low = below(random, 2) == 0;
      first = low ? 0 : n / 2;
      count = low ? n / 2 : n - n / 2;
    }
    const std::size_t r = below(random, 20);
    const std::size_t holders = r < 3 ? 1 : r < 15 ? 2 : 3 + below(random, 2);
    d.add(pick(random, first, count, holders), 1 + below(random, 5), holders == 1 || below(random, 7) == 0);
  }
  return d.network();
}

/// A random regular-ish graph: degree 3-5 stubs paired at random, extents 2-4, a few open
/// (kept) legs, sometimes a trace; `hyper`: one more label held by 10 inputs.
Network regular_network(Random& random, std::size_t n, bool hyper) {
  Draft d;
  d.operands.resize(n);
  const std::size_t degree = 3 + below(random, 3);
  std::vector<std::size_t> stubs;
  for (std::size_t i = 0; i < n; ++i) stubs.insert(stubs.end(), degree, i);
  std::shuffle(stubs.begin(), stubs.end(), random);
  for (std::size_t s = 0; s + 1 < stubs.size(); s += 2) {
    if (stubs[s] != stubs[s + 1]) d.add({stubs[s], stubs[s + 1]}, 2 + below(random, 3), false);
  }
  for (std::size_t k = below(random, 4); k > 0; --k) d.add({below(random, n)}, 2 + below(random, 3), true);
  if (below(random, 4) == 0) d.add({below(random, n)}, 2, false);  // a trace
  if (hyper && n >= 10) d.add(pick(random, 0, n, 10), 2 + below(random, 3), below(random, 2) == 0);
  return d.network();
}

/// The cheapest log2 flops over every sequence of pairwise steps whose intermediates all
/// fit `limit` (inf: none fits).
void enumerate(const Network& network, std::vector<Legs>& live, double flops, double largest, double limit,
               double& best) {
  if (flops >= best - 1e-12) return;
  if (live.size() == 1) {
    if (largest <= limit + 1e-9) best = flops;
    return;
  }
  for (std::size_t i = 0; i < live.size(); ++i) {
    for (std::size_t j = i + 1; j < live.size(); ++j) {
      double log2_union = 0;
      bool summed = false;
      Legs out = network.merge(live[i], live[j], log2_union, summed);
      const double size = network.log2_size(out);
      std::vector<Legs> next;
      for (std::size_t k = 0; k < live.size(); ++k) {
        if (k != i && k != j) next.push_back(live[k]);
      }
      next.push_back(std::move(out));
      enumerate(network, next, tenex::tree::log2_add(flops, log2_union + (summed ? 1.0 : 0.0)), std::max(largest, size),
                limit, best);
    }
  }
}

double brute_force(const Network& network, double limit = 1e300) {
  std::vector<Legs> live;
  for (std::size_t i = 0; i < network.size(); ++i) live.push_back(network.leaf(i));
  double best = inf;
  enumerate(network, live, -1e300, 0, limit, best);
  return best;
}

/// opt_einsum's count, recomputed from label names and a linear path: each step the size
/// of every label its operands hold, twice when one of them is held nowhere else.
double direct_flops(Operands operands, const std::map<std::string, std::size_t>& extents,
                    const std::vector<std::string>& keep,
                    const std::vector<std::pair<std::size_t, std::size_t>>& steps) {
  double flops = 0;
  for (const auto& [a, b] : steps) {
    std::set<std::string> all(operands[a].begin(), operands[a].end());
    all.insert(operands[b].begin(), operands[b].end());
    std::vector<std::vector<std::string>> rest;
    for (std::size_t k = 0; k < operands.size(); ++k) {
      if (k != a && k != b) rest.push_back(operands[k]);
    }
    double size = 1;
    bool inner = false;
    std::vector<std::string> out;
    for (const std::string& l : all) {
      size *= static_cast<double>(extents.at(l));
      bool elsewhere = std::find(keep.begin(), keep.end(), l) != keep.end();
      for (const auto& r : rest) elsewhere = elsewhere || std::find(r.begin(), r.end(), l) != r.end();
      if (elsewhere) {
        out.push_back(l);
      } else {
        inner = true;
      }
    }
    flops += size * (inner ? 2 : 1);
    rest.push_back(out);
    operands = rest;
  }
  return flops;
}

void check_cost(const Cost& cost) {
  CHECK(std::isfinite(cost.log2_flops));
  CHECK(std::isfinite(cost.log2_largest));
  CHECK(std::isfinite(cost.log2_peak));
}

}  // namespace

TEST_CASE("contraction tree: score counts flops as opt_einsum does") {
  // A matrix chain i-j-k-l: (AB)C costs 2*2*3*4 + 2*2*4*5, A(BC) 2*3*4*5 + 2*2*3*5.
  const Operands chain{{"i", "j"}, {"j", "k"}, {"k", "l"}};
  const std::map<std::string, std::size_t> extents{{"i", 2}, {"j", 3}, {"k", 4}, {"l", 5}, {"x", 3}};
  const Network network = tenex::tree::make_network(chain, extents, {"i", "l"});
  const Cost left = tenex::tree::score(network, {{0, 1}, {2, 3}});
  CHECK(left.flops() == doctest::Approx(128));
  CHECK(std::exp2(left.log2_largest) == doctest::Approx(10));
  CHECK(std::exp2(left.log2_peak) == doctest::Approx(18));
  CHECK(tenex::tree::score(network, {{1, 2}, {0, 3}}).flops() == doctest::Approx(180));
  CHECK(direct_flops(chain, extents, {"i", "l"}, {{0, 1}, {0, 1}}) == doctest::Approx(128));
  // An outer product sums nothing; a label of three holders is summed at its last one.
  CHECK(tenex::tree::score(tenex::tree::make_network({{"i"}, {"j"}}, extents, {"i", "j"}), {{0, 1}}).flops() ==
        doctest::Approx(6));
  const Operands hyper{{"i", "x"}, {"x"}, {"x", "l"}};
  const Network h = tenex::tree::make_network(hyper, extents, {"i", "l"});
  CHECK(tenex::tree::score(h, {{0, 1}, {2, 3}}).flops() == doctest::Approx(6 + 2 * 30));
  CHECK(direct_flops(hyper, extents, {"i", "l"}, {{0, 1}, {0, 1}}) == doctest::Approx(66));
  // Random networks and paths: the same count.
  Random random(7);
  for (int t = 0; t < 50; ++t) {
    Draft d;
    const std::size_t n = 2 + below(random, 7);
    d.operands.resize(n);
    for (std::size_t k = 0; k < n + 3; ++k)
      d.add(pick(random, 0, n, 1 + below(random, 3)), 1 + below(random, 4), below(random, 5) == 0);
    const Network net = d.network();
    const Path path = tenex::tree::greedy(net, {1.0, 1.0, static_cast<std::uint64_t>(t)});
    const double direct = direct_flops(d.operands, d.extents, d.keep, tenex::tree::linear_path(n, path));
    CHECK(tenex::tree::score(net, path).flops() == doctest::Approx(direct).epsilon(1e-12));
  }
}

TEST_CASE("contraction tree: optimal is the brute-force minimum, the other methods no cheaper") {
  Random random(2024);
  for (int t = 0; t < 100; ++t) {
    const std::size_t n = 3 + static_cast<std::size_t>(t) % 5;
    const Network network = small_network(random, n);
    CAPTURE(t);
    const double best = brute_force(network);
    const std::optional<Path> exact = tenex::tree::optimal(network);
    REQUIRE(exact);
    tenex::tree::check_path(n, *exact);
    CHECK(tenex::tree::score(network, *exact).log2_flops == doctest::Approx(best).epsilon(1e-9));
    const Path greedy = tenex::tree::greedy(network, {1.0, 0.5, static_cast<std::uint64_t>(t)});
    const Path bisect = tenex::tree::bisect(network, {0.3, 2, static_cast<std::uint64_t>(t)});
    for (const Path* path : {&greedy, &bisect}) {
      tenex::tree::check_path(n, *path);
      const Cost cost = tenex::tree::score(network, *path);
      CHECK(cost.log2_flops >= best - 1e-9);
      const Path better = tenex::tree::reconfigure(network, *path, 3 + below(random, 4), 1.0);
      tenex::tree::check_path(n, better);
      const double reconfigured = tenex::tree::score(network, better).log2_flops;
      CHECK(reconfigured >= best - 1e-9);
      CHECK(reconfigured <= cost.log2_flops + 1e-12);
    }
    // Under a memory limit (at least the result's size): the cheapest of the trees that fit.
    double result = 0;
    for (std::size_t l = 0; l < network.labels(); ++l) result += network.kept[l] ? network.log2_extent[l] : 0;
    const double limit = result + static_cast<double>(below(random, 5));
    const double best_fitting = brute_force(network, limit);
    const std::optional<Path> fitting = tenex::tree::optimal(network, 16, limit);
    CHECK(fitting.has_value() == (best_fitting < inf));
    if (fitting && best_fitting < inf) {
      const Cost cost = tenex::tree::score(network, *fitting);
      CHECK(cost.log2_flops == doctest::Approx(best_fitting).epsilon(1e-9));
      CHECK(cost.log2_largest <= limit + 1e-9);
    }
  }
}

TEST_CASE("contraction tree: bisection is seeded, handles one input and disconnected parts") {
  Random random(5);
  const Network network = regular_network(random, 60, true);
  std::set<Path> trees;
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    const Path path = tenex::tree::bisect(network, {0.2, 4, seed});
    tenex::tree::check_path(network.size(), path);
    CHECK(path == tenex::tree::bisect(network, {0.2, 4, seed}));
    trees.insert(path);
  }
  CHECK(trees.size() > 1);
  const Network one = tenex::tree::make_network({{"i", "j"}}, {{"i", 2}, {"j", 3}}, {"i"});
  CHECK(tenex::tree::bisect(one).empty());
  CHECK(tenex::tree::reconfigure(one, {}).empty());
  // Three components and a scalar: no label joins them.
  const Network apart = tenex::tree::make_network({{"a", "b"}, {"b"}, {}, {"c", "d"}, {"d", "e"}, {"e"}, {"f"}, {"f"}},
                                                  {{"a", 2}, {"b", 3}, {"c", 4}, {"d", 2}, {"e", 3}, {"f", 5}}, {"a"});
  for (std::size_t leaf = 2; leaf < 5; ++leaf) {
    const Path path = tenex::tree::bisect(apart, {0.2, leaf, 1});
    tenex::tree::check_path(apart.size(), path);
    CHECK(tenex::tree::score(apart, path).log2_flops >=
          tenex::tree::score(apart, *tenex::tree::optimal(apart)).log2_flops - 1e-9);
  }
}

namespace {

/// A dense tensor over some labels (row-major in the order given), each label's extent as
/// it was made (1: a sliced label, fixed to the slice's value).
struct Dense {
  std::vector<Label> labels;
  std::vector<std::size_t> extents;
  std::vector<double> data;
  std::size_t offset(const std::vector<std::size_t>& value) const {
    std::size_t o = 0;
    for (std::size_t k = 0; k < labels.size(); ++k)
      o = o * extents[k] + (extents[k] == 1 ? 0 : value[static_cast<std::size_t>(labels[k])]);
    return o;
  }
};

/// Calls `f` with every value of `labels` (ranges by label: [first, last)).
template <class F>
void for_each_value(const std::vector<Label>& labels, const std::vector<std::size_t>& first,
                    const std::vector<std::size_t>& last, std::vector<std::size_t>& value, F&& f) {
  for (Label l : labels) value[static_cast<std::size_t>(l)] = first[static_cast<std::size_t>(l)];
  while (true) {
    f();
    std::size_t k = labels.size();
    while (k > 0) {
      const auto l = static_cast<std::size_t>(labels[k - 1]);
      if (++value[l] < last[l]) break;
      value[l] = first[l];
      --k;
    }
    if (k == 0) return;
  }
}

/// The network contracted along `path` with the labels `sliced` summed slice by slice.
std::vector<double> contract_sliced(const Network& network, const std::vector<Dense>& inputs, const Path& path,
                                    const std::vector<Label>& sliced) {
  const std::size_t labels = network.labels();
  const Network one = network.with_fixed(sliced);
  const std::vector<Legs> legs = tenex::tree::legs_of(one, path);
  std::vector<std::size_t> first(labels, 0), last(labels), value(labels, 0);
  for (std::size_t l = 0; l < labels; ++l) last[l] = static_cast<std::size_t>(network.extent[l]);
  std::vector<double> total;
  std::vector<std::size_t> slice_first(labels, 0), slice_last(last);
  for_each_value(sliced, slice_first, slice_last, value, [&] {
    std::vector<std::size_t> lo(labels, 0), hi(last);
    for (Label l : sliced) {
      lo[static_cast<std::size_t>(l)] = value[static_cast<std::size_t>(l)];
      hi[static_cast<std::size_t>(l)] = value[static_cast<std::size_t>(l)] + 1;
    }
    std::vector<Dense> ops(inputs);
    for (std::size_t s = 0; s < path.size(); ++s) {
      const Dense& a = ops[path[s].first];
      const Dense& b = ops[path[s].second];
      Dense out;
      std::size_t size = 1;
      for (const auto& [l, count] : legs[network.size() + s]) {
        out.labels.push_back(l);
        out.extents.push_back(static_cast<std::size_t>(one.extent[static_cast<std::size_t>(l)]));
        size *= out.extents.back();
      }
      out.data.assign(size, 0);
      std::vector<Label> both(a.labels);
      both.insert(both.end(), b.labels.begin(), b.labels.end());
      std::sort(both.begin(), both.end());
      both.erase(std::unique(both.begin(), both.end()), both.end());
      for_each_value(both, lo, hi, value,
                     [&] { out.data[out.offset(value)] += a.data[a.offset(value)] * b.data[b.offset(value)]; });
      ops.push_back(std::move(out));
    }
    for (Label l : sliced) value[static_cast<std::size_t>(l)] = lo[static_cast<std::size_t>(l)];
    const Dense& root = ops.back();
    if (total.empty()) total.assign(root.data.size(), 0);
    for (std::size_t i = 0; i < root.data.size(); ++i) total[i] += root.data[i];
  });
  return total;
}

}  // namespace

TEST_CASE("contraction tree: slicing fits the limit and sums to the same value") {
  Random random(11);
  std::uniform_real_distribution<double> uniform(-1, 1);
  int sliced_cases = 0;
  for (int t = 0; t < 40; ++t) {
    CAPTURE(t);
    Draft d;
    const std::size_t n = 3 + below(random, 4);
    d.operands.resize(n);
    for (std::size_t k = 0; k < n + 2; ++k)
      d.add(pick(random, 0, n, 2 + below(random, 2)), 2 + below(random, 2), below(random, 6) == 0);
    const Network network = d.network();
    const Path path = tenex::tree::greedy(network);
    const Cost cost = tenex::tree::score(network, path);
    const double limit = cost.log2_largest - 1 - static_cast<double>(below(random, 3));
    const auto slicing = tenex::tree::find_slices(network, path, limit);
    if (!slicing) {
      // Not even every summed label sliced fits.
      std::vector<Label> summed;
      for (std::size_t l = 0; l < network.labels(); ++l) {
        if (!network.kept[l]) summed.push_back(static_cast<Label>(l));
      }
      CHECK(tenex::tree::score(network.with_fixed(summed), path).log2_largest > limit);
      continue;
    }
    ++sliced_cases;
    CHECK(slicing->sliced.log2_largest <= limit + 1e-9);
    CHECK(slicing->log2_total_flops >= cost.log2_flops - 1e-9);
    for (Label l : slicing->labels) CHECK(!network.kept[static_cast<std::size_t>(l)]);
    std::vector<Dense> inputs;
    for (std::size_t i = 0; i < n; ++i) {
      Dense input{network.inputs[i], {}, {}};
      std::size_t size = 1;
      for (Label l : input.labels) {
        input.extents.push_back(static_cast<std::size_t>(network.extent[static_cast<std::size_t>(l)]));
        size *= input.extents.back();
      }
      for (std::size_t k = 0; k < size; ++k) input.data.push_back(uniform(random));
      inputs.push_back(std::move(input));
    }
    const std::vector<double> whole = contract_sliced(network, inputs, path, {});
    const std::vector<double> in_slices = contract_sliced(network, inputs, path, slicing->labels);
    REQUIRE(whole.size() == in_slices.size());
    for (std::size_t i = 0; i < whole.size(); ++i) CHECK(in_slices[i] == doctest::Approx(whole[i]).epsilon(1e-9));
  }
  CHECK(sliced_cases > 20);
  // A result larger than the limit: no slicing helps.
  const Network wide =
      tenex::tree::make_network({{"i", "j"}, {"j", "k"}}, {{"i", 10}, {"j", 10}, {"k", 10}}, {"i", "k"});
  CHECK_FALSE(tenex::tree::find_slices(wide, {{0, 1}}, std::log2(50)));
  CHECK(tenex::tree::find_slices(wide, {{0, 1}}, std::log2(100))->labels.empty());
}

TEST_CASE("contraction tree: no failure on random networks of up to 300 inputs") {
  Random random(99);
  for (int t = 0; t < 2000; ++t) {
    CAPTURE(t);
    const std::size_t n = t % 20 == 0 ? 2 + below(random, 299) : 2 + below(random, 39);
    const Network network = regular_network(random, n, t % 5 == 0);
    const auto seed = static_cast<std::uint64_t>(t);
    const Path greedy = tenex::tree::greedy(network, {1.0, t % 2 ? 0.0 : 0.3, seed});
    const Path bisect =
        tenex::tree::bisect(network, {0.1 + 0.1 * static_cast<double>(t % 4), 4 + below(random, 5), seed});
    const Path better = tenex::tree::reconfigure(network, bisect, 6 + below(random, 4), 0.001);
    for (const Path* path : {&greedy, &bisect, &better}) {
      tenex::tree::check_path(n, *path);
      check_cost(tenex::tree::score(network, *path));
    }
    CHECK(tenex::tree::score(network, better).log2_flops <= tenex::tree::score(network, bisect).log2_flops + 1e-12);
    const Cost cost = tenex::tree::score(network, better);
    const double limit = cost.log2_largest - 1 - static_cast<double>(below(random, 6));
    if (const auto slicing = tenex::tree::find_slices(network, better, limit)) {
      check_cost(slicing->sliced);
      CHECK(std::isfinite(slicing->log2_total_flops));
      CHECK(slicing->sliced.log2_largest <= limit + 1e-9);
      CHECK(slicing->log2_total_flops >= cost.log2_flops - 1e-9);
      for (Label l : slicing->labels) CHECK(!network.kept[static_cast<std::size_t>(l)]);
    }
  }
}

TEST_CASE("contraction tree: 10,000 random networks of up to 300 inputs through greedy and the driver") {
  Random random(2026);
  for (int t = 0; t < 10000; ++t) {
    CAPTURE(t);
    const std::size_t n = t % 20 == 0 ? 2 + below(random, 299) : 2 + below(random, 30);
    const Network network = regular_network(random, n, t % 5 == 0);
    const Path greedy = tenex::tree::greedy(network, {0.5 + 0.25 * static_cast<double>(t % 7), 0.1, std::uint64_t(t)});
    tenex::tree::check_path(n, greedy);
    check_cost(tenex::tree::score(network, greedy));
    if (t % 10 == 0) {
      // The driver with no time to spare (its fewest sampled trees) and, every other time, a
      // memory limit below the best tree's largest intermediate.
      tenex::tree::Options options;
      options.seconds = 0;
      if (t % 20 == 0) options.log2_max_size = tenex::tree::score(network, greedy).log2_largest - 2;
      const tenex::tree::Result r = tenex::tree::optimize(network, options);
      tenex::tree::check_path(n, r.path);
      check_cost(r.cost);
      // Never worse than its own first tree, the plain greedy one (without a limit).
      if (t % 20 != 0) {
        CHECK(r.cost.log2_flops <= tenex::tree::score(network, tenex::tree::greedy(network)).log2_flops + 1e-9);
      }
      for (Label l : r.slicing.labels) CHECK(!network.kept[static_cast<std::size_t>(l)]);
    }
  }
}
