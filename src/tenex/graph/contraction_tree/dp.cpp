// Exact ordering by dynamic programming over subsets of inputs (bit masks): the cheapest
// split of every subset, flops in log2. Labels as bit sets of the network's own numbers.
// Up to 12 inputs every split is tried (outer products included); beyond, a subset is split
// only into parts that share a label, and is formed only when connected (opt_einsum's `dp`
// without outer products), the components of a disconnected network joined smallest first.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "tenex/graph/contraction_tree/methods.hpp"

namespace tenex::tree {

namespace {

constexpr double none = std::numeric_limits<double>::infinity();
constexpr std::size_t all_splits_limit = 12;

/// Label sets as words of bits.
struct Bits {
  std::vector<std::uint64_t> w;
  bool intersects(const Bits& o) const {
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] & o.w[i]) return true;
    }
    return false;
  }
};

struct Subsets {
  std::vector<Bits> result;       // the labels a subset's contraction keeps
  std::vector<double> log2_size;  // of that result
  std::vector<char> connected;
};

double log2_of(const Bits& b, const Network& network) {
  double s = 0;
  for (std::size_t i = 0; i < b.w.size(); ++i) {
    for (std::uint64_t x = b.w[i]; x; x &= x - 1) {
      s += network.log2_extent[i * 64 + static_cast<std::size_t>(__builtin_ctzll(x))];
    }
  }
  return s;
}

Subsets subsets_of(const Network& network, bool connectivity) {
  const std::size_t n = network.size(), full = (std::size_t{1} << n) - 1;
  const std::size_t words = (network.labels() + 63) / 64;
  Subsets out;
  out.result.assign(full + 1, Bits{std::vector<std::uint64_t>(words, 0)});
  out.log2_size.assign(full + 1, 0);
  out.connected.assign(full + 1, 0);
  std::vector<Bits> all(full + 1, Bits{std::vector<std::uint64_t>(words, 0)});  // every label held inside
  std::vector<int> inside(network.labels(), 0);
  for (std::size_t s = 1; s <= full; ++s) {
    const std::size_t low = s & (~s + 1);
    if (s == low) {
      for (Label l : network.inputs[static_cast<std::size_t>(__builtin_ctzll(s))]) {
        all[s].w[static_cast<std::size_t>(l) / 64] |= std::uint64_t{1} << (l % 64);
      }
      out.connected[s] = 1;
    } else {
      for (std::size_t i = 0; i < words; ++i) all[s].w[i] = all[low].w[i] | all[s ^ low].w[i];
    }
    std::fill(inside.begin(), inside.end(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (s >> i & 1) {
        for (Label l : network.inputs[i]) ++inside[static_cast<std::size_t>(l)];
      }
    }
    // An input is itself: a label only it holds (a trace) is summed by its first step.
    for (std::size_t i = 0; i < words; ++i) {
      for (std::uint64_t x = all[s].w[i]; x; x &= x - 1) {
        const std::size_t l = i * 64 + static_cast<std::size_t>(__builtin_ctzll(x));
        if (s == low || network.kept[l] || inside[l] < network.holders[l]) out.result[s].w[i] |= x & (~x + 1);
      }
    }
    out.log2_size[s] = log2_of(out.result[s], network);
  }
  // Connected: some split into connected parts sharing a label (the parts hold `all` labels).
  for (std::size_t s = 1; connectivity && s <= full; ++s) {
    if (out.connected[s]) continue;
    const std::size_t low = s & (~s + 1);
    for (std::size_t a = (s - 1) & s; a > 0 && !out.connected[s]; a = (a - 1) & s) {
      if ((a & low) && out.connected[a] && out.connected[s ^ a] && all[a].intersects(all[s ^ a])) out.connected[s] = 1;
    }
  }
  return out;
}

}  // namespace

std::optional<Path> optimal(const Network& network, std::size_t most_inputs, double log2_max_size) {
  const std::size_t n = network.size();
  if (n > most_inputs || n > 20) return std::nullopt;
  if (n < 2) return Path{};
  const std::size_t full = (std::size_t{1} << n) - 1;
  const bool every_split = n <= all_splits_limit;
  const Subsets subsets = subsets_of(network, !every_split);
  std::vector<double> cost(full + 1, none);  // log2 flops
  std::vector<std::size_t> split(full + 1, 0);
  for (std::size_t i = 0; i < n; ++i) cost[std::size_t{1} << i] = -1e300;
  Bits u{std::vector<std::uint64_t>(subsets.result[1].w.size(), 0)};
  for (std::size_t s = 1; s <= full; ++s) {
    if (!(s & (s - 1))) continue;
    if (!every_split && !subsets.connected[s]) continue;
    if (s != full && subsets.log2_size[s] > log2_max_size) continue;
    const std::size_t low = s & (~s + 1);
    for (std::size_t a = (s - 1) & s; a > 0; a = (a - 1) & s) {
      if (!(a & low)) continue;
      const std::size_t b = s ^ a;
      if (cost[a] == none || cost[b] == none) continue;
      if (!every_split && !subsets.result[a].intersects(subsets.result[b])) continue;
      for (std::size_t i = 0; i < u.w.size(); ++i) u.w[i] = subsets.result[a].w[i] | subsets.result[b].w[i];
      const double u_size = log2_of(u, network);
      const bool summed = u_size > subsets.log2_size[s] + 1e-12 || [&] {
        for (std::size_t i = 0; i < u.w.size(); ++i) {
          if (u.w[i] != subsets.result[s].w[i]) return true;
        }
        return false;
      }();
      const double c = log2_add(log2_add(cost[a], cost[b]), u_size + (summed ? 1.0 : 0.0));
      if (c < cost[s]) {
        cost[s] = c;
        split[s] = a;
      }
    }
  }
  Path path;
  std::size_t next = n;
  std::function<std::size_t(std::size_t)> emit = [&](std::size_t s) -> std::size_t {
    if (!(s & (s - 1))) return static_cast<std::size_t>(__builtin_ctzll(s));
    const std::size_t left = emit(split[s]);
    const std::size_t right = emit(s ^ split[s]);
    path.emplace_back(left, right);
    return next++;
  };
  if (cost[full] != none) {
    emit(full);
    return path;
  }
  if (every_split) return std::nullopt;  // nothing fits the limit
  // Disconnected: each largest connected subset found exactly, then outer products.
  std::vector<std::size_t> parts;
  std::size_t left = full;
  while (left) {
    std::size_t best = left & (~left + 1);
    for (std::size_t a = left; a > 0; a = (a - 1) & left) {
      if (cost[a] != none && std::popcount(a) > std::popcount(best)) best = a;
    }
    parts.push_back(best);
    left &= ~best;
  }
  std::vector<std::pair<double, std::size_t>> roots;
  for (std::size_t p : parts) roots.emplace_back(subsets.log2_size[p], emit(p));
  while (roots.size() > 1) {
    std::sort(roots.begin(), roots.end(), std::greater<>());
    const auto a = roots.back();
    roots.pop_back();
    const auto b = roots.back();
    roots.pop_back();
    path.emplace_back(std::min(a.second, b.second), std::max(a.second, b.second));
    roots.emplace_back(a.first + b.first, next++);
  }
  return path;
}

}  // namespace tenex::tree
