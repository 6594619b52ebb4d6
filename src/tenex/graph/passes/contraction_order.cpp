#include "tenex/graph/passes/contraction_order.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>


namespace tenex::passes {

namespace {


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

/// Greedy: repeatedly the cheapest pair of live slots that share a label, by (does not fit
/// the limit, flops, result size), ties to the earliest slots; then outer products.
///
/// Slots with one label set form a class, and every pair drawn from two classes (or two
/// from one) costs the same: the labels a pair keeps are those kept in the end or held by
/// a third live slot, and a contraction never changes that for a pair whose slots live on
/// (a label it takes from a third slot it holds again unless the pair holds the last
/// copies). So the cheapest pair of two classes is their first live members (the first two
/// of one class), and the queue holds one candidate per pair of classes sharing a label,
/// renewed when a class's first member changes; candidates whose slots died are skipped
/// when popped. A product of n factors sharing one label (a Hadamard product, a trace of
/// a power) orders in O(n log n), not the O(n^2) of a candidate per pair of slots; with
/// distinct label sets a class is a slot and this is the queue of pairs it always was.
class GreedyOrder {
 public:
  GreedyOrder(const Numbered& p, double limit) : p_(p), limit_(limit), slots_(p.operands), held_(p.extent.size(), 0) {
    live_.assign(slots_.size(), 1);
    for (const Set& s : slots_) sizes_.push_back(size_of(s, p.extent));
    for (const Set& s : slots_) {
      for (int l : s) ++held_[static_cast<std::size_t>(l)];
    }
    holders_.resize(p.extent.size());
  }

  ContractionPath run() {
    const std::size_t n = p_.operands.size();
    for (std::size_t i = 0; i < n; ++i) join(i);
    for (std::size_t id = 0; id < classes_.size(); ++id) pair_up(id);
    contract_pairs();
    outer_products();
    return std::move(path_);
  }

 private:
  struct Class {
    Set labels;
    std::vector<std::size_t> members;  // in slot order; those before `first` are dead
    std::size_t first = 0;
    std::size_t count = 0;       // live members
    unsigned version = 0;        // bumped each time the class comes back to life
    std::size_t seen_round = 0;  // the last pairing round that met it
  };
  // (does not fit, cost, first, second): the smallest first; ties go to the earliest slots.
  using Candidate = std::tuple<int, double, std::size_t, std::size_t>;

  // The labels the contraction of slots a and b keeps: those kept in the end or held by a
  // third live slot.
  Set result_of(std::size_t a, std::size_t b) const {
    Set out;
    const Set all = union_of(slots_[a], slots_[b]);
    for (int l : all) {
      const auto u = static_cast<std::size_t>(l);
      const int here = static_cast<int>(std::binary_search(slots_[a].begin(), slots_[a].end(), l)) +
                       static_cast<int>(std::binary_search(slots_[b].begin(), slots_[b].end(), l));
      if (p_.kept[u] || held_[u] > here) out.push_back(l);
    }
    return out;
  }

  void consider(std::size_t a, std::size_t b) {
    if (a > b) std::swap(a, b);
    const double out = size_of(result_of(a, b), p_.extent);
    const double flops = size_of(union_of(slots_[a], slots_[b]), p_.extent);
    queue_.emplace(fits(out, limit_) ? 0 : 1, flops + out * 1e-3, a, b);
  }

  // Slot `slot` into the class of its labels (made, or brought back to life); its id.
  std::size_t join(std::size_t slot) {
    auto [it, inserted] = class_ids_.emplace(slots_[slot], classes_.size());
    if (inserted) classes_.push_back(Class{slots_[slot], {}, 0, 0, 0, 0});
    const std::size_t id = it->second;
    Class& k = classes_[id];
    if (k.count == 0) {
      ++k.version;
      k.members.clear();
      k.first = 0;
      for (int l : k.labels) holders_[static_cast<std::size_t>(l)].emplace_back(id, k.version);
    }
    k.members.push_back(slot);
    ++k.count;
    class_of_.resize(slots_.size());
    class_of_[slot] = id;
    return id;
  }

