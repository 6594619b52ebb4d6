#include "tenex/graph/passes/contraction_order.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_set>

#include "tenex/labels.hpp"

namespace tenex::passes {

namespace {

using tenex::detail::contains_label;
using tenex::detail::union_labels;

constexpr double infinity = std::numeric_limits<double>::infinity();

/// A label set: sorted, unique label numbers.
using Set = std::vector<int>;

/// The operands with their labels numbered, and what each number stands for.
struct Numbered {
  std::vector<Set> operands;
  std::vector<double> extent;  // by label number
  std::vector<char> kept;      // by label number: in the result
};

Numbered number_labels(const std::vector<std::vector<std::string>>& operands,
                       const std::map<std::string, std::size_t>& extents, const std::vector<std::string>& keep) {
  Numbered out;
  std::map<std::string, int> ids;
  auto id_of = [&](const std::string& l) {
    auto [it, inserted] = ids.emplace(l, static_cast<int>(out.extent.size()));
    if (inserted) {
      out.extent.push_back(static_cast<double>(extents.at(l)));
      out.kept.push_back(0);
    }
    return it->second;
  };
  for (const auto& labels : operands) {
    Set s;
    for (const std::string& l : labels) s.push_back(id_of(l));
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    out.operands.push_back(std::move(s));
  }
  for (const std::string& l : keep) {
    if (auto it = ids.find(l); it != ids.end()) out.kept[static_cast<std::size_t>(it->second)] = 1;
  }
  return out;
}

double size_of(const Set& s, const std::vector<double>& extent) {
  double p = 1;
  for (int l : s) p *= extent[static_cast<std::size_t>(l)];
  return p;
}

Set union_of(const Set& a, const Set& b) {
  Set out;
  out.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

bool fits(double size, double limit) { return limit <= 0 || size <= limit; }

/// Exact: the cheapest split of every subset, subsets as bit masks. With `limit`, a subset
/// whose result does not fit cannot be an intermediate; returns false when no order fits.
bool order_exact(const Numbered& p, double limit, ContractionPath& path) {
  const std::size_t n = p.operands.size();
  const std::size_t full = (std::size_t{1} << n) - 1;
  // Labels the contraction of a subset keeps: those kept in the end or held outside it.
  std::vector<Set> result(full + 1);
  std::vector<double> result_size(full + 1, 1);
  std::vector<int> held(p.extent.size(), 0);
  for (const Set& s : p.operands) {
    for (int l : s) ++held[static_cast<std::size_t>(l)];
  }
  std::vector<int> inside(p.extent.size(), 0);
  for (std::size_t s = 1; s <= full; ++s) {
    if (!(s & (s - 1))) {
      result[s] = p.operands[static_cast<std::size_t>(__builtin_ctzll(s))];
    } else {
      const std::size_t low = s & (~s + 1);
      const Set all = union_of(result[low], result[s ^ low]);  // every label of the subset still needed
      std::fill(inside.begin(), inside.end(), 0);
      for (std::size_t i = 0; i < n; ++i) {
        if (s >> i & 1) {
          for (int l : p.operands[i]) ++inside[static_cast<std::size_t>(l)];
        }
      }
      for (int l : all) {
        const auto u = static_cast<std::size_t>(l);
        if (p.kept[u] || held[u] > inside[u]) result[s].push_back(l);
      }
    }
    result_size[s] = size_of(result[s], p.extent);
  }
  std::vector<double> cost(full + 1, infinity);
  std::vector<std::size_t> split(full + 1, 0);
  for (std::size_t i = 0; i < n; ++i) cost[std::size_t{1} << i] = 0;
  for (std::size_t s = 1; s <= full; ++s) {
    if (!(s & (s - 1))) continue;
    if (s != full && !fits(result_size[s], limit)) continue;
    // Each unordered split once: the part holding the lowest bit of s is `a`.
    const std::size_t low = s & (~s + 1);
    for (std::size_t a = (s - 1) & s; a > 0; a = (a - 1) & s) {
      if (!(a & low)) continue;
      const std::size_t b = s ^ a;
      if (cost[a] == infinity || cost[b] == infinity) continue;
      const double c = cost[a] + cost[b] + 2.0 * size_of(union_of(result[a], result[b]), p.extent);
      if (c < cost[s]) {
        cost[s] = c;
        split[s] = a;
      }
    }
  }
  if (cost[full] == infinity) return false;
  std::size_t next_slot = n;
  std::function<std::size_t(std::size_t)> emit = [&](std::size_t s) -> std::size_t {
    if (!(s & (s - 1))) return static_cast<std::size_t>(__builtin_ctzll(s));
    const std::size_t left = emit(split[s]);
    const std::size_t right = emit(s ^ split[s]);
    path.emplace_back(left, right);
    return next_slot++;
  };
  emit(full);
  return true;
}

/// Greedy: a priority queue of candidate pairs (those sharing a label), cheapest first by
/// (does not fit the limit, flops, result size); pairs made stale by an earlier step are
/// skipped when popped. A step changes the cost of no pair but those with its result.
ContractionPath order_greedy(const Numbered& p, double limit) {
  const std::size_t n = p.operands.size();
  std::vector<Set> slots = p.operands;
  std::vector<char> live(n, 1);
  std::vector<double> sizes;
  for (const Set& s : slots) sizes.push_back(size_of(s, p.extent));
  std::vector<int> held(p.extent.size(), 0);                       // live slots holding each label
  std::vector<std::vector<std::size_t>> holders(p.extent.size());  // slots that held it (some dead)
  for (std::size_t i = 0; i < n; ++i) {
    for (int l : slots[i]) {
      ++held[static_cast<std::size_t>(l)];
      holders[static_cast<std::size_t>(l)].push_back(i);
    }
  }
  auto result_of = [&](std::size_t a, std::size_t b) {
    Set out;
    const Set all = union_of(slots[a], slots[b]);
    for (int l : all) {
      const auto u = static_cast<std::size_t>(l);
      const int here = static_cast<int>(std::binary_search(slots[a].begin(), slots[a].end(), l)) +
                       static_cast<int>(std::binary_search(slots[b].begin(), slots[b].end(), l));
      if (p.kept[u] || held[u] > here) out.push_back(l);
    }
    return out;
  };
  // (does not fit, cost, first, second): the smallest first; ties go to the earliest slots.
  using Candidate = std::tuple<int, double, std::size_t, std::size_t>;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](std::size_t a, std::size_t b) {
    if (a > b) std::swap(a, b);
    const double out = size_of(result_of(a, b), p.extent);
    const double flops = size_of(union_of(slots[a], slots[b]), p.extent);
    queue.emplace(fits(out, limit) ? 0 : 1, flops + out * 1e-3, a, b);
  };
  {
    std::unordered_set<std::uint64_t> seen;
    for (const auto& list : holders) {
      for (std::size_t x = 0; x < list.size(); ++x) {
        for (std::size_t y = x + 1; y < list.size(); ++y) {
          if (seen.insert(static_cast<std::uint64_t>(list[x]) << 32 | list[y]).second) consider(list[x], list[y]);
        }
      }
    }
  }
  ContractionPath path;
  auto contract = [&](std::size_t a, std::size_t b) {
    Set out = result_of(a, b);
    live[a] = live[b] = 0;
    for (int l : slots[a]) --held[static_cast<std::size_t>(l)];
    for (int l : slots[b]) --held[static_cast<std::size_t>(l)];
    const std::size_t c = slots.size();
    for (int l : out) {
      ++held[static_cast<std::size_t>(l)];
      holders[static_cast<std::size_t>(l)].push_back(c);
    }
    sizes.push_back(size_of(out, p.extent));
    slots.push_back(std::move(out));
    live.push_back(1);
    path.emplace_back(a, b);
    return c;
  };
  while (!queue.empty()) {
    const auto [over, cost, a, b] = queue.top();
    queue.pop();
    if (!live[a] || !live[b]) continue;
    const std::size_t c = contract(a, b);
    // The new slot's partners: the live slots sharing one of its labels.
    std::unordered_set<std::size_t> partners;
    for (int l : slots[c]) {
      auto& list = holders[static_cast<std::size_t>(l)];
      std::erase_if(list, [&](std::size_t s) { return !live[s]; });
      for (std::size_t s : list) {
        if (s != c) partners.insert(s);
      }
    }
    std::vector<std::size_t> sorted(partners.begin(), partners.end());
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t s : sorted) consider(s, c);
  }
  // Nothing shares a label any more: outer products, the two smallest first.
  using BySize = std::pair<double, std::size_t>;
  std::priority_queue<BySize, std::vector<BySize>, std::greater<>> rest;
  for (std::size_t s = 0; s < slots.size(); ++s) {
    if (live[s]) rest.emplace(sizes[s], s);
  }
  while (rest.size() > 1) {
    const std::size_t a = rest.top().second;
    rest.pop();
    const std::size_t b = rest.top().second;
    rest.pop();
    const std::size_t c = contract(std::min(a, b), std::max(a, b));
    rest.emplace(sizes[c], c);
  }
  return path;
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
                              const std::map<std::string, std::size_t>& extents, const std::vector<std::string>& keep,
                              double max_intermediate) {
  const std::size_t n = operands.size();
  if (n < 2) return {};
  if (n == 2) return {{0, 1}};
  const Numbered numbered = number_labels(operands, extents, keep);
  if (n <= exact_order_limit) {
    ContractionPath path;
    if (max_intermediate > 0 && order_exact(numbered, max_intermediate, path)) return path;
    path.clear();
    order_exact(numbered, 0, path);
    return path;
  }
  return order_greedy(numbered, max_intermediate);
}

}  // namespace tenex::passes
