// Recursive bisection of the hypergraph: the inputs are vertices, each label a hyperedge
// weighing the log2 of its extent. A part is cut in two with a small weight of labels held on
// both sides (a label also held outside the part, or kept, is a hyperedge to an outside
// vertex: it costs the same whichever side holds it, so it counts like any other), the larger
// side at most (1 + imbalance) / 2 of the part. Each cut is the best of a few seeded
// breadth-first-grown bisections, each refined by Fiduccia-Mattheyses passes; a part of more
// than a few dozen inputs is first coarsened by matchings and its bisection refined back up
// level by level (multilevel, as hypergraph partitioners do). Parts of at most leaf_size
// inputs are ordered exactly (greedy where `optimal` refuses), then the halves are
// contracted up the tree of cuts.
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <queue>
#include <random>
#include <utility>

#include "tenex/error.hpp"
#include "tenex/graph/contraction_tree/methods.hpp"

namespace tenex::tree {

namespace {

/// A part as a hypergraph: local vertices 0 .. k-1, the labels two or more of them hold.
/// Coarsened, a vertex stands for several inputs (its weight).
struct Hypergraph {
  std::vector<std::vector<int>> pins;   // by edge: the vertices holding it
  std::vector<double> weight;           // by edge
  std::vector<std::vector<int>> edges;  // by vertex
  std::vector<int> vertex_weight;       // by vertex: inputs
};

/// Drops the edges of fewer than two pins (never cut) and lists each vertex's edges.
void finish(Hypergraph& g) {
  std::size_t kept = 0;
  for (std::size_t e = 0; e < g.pins.size(); ++e) {
    if (g.pins[e].size() < 2) continue;
    for (int v : g.pins[e]) g.edges[static_cast<std::size_t>(v)].push_back(static_cast<int>(kept));
    if (kept != e) {
      g.pins[kept] = std::move(g.pins[e]);
      g.weight[kept] = g.weight[e];
    }
    ++kept;
  }
  g.pins.resize(kept);
  g.weight.resize(kept);
}

/// A bisection and its bookkeeping: how many pins of each edge lie on each side.
struct Bisection {
  std::vector<char> side;                 // by vertex: 0 or 1
  std::vector<std::array<int, 2>> count;  // by edge
  std::array<int, 2> size{0, 0};
  double cut = 0;
};

Hypergraph hypergraph_of(const Network& network, const std::vector<std::size_t>& part, std::vector<int>& edge_of) {
  Hypergraph g;
  g.edges.resize(part.size());
  g.vertex_weight.assign(part.size(), 1);
  std::vector<Label> touched;
  for (std::size_t v = 0; v < part.size(); ++v) {
    for (Label l : network.inputs[part[v]]) {
      int& e = edge_of[static_cast<std::size_t>(l)];
      if (e < 0) {
        e = static_cast<int>(g.pins.size());
        g.pins.emplace_back();
        // A label of extent 1 still binds a little: it keeps parts connected.
        g.weight.push_back(std::max(network.log2_extent[static_cast<std::size_t>(l)], 0.0) + 1e-3);
        touched.push_back(l);
      }
      g.pins[static_cast<std::size_t>(e)].push_back(static_cast<int>(v));
    }
  }
  for (Label l : touched) edge_of[static_cast<std::size_t>(l)] = -1;
  finish(g);
  return g;
}

/// A coarser hypergraph: vertices matched in pairs (in a random order, each with the
/// unmatched neighbour it shares the most weight of small edges with, no pair above
/// `most_weight`); `coarse_of` gets each vertex's coarse vertex.
Hypergraph coarsen(const Hypergraph& g, int most_weight, std::mt19937_64& random, std::vector<int>& coarse_of) {
  const std::size_t k = g.edges.size();
  std::vector<int> order(k);
  for (std::size_t v = 0; v < k; ++v) order[v] = static_cast<int>(v);
  std::shuffle(order.begin(), order.end(), random);
  coarse_of.assign(k, -1);
  std::vector<double> shared(k, 0);
  std::vector<int> met;
  Hypergraph c;
  for (int v : order) {
    const auto u = static_cast<std::size_t>(v);
    if (coarse_of[u] >= 0) continue;
    met.clear();
    for (int e : g.edges[u]) {
      const auto& pins = g.pins[static_cast<std::size_t>(e)];
      if (pins.size() > 16) continue;  // a hyper-label says little about neighbours
      for (int w : pins) {
        const auto x = static_cast<std::size_t>(w);
        if (w == v || coarse_of[x] >= 0 || g.vertex_weight[u] + g.vertex_weight[x] > most_weight) continue;
        if (shared[x] == 0) met.push_back(w);
        shared[x] += g.weight[static_cast<std::size_t>(e)] / static_cast<double>(pins.size() - 1);
      }
    }
    int mate = -1;
    for (int w : met) {
      if (mate < 0 || shared[static_cast<std::size_t>(w)] > shared[static_cast<std::size_t>(mate)]) mate = w;
    }
    for (int w : met) shared[static_cast<std::size_t>(w)] = 0;
    coarse_of[u] = static_cast<int>(c.vertex_weight.size());
    c.vertex_weight.push_back(g.vertex_weight[u]);
    if (mate >= 0) {
      coarse_of[static_cast<std::size_t>(mate)] = coarse_of[u];
      c.vertex_weight.back() += g.vertex_weight[static_cast<std::size_t>(mate)];
    }
  }
  c.edges.resize(c.vertex_weight.size());
  for (std::size_t e = 0; e < g.pins.size(); ++e) {
    std::vector<int> pins;
    for (int v : g.pins[e]) pins.push_back(coarse_of[static_cast<std::size_t>(v)]);
    std::sort(pins.begin(), pins.end());
    pins.erase(std::unique(pins.begin(), pins.end()), pins.end());
    c.pins.push_back(std::move(pins));
    c.weight.push_back(g.weight[e]);
  }
  finish(c);
  return c;
}

Bisection bisection_of(const Hypergraph& g, std::vector<char> side) {
  Bisection b;
  b.side = std::move(side);
  b.count.assign(g.pins.size(), {0, 0});
  for (std::size_t v = 0; v < b.side.size(); ++v) b.size[static_cast<std::size_t>(b.side[v])] += g.vertex_weight[v];
  for (std::size_t e = 0; e < g.pins.size(); ++e) {
    for (int v : g.pins[e]) ++b.count[e][static_cast<std::size_t>(b.side[static_cast<std::size_t>(v)])];
    if (b.count[e][0] && b.count[e][1]) b.cut += g.weight[e];
  }
  return b;
}

/// What moving `v` to the other side takes off the cut.
double gain_of(const Hypergraph& g, const Bisection& b, int v) {
  const auto from = static_cast<std::size_t>(b.side[static_cast<std::size_t>(v)]);
  double gain = 0;
  for (int e : g.edges[static_cast<std::size_t>(v)]) {
    const auto& c = b.count[static_cast<std::size_t>(e)];
    if (c[from] == 1) gain += g.weight[static_cast<std::size_t>(e)];
    if (c[1 - from] == 0) gain -= g.weight[static_cast<std::size_t>(e)];
  }
  return gain;
}

/// Moves `v` across; `critical` gets the edges whose pins' gains may have changed.
void move(const Hypergraph& g, Bisection& b, int v, std::vector<int>* critical) {
  const auto from = static_cast<std::size_t>(b.side[static_cast<std::size_t>(v)]);
  const std::size_t to = 1 - from;
  for (int e : g.edges[static_cast<std::size_t>(v)]) {
    auto& c = b.count[static_cast<std::size_t>(e)];
    const bool was_cut = c[0] && c[1];
    --c[from];
    ++c[to];
    const bool is_cut = c[0] && c[1];
    if (was_cut != is_cut)
      b.cut += is_cut ? g.weight[static_cast<std::size_t>(e)] : -g.weight[static_cast<std::size_t>(e)];
    if (critical && (c[to] <= 2 || c[from] <= 1)) critical->push_back(e);
  }
  b.side[static_cast<std::size_t>(v)] = static_cast<char>(to);
  b.size[from] -= g.vertex_weight[static_cast<std::size_t>(v)];
  b.size[to] += g.vertex_weight[static_cast<std::size_t>(v)];
}

/// What the refinement passes of one part reuse.
struct Workspace {
  using Entry = std::pair<double, int>;
  explicit Workspace(std::size_t k) : gain(k), locked(k), stamp(k, 0) {}
  std::vector<double> gain;
  std::vector<char> locked;
  std::vector<int> stamp;  // the move that last recomputed a gain
  int clock = 0;
  std::array<std::vector<Entry>, 2> heap;  // by side: (gain, vertex), stale entries skipped
  std::vector<int> moved, critical;
  void push(int side, double gain_value, int v) {
    auto& h = heap[static_cast<std::size_t>(side)];
    h.emplace_back(gain_value, v);
    std::push_heap(h.begin(), h.end());
  }
};

/// One Fiduccia-Mattheyses pass: every vertex moved once at most, best gain first within the
/// balance bound, then rolled back to the best cut seen. Returns whether the cut shrank.
bool refine_pass(const Hypergraph& g, Bisection& b, int max_side, Workspace& w) {
  const auto k = static_cast<int>(b.side.size());
  std::fill(w.locked.begin(), w.locked.end(), 0);
  for (auto& h : w.heap) h.clear();
  for (int v = 0; v < k; ++v) {
    w.gain[static_cast<std::size_t>(v)] = gain_of(g, b, v);
    w.push(b.side[static_cast<std::size_t>(v)], w.gain[static_cast<std::size_t>(v)], v);
  }
  const double start = b.cut;
  double best = start;
  w.moved.clear();
  std::size_t best_moves = 0;
  const std::size_t patience = static_cast<std::size_t>(std::max(25, k / 4));
  while (w.moved.size() < best_moves + patience) {
    std::array<int, 2> top{-1, -1};
    for (std::size_t s = 0; s < 2; ++s) {
      auto& h = w.heap[s];
      while (!h.empty()) {
        const auto [gv, v] = h.front();
        const auto u = static_cast<std::size_t>(v);
        if (!w.locked[u] && static_cast<std::size_t>(b.side[u]) == s && gv == w.gain[u]) break;
        std::pop_heap(h.begin(), h.end());
        h.pop_back();
      }
      if (h.empty()) continue;
      const int weight = g.vertex_weight[static_cast<std::size_t>(h.front().second)];
      if (b.size[1 - s] + weight <= max_side && b.size[s] > weight) top[s] = h.front().second;
    }
    int v = top[0];
    if (v < 0 || (top[1] >= 0 && w.gain[static_cast<std::size_t>(top[1])] > w.gain[static_cast<std::size_t>(v)]))
      v = top[1];
    if (v < 0) break;
    w.locked[static_cast<std::size_t>(v)] = 1;
    w.critical.clear();
    move(g, b, v, &w.critical);
    w.moved.push_back(v);
    if (b.cut < best - 1e-12) {
      best = b.cut;
      best_moves = w.moved.size();
    }
    ++w.clock;
    for (int e : w.critical) {
      for (int u : g.pins[static_cast<std::size_t>(e)]) {
        const auto x = static_cast<std::size_t>(u);
        if (w.locked[x] || w.stamp[x] == w.clock) continue;
        w.stamp[x] = w.clock;
        w.gain[x] = gain_of(g, b, u);
        w.push(b.side[x], w.gain[x], u);
      }
    }
  }
  while (w.moved.size() > best_moves) {
    move(g, b, w.moved.back(), nullptr);
    w.moved.pop_back();
  }
  return best < start - 1e-12;
}

class Bisector {
 public:
  Bisector(const Network& network, const BisectOptions& options)
      : network_(network), options_(options), random_(options.seed), edge_of_(network.labels(), -1) {}

