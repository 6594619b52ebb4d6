#include "tenex/graph/passes/contraction_order.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include "tenex/labels.hpp"

namespace tenex::passes {

namespace {

using tenex::detail::contains_label;
using tenex::detail::union_labels;

double product_of(const std::vector<std::string>& labels, const std::map<std::string, std::size_t>& extents) {
  double p = 1;
  for (const auto& l : labels) p *= static_cast<double>(extents.at(l));
  return p;
}

}  // namespace

std::vector<std::string> pair_result_labels(const std::vector<std::string>& a, const std::vector<std::string>& b,
                                            const std::vector<std::string>& needed) {
  std::vector<std::string> out;
  for (const auto& l : union_labels(a, b)) {
    if (contains_label(needed, l)) out.push_back(l);
  }
  return out;
}

ContractionPath order_product(const std::vector<std::vector<std::string>>& operands,
                              const std::map<std::string, std::size_t>& extents, const std::vector<std::string>& keep) {
  const std::size_t n = operands.size();
  ContractionPath path;
  if (n < 2) return path;
  if (n == 2) return {{0, 1}};

  if (n <= 10) {
    // Labels the contraction of a subset keeps: those in keep or outside the subset.
    const std::size_t full = (std::size_t{1} << n) - 1;
    std::vector<std::vector<std::string>> result(full + 1);
    for (std::size_t s = 1; s <= full; ++s) {
      std::vector<std::string> inside, outside = keep;
      for (std::size_t i = 0; i < n; ++i) {
        auto& target = (s >> i & 1) ? inside : outside;
        target.insert(target.end(), operands[i].begin(), operands[i].end());
      }
      for (const auto& l : union_labels({}, inside)) {
        if (contains_label(outside, l)) result[s].push_back(l);
      }
      if (!(s & (s - 1))) result[s] = operands[__builtin_ctzll(s)];
    }
    std::vector<double> cost(full + 1, std::numeric_limits<double>::infinity());
    std::vector<std::size_t> split(full + 1, 0);
    for (std::size_t i = 0; i < n; ++i) cost[std::size_t{1} << i] = 0;
    for (std::size_t s = 1; s <= full; ++s) {
      if (!(s & (s - 1))) continue;
      // Each unordered split once: the part holding the lowest bit of s is `a`.
      const std::size_t low = s & (~s + 1);
      for (std::size_t a = (s - 1) & s; a > 0; a = (a - 1) & s) {
        if (!(a & low)) continue;
        const std::size_t b = s ^ a;
        double c = cost[a] + cost[b] + 2.0 * product_of(union_labels(result[a], result[b]), extents);
        if (c < cost[s]) {
          cost[s] = c;
          split[s] = a;
        }
      }
    }
    std::size_t next_slot = n;
    std::function<std::size_t(std::size_t)> emit = [&](std::size_t s) -> std::size_t {
      if (!(s & (s - 1))) return static_cast<std::size_t>(__builtin_ctzll(s));
      std::size_t left = emit(split[s]);
      std::size_t right = emit(s ^ split[s]);
      path.emplace_back(left, right);
      return next_slot++;
    };
    emit(full);
    return path;
  }

  // Greedy: the cheapest pair first.
  std::vector<std::vector<std::string>> slots = operands;
  std::vector<bool> live(n, true);
  for (std::size_t round = 0; round + 1 < n; ++round) {
    double best = std::numeric_limits<double>::infinity();
    std::size_t bi = 0, bj = 0;
    std::vector<std::string> best_labels;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (!live[i]) continue;
      for (std::size_t j = i + 1; j < slots.size(); ++j) {
        if (!live[j]) continue;
        std::vector<std::string> needed = keep;
        for (std::size_t s = 0; s < slots.size(); ++s) {
          if (live[s] && s != i && s != j) needed.insert(needed.end(), slots[s].begin(), slots[s].end());
        }
        auto out = pair_result_labels(slots[i], slots[j], needed);
        double c = product_of(union_labels(slots[i], slots[j]), extents) + product_of(out, extents) * 1e-3;
        if (c < best) {
          best = c;
          bi = i;
          bj = j;
          best_labels = out;
        }
      }
    }
    live[bi] = live[bj] = false;
    slots.push_back(best_labels);
    live.push_back(true);
    path.emplace_back(bi, bj);
  }
  return path;
}

}  // namespace tenex::passes