  void leave(std::size_t slot) {
    Class& k = classes_[class_of_[slot]];
    --k.count;
    while (k.first < k.members.size() && !live_[k.members[k.first]]) ++k.first;
  }

  // The live member after the first (the second of the class's cheapest pair).
  std::size_t second(const Class& k) const {
    std::size_t i = k.first + 1;
    while (!live_[k.members[i]]) ++i;
    return k.members[i];
  }

  // Queues the cheapest pair of class `id` with every class sharing one of its labels.
  void pair_up(std::size_t id) {
    const Class& k = classes_[id];
    if (k.count == 0) return;
    ++round_;
    for (int l : k.labels) {
      auto& list = holders_[static_cast<std::size_t>(l)];
      std::erase_if(list, [&](const std::pair<std::size_t, unsigned>& entry) {
        return classes_[entry.first].count == 0 || classes_[entry.first].version != entry.second;
      });
      for (const auto& [other_id, version] : list) {
        Class& other = classes_[other_id];
        if (other.seen_round == round_) continue;
        other.seen_round = round_;
        if (other_id != id) {
          consider(k.members[k.first], other.members[other.first]);
        } else if (k.count >= 2) {
          consider(k.members[k.first], second(k));
        }
      }
    }
  }

  // Slots a and b contracted into a new slot, whose index it returns.
  std::size_t contract(std::size_t a, std::size_t b) {
    Set out = result_of(a, b);
    live_[a] = live_[b] = 0;
    for (int l : slots_[a]) --held_[static_cast<std::size_t>(l)];
    for (int l : slots_[b]) --held_[static_cast<std::size_t>(l)];
    const std::size_t c = slots_.size();
    for (int l : out) ++held_[static_cast<std::size_t>(l)];
    sizes_.push_back(size_of(out, p_.extent));
    slots_.push_back(std::move(out));
    live_.push_back(1);
    path_.emplace_back(a, b);
    return c;
  }

  // The queued pairs, cheapest first, each contraction renewing the candidates it changes.
  void contract_pairs() {
    while (!queue_.empty()) {
      const auto [over, cost, a, b] = queue_.top();
      queue_.pop();
      if (!live_[a] || !live_[b]) continue;
      const std::size_t c = contract(a, b);
      leave(a);
      leave(b);
      const std::size_t joined = join(c);
      // The classes whose first members (or whose own pair) changed.
      const std::size_t ka = class_of_[a], kb = class_of_[b];
      pair_up(ka);
      if (kb != ka) pair_up(kb);
      if (joined != ka && joined != kb) pair_up(joined);
    }
  }

  // Nothing shares a label any more: outer products, the two smallest first.
  void outer_products() {
    using BySize = std::pair<double, std::size_t>;
    std::priority_queue<BySize, std::vector<BySize>, std::greater<>> rest;
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      if (live_[s]) rest.emplace(sizes_[s], s);
    }
    while (rest.size() > 1) {
      const std::size_t a = rest.top().second;
      rest.pop();
      const std::size_t b = rest.top().second;
      rest.pop();
      const std::size_t c = contract(std::min(a, b), std::max(a, b));
      rest.emplace(sizes_[c], c);
    }
  }

  const Numbered& p_;
  double limit_;
  std::vector<Set> slots_;
  std::vector<char> live_;
  std::vector<double> sizes_;
  std::vector<int> held_;  // live slots holding each label
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue_;
  std::vector<Class> classes_;
  std::map<Set, std::size_t> class_ids_;
  std::vector<std::size_t> class_of_;  // by slot
  // The classes holding each label, with the version they were listed under: an entry of a
  // class that emptied (or came back since) is stale and dropped when met.
  std::vector<std::vector<std::pair<std::size_t, unsigned>>> holders_;
  std::size_t round_ = 0;
  ContractionPath path_;
};

ContractionPath order_greedy(const Numbered& p, double limit) { return GreedyOrder(p, limit).run(); }

}  // namespace

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