  Path run() {
    std::vector<std::size_t> all(network_.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    if (all.size() > 1) build(all);
    return std::move(path_);
  }

 private:
  std::size_t build(const std::vector<std::size_t>& part);
  std::size_t order_leaf(const std::vector<std::size_t>& part);
  std::vector<char> grow(const Hypergraph& g, int target, int max_side);
  Bisection initial(const Hypergraph& g, int total, int max_side, int trials, Workspace& workspace);
  std::vector<char> split(const Hypergraph& g, int max_side);

  const Network& network_;
  BisectOptions options_;
  std::mt19937_64 random_;
  std::vector<int> edge_of_;  // by label: scratch, -1 between uses
  Path path_;
};

/// A breadth-first region of `target` weight from a random vertex (another random one where
/// its component runs out) as side 0, no vertex taken that would pass `max_side`.
std::vector<char> Bisector::grow(const Hypergraph& g, int target, int max_side) {
  const std::size_t k = g.edges.size();
  std::vector<char> side(k, 1), seen(k, 0), expanded(g.pins.size(), 0);
  std::queue<int> queue;
  std::uniform_int_distribution<std::size_t> pick(0, k - 1);
  int grown = 0;
  std::size_t reached = 0;
  while (grown < target) {
    if (queue.empty()) {
      if (reached == k) break;
      std::size_t start = pick(random_);
      while (seen[start]) start = (start + 1) % k;
      seen[start] = 1;
      ++reached;
      queue.push(static_cast<int>(start));
    }
    const auto v = static_cast<std::size_t>(queue.front());
    queue.pop();
    if (grown + g.vertex_weight[v] > max_side) continue;
    side[v] = 0;
    grown += g.vertex_weight[v];
    const std::vector<int>& edges = g.edges[v];
    const std::size_t rotation = edges.empty() ? 0 : random_() % edges.size();
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const int e = edges[(i + rotation) % edges.size()];
      if (expanded[static_cast<std::size_t>(e)]) continue;
      expanded[static_cast<std::size_t>(e)] = 1;
      for (int u : g.pins[static_cast<std::size_t>(e)]) {
        if (!seen[static_cast<std::size_t>(u)]) {
          seen[static_cast<std::size_t>(u)] = 1;
          ++reached;
          queue.push(u);
        }
      }
    }
  }
  return side;
}

/// Refinement passes until one gains nothing (8 at most).
void refine(const Hypergraph& g, Bisection& b, int max_side, Workspace& workspace) {
  for (int pass = 0; pass < 8 && refine_pass(g, b, max_side, workspace); ++pass) {
  }
}

/// The best of a few grown and refined bisections.
Bisection Bisector::initial(const Hypergraph& g, int total, int max_side, int trials, Workspace& workspace) {
  std::uniform_int_distribution<int> target(total - max_side, max_side);
  Bisection best;
  best.cut = std::numeric_limits<double>::infinity();
  for (int t = 0; t < trials; ++t) {
    Bisection b = bisection_of(g, grow(g, target(random_), max_side));
    refine(g, b, max_side, workspace);
    if (b.size[0] > 0 && b.size[1] > 0 && b.cut < best.cut - 1e-12) best = std::move(b);
  }
  return best;
}

/// Side by vertex. Small parts: the best of a few refined bisections. Larger ones, multilevel:
/// the hypergraph coarsened by matchings to a few dozen vertices, bisected there, and the
/// bisection carried back level by level, refined at each; the best of a few such cycles.
std::vector<char> Bisector::split(const Hypergraph& g, int max_side) {
  constexpr std::size_t coarsest = 40;
  const auto k = static_cast<int>(g.edges.size());
  Workspace workspace(static_cast<std::size_t>(k));
  if (g.edges.size() <= coarsest) {
    Bisection b = initial(g, k, max_side, 4, workspace);
    return std::move(b.side);
  }
  Bisection best;
  best.cut = std::numeric_limits<double>::infinity();
  for (int cycle = 0; cycle < 2; ++cycle) {
    std::deque<Hypergraph> levels;  // coarser and coarser (a deque: references stay valid)
    std::vector<std::vector<int>> coarse_of;
    const Hypergraph* top = &g;
    while (top->edges.size() > coarsest) {
      std::vector<int> map;
      Hypergraph c = coarsen(*top, std::max(1, max_side / 4), random_, map);
      if (10 * c.edges.size() > 9 * top->edges.size()) break;
      levels.push_back(std::move(c));
      coarse_of.push_back(std::move(map));
      top = &levels.back();
    }
    Bisection b = initial(*top, k, max_side, 3, workspace);
    for (std::size_t level = levels.size(); level-- > 0;) {
      const Hypergraph& fine = level == 0 ? g : levels[level - 1];
      std::vector<char> side(fine.edges.size());
      for (std::size_t v = 0; v < side.size(); ++v) side[v] = b.side[static_cast<std::size_t>(coarse_of[level][v])];
      b = bisection_of(fine, std::move(side));
      refine(fine, b, max_side, workspace);
    }
    if (b.size[0] > 0 && b.size[1] > 0 && b.cut < best.cut - 1e-12) best = std::move(b);
  }
  return std::move(best.side);
}

std::size_t Bisector::build(const std::vector<std::size_t>& part) {
  if (part.size() == 1) return part[0];
  if (part.size() <= std::max<std::size_t>(options_.leaf_size, 2)) return order_leaf(part);
  const Hypergraph g = hypergraph_of(network_, part, edge_of_);
  const auto k = static_cast<int>(part.size());
  const double imbalance = std::clamp(options_.imbalance, 0.0, 0.98);
  const int max_side = std::min(k - 1, std::max((k + 1) / 2, static_cast<int>((1 + imbalance) * k / 2)));
  std::vector<char> side = split(g, max_side);
  if (side.size() != part.size()) {  // no bisection kept both sides (not expected): halves
    side.assign(part.size(), 1);
    std::fill(side.begin(), side.begin() + k / 2, 0);
  }
  std::array<std::vector<std::size_t>, 2> halves;
  for (std::size_t v = 0; v < part.size(); ++v) halves[static_cast<std::size_t>(side[v])].push_back(part[v]);
  if (halves[0].empty() || halves[1].empty())
    throw InternalError("tenex: contraction order: bisection left a side empty");
  const std::size_t a = build(halves[0]);
  const std::size_t b = build(halves[1]);
  path_.emplace_back(std::min(a, b), std::max(a, b));
  return network_.size() + path_.size() - 1;
}

/// The part as a network of its own (labels renumbered; a label held outside the part is
/// kept), ordered exactly, its steps appended in the original numbering.
std::size_t Bisector::order_leaf(const std::vector<std::size_t>& part) {
  Network sub;
  std::vector<Label> touched;
  for (std::size_t v : part) {
    std::vector<Label> labels;
    for (Label l : network_.inputs[v]) {
      const auto u = static_cast<std::size_t>(l);
      int& local = edge_of_[u];
      if (local < 0) {
        local = static_cast<int>(sub.extent.size());
        touched.push_back(l);
        sub.extent.push_back(network_.extent[u]);
        sub.log2_extent.push_back(network_.log2_extent[u]);
        sub.kept.push_back(network_.kept[u]);
        sub.holders.push_back(0);
        sub.names.push_back(network_.names[u]);
      }
      ++sub.holders[static_cast<std::size_t>(local)];
      labels.push_back(local);
    }
    std::sort(labels.begin(), labels.end());
    sub.inputs.push_back(std::move(labels));
  }
  for (Label l : touched) {
    const auto u = static_cast<std::size_t>(l);
    const auto local = static_cast<std::size_t>(edge_of_[u]);
    if (sub.holders[local] < network_.holders[u]) sub.kept[local] = 1;
    edge_of_[u] = -1;
  }
  std::optional<Path> exact = optimal(sub, part.size());
  const Path order = exact ? std::move(*exact) : greedy(sub);
  std::vector<std::size_t> id(part);
  for (const auto& [a, b] : order) {
    path_.emplace_back(std::min(id[a], id[b]), std::max(id[a], id[b]));
    id.push_back(network_.size() + path_.size() - 1);
  }
  return id.back();
}

}  // namespace

Path bisect(const Network& network, const BisectOptions& options) { return Bisector(network, options).run(); }

}  // namespace tenex::tree
