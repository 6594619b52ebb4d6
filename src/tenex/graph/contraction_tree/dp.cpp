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

/// Label sets as words of bits: `count` sets of `words` words each, in one buffer.
struct Bits {
  std::size_t words;
  std::vector<std::uint64_t> data;
  Bits(std::size_t count, std::size_t words_each) : words(words_each), data(count * words_each, 0) {}
  std::uint64_t* operator[](std::size_t i) { return data.data() + i * words; }
  const std::uint64_t* operator[](std::size_t i) const { return data.data() + i * words; }
};

bool intersects(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) {
  for (std::size_t i = 0; i < words; ++i) {
    if (a[i] & b[i]) return true;
  }
  return false;
}

struct Subsets {
  Bits result;                    // the labels a subset's contraction keeps
  std::vector<double> log2_size;  // of that result
  std::vector<char> connected;
};

double log2_of(const std::uint64_t* b, std::size_t words, const Network& network) {
  double s = 0;
  for (std::size_t i = 0; i < words; ++i) {
    for (std::uint64_t x = b[i]; x; x &= x - 1) {
      s += network.log2_extent[i * 64 + static_cast<std::size_t>(__builtin_ctzll(x))];
    }
  }
  return s;
}

Subsets subsets_of(const Network& network, bool connectivity) {
  const std::size_t n = network.size(), full = (std::size_t{1} << n) - 1;
  const std::size_t words = (network.labels() + 63) / 64;
  Subsets out{Bits(full + 1, words), std::vector<double>(full + 1, 0), std::vector<char>(full + 1, 0)};
  Bits all(full + 1, words);  // every label held inside
  std::vector<int> inside(network.labels(), 0);
  for (std::size_t s = 1; s <= full; ++s) {
    const std::size_t low = s & (~s + 1);
    if (s == low) {
      for (Label l : network.inputs[static_cast<std::size_t>(__builtin_ctzll(s))]) {
        all[s][static_cast<std::size_t>(l) / 64] |= std::uint64_t{1} << (l % 64);
      }
      out.connected[s] = 1;
    } else {
      for (std::size_t i = 0; i < words; ++i) all[s][i] = all[low][i] | all[s ^ low][i];
    }
    std::fill(inside.begin(), inside.end(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (s >> i & 1) {
        for (Label l : network.inputs[i]) ++inside[static_cast<std::size_t>(l)];
      }
    }
    // An input is itself: a label only it holds (a trace) is summed by its first step.
    for (std::size_t i = 0; i < words; ++i) {
      for (std::uint64_t x = all[s][i]; x; x &= x - 1) {
        const std::size_t l = i * 64 + static_cast<std::size_t>(__builtin_ctzll(x));
        if (s == low || network.kept[l] || inside[l] < network.holders[l]) out.result[s][i] |= x & (~x + 1);
      }
    }
    out.log2_size[s] = log2_of(out.result[s], words, network);
  }
  // Connected: some split into connected parts sharing a label (the parts hold `all` labels).
  for (std::size_t s = 1; connectivity && s <= full; ++s) {
    if (out.connected[s]) continue;
    const std::size_t low = s & (~s + 1);
    for (std::size_t a = (s - 1) & s; a > 0 && !out.connected[s]; a = (a - 1) & s) {
      if ((a & low) && out.connected[a] && out.connected[s ^ a] && intersects(all[a], all[s ^ a], words))
        out.connected[s] = 1;
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
  const std::size_t words = subsets.result.words;
  std::vector<std::uint64_t> u(words, 0);
  for (std::size_t s = 1; s <= full; ++s) {
    if (!(s & (s - 1))) continue;
    if (!every_split && !subsets.connected[s]) continue;
    if (s != full && subsets.log2_size[s] > log2_max_size) continue;
    const std::size_t low = s & (~s + 1);
    for (std::size_t a = (s - 1) & s; a > 0; a = (a - 1) & s) {
      if (!(a & low)) continue;
      const std::size_t b = s ^ a;
      if (cost[a] == none || cost[b] == none) continue;
      if (!every_split && !intersects(subsets.result[a], subsets.result[b], words)) continue;
      bool summed = false;
      for (std::size_t i = 0; i < words; ++i) {
        u[i] = subsets.result[a][i] | subsets.result[b][i];
        summed = summed || u[i] != subsets.result[s][i];
      }
      const double u_size = log2_of(u.data(), words, network);
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
