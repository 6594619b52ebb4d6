// Subtree reconfiguration: a node of the tree and the steps below it, down to a frontier of
// at most `subtree_size` parts (grown by opening the part whose own step costs most), are
// re-ordered exactly: each part's result is an input of a small network (its legs' labels;
// a label also held outside the subtree, or kept, is kept there, so nothing is summed early),
// `optimal` orders it, and the order replaces the old steps when it costs less. Nodes are
// visited costliest first, passes repeated while one improves and the budget lasts; the
// passes take turns growing frontiers three ways (different subtrees find different gains).
#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <random>

#include "tenex/error.hpp"
#include "tenex/graph/contraction_tree/methods.hpp"

namespace tenex::tree {

namespace {

/// How a subtree's frontier grows: by opening the part whose own step costs most, the
/// first part (its left side first: deep on one side), or a random one. Passes take turns.
enum class Growth { costliest, first, random };

struct Node {
  int left = -1, right = -1, parent = -1;  // an input: no children
  Legs legs;
  double log2_cost = -1e300;  // its own step's flops
};

class Tree {
 public:
  Tree(const Network& network, const Path& path);
  /// Re-orders the subtree at `x`, its frontier grown as `growth` says; whether it got cheaper.
  bool reconfigure_at(int x, std::size_t subtree_size, Growth growth, std::mt19937_64& random);
  /// The internal nodes, costliest step first.
  std::vector<int> by_cost() const;
  Path path() const;

 private:
  void set_step(int node, int left, int right);
  std::size_t part_to_open(const std::vector<int>& parts, Growth growth, std::mt19937_64& random) const;
  Network parts_network(const std::vector<int>& parts, int x);

  const Network& network_;
  std::vector<Node> nodes_;
  std::vector<int> local_;  // by label: scratch, -1 between uses
};

Tree::Tree(const Network& network, const Path& path) : network_(network), local_(network.labels(), -1) {
  nodes_.resize(network.size() + path.size());
  for (std::size_t i = 0; i < network.size(); ++i) nodes_[i].legs = network.leaf(i);
  for (std::size_t i = 0; i < path.size(); ++i) {
    set_step(static_cast<int>(network.size() + i), static_cast<int>(path[i].first), static_cast<int>(path[i].second));
  }
}

void Tree::set_step(int node, int left, int right) {
  Node& x = nodes_[static_cast<std::size_t>(node)];
  x.left = left;
  x.right = right;
  nodes_[static_cast<std::size_t>(left)].parent = node;
  nodes_[static_cast<std::size_t>(right)].parent = node;
  double log2_union = 0;
  bool summed = false;
  x.legs = network_.merge(nodes_[static_cast<std::size_t>(left)].legs, nodes_[static_cast<std::size_t>(right)].legs,
                          log2_union, summed);
  x.log2_cost = log2_union + (summed ? 1.0 : 0.0);
}

std::vector<int> Tree::by_cost() const {
  std::vector<int> order;
  for (std::size_t i = network_.size(); i < nodes_.size(); ++i) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return nodes_[static_cast<std::size_t>(a)].log2_cost > nodes_[static_cast<std::size_t>(b)].log2_cost;
  });
  return order;
}

/// The parts' results as the inputs of a network: a label is kept where the subtree's own
/// result holds it (held outside the subtree, or kept), its holders the parts holding it.
Network Tree::parts_network(const std::vector<int>& parts, int x) {
  Network sub;
  std::vector<Label> touched;
  for (int p : parts) {
    std::vector<Label> labels;
    for (const auto& [l, count] : nodes_[static_cast<std::size_t>(p)].legs) {
      const auto u = static_cast<std::size_t>(l);
      if (local_[u] < 0) {
        local_[u] = static_cast<int>(sub.extent.size());
        touched.push_back(l);
        sub.extent.push_back(network_.extent[u]);
        sub.log2_extent.push_back(network_.log2_extent[u]);
        sub.kept.push_back(0);
        sub.holders.push_back(0);
        sub.names.push_back(network_.names[u]);
      }
      ++sub.holders[static_cast<std::size_t>(local_[u])];
      labels.push_back(local_[u]);
    }
    std::sort(labels.begin(), labels.end());
    sub.inputs.push_back(std::move(labels));
  }
  for (const auto& [l, count] : nodes_[static_cast<std::size_t>(x)].legs) {
    if (local_[static_cast<std::size_t>(l)] >= 0)
      sub.kept[static_cast<std::size_t>(local_[static_cast<std::size_t>(l)])] = 1;
  }
  for (Label l : touched) local_[static_cast<std::size_t>(l)] = -1;
  return sub;
}

/// Which part of the frontier the next one opened is.
std::size_t Tree::part_to_open(const std::vector<int>& parts, Growth growth, std::mt19937_64& random) const {
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (nodes_[static_cast<std::size_t>(parts[i])].left >= 0) open.push_back(i);
  }
  if (open.empty()) return parts.size();
  switch (growth) {
    case Growth::costliest:
      return *std::max_element(open.begin(), open.end(), [&](std::size_t a, std::size_t b) {
        return nodes_[static_cast<std::size_t>(parts[a])].log2_cost <
               nodes_[static_cast<std::size_t>(parts[b])].log2_cost;
      });
    case Growth::first: return open.front();
    case Growth::random: return open[random() % open.size()];
  }
  return open.front();
}

bool Tree::reconfigure_at(int x, std::size_t subtree_size, Growth growth, std::mt19937_64& random) {
  const Node& top = nodes_[static_cast<std::size_t>(x)];
  std::vector<int> parts{top.left, top.right}, inside{x};
  double old_cost = top.log2_cost;
  while (parts.size() < subtree_size) {
    const std::size_t open = part_to_open(parts, growth, random);
    if (open == parts.size()) break;
    const Node& p = nodes_[static_cast<std::size_t>(parts[open])];
    inside.push_back(parts[open]);
    old_cost = log2_add(old_cost, p.log2_cost);
    parts[open] = p.left;
    parts.push_back(p.right);
  }
  if (parts.size() < 3) return false;
  const Network sub = parts_network(parts, x);
  const std::optional<Path> order = optimal(sub, parts.size());
  if (!order) return false;
  if (score(sub, *order).log2_flops >= old_cost - 1e-10) return false;
  // The old steps' nodes take the new steps, `x` the last (its result is the same).
  std::rotate(inside.begin(), inside.begin() + 1, inside.end());
  std::vector<int> id(parts);
  for (std::size_t i = 0; i < order->size(); ++i) {
    set_step(inside[i], id[(*order)[i].first], id[(*order)[i].second]);
    id.push_back(inside[i]);
  }
  return true;
}

Path Tree::path() const {
  const std::size_t n = network_.size();
  Path out;
  if (nodes_.size() <= n) return out;
  int root = static_cast<int>(n);
  while (nodes_[static_cast<std::size_t>(root)].parent >= 0) root = nodes_[static_cast<std::size_t>(root)].parent;
  std::vector<std::size_t> id(nodes_.size());
  for (std::size_t i = 0; i < n; ++i) id[i] = i;
  // Post-order without recursion: a node is emitted when both children are.
  std::vector<std::pair<int, bool>> stack{{root, false}};
  while (!stack.empty()) {
    const auto [v, ready] = stack.back();
    stack.pop_back();
    const Node& node = nodes_[static_cast<std::size_t>(v)];
    if (node.left < 0) continue;
    if (ready) {
      out.emplace_back(id[static_cast<std::size_t>(node.left)], id[static_cast<std::size_t>(node.right)]);
      id[static_cast<std::size_t>(v)] = n + out.size() - 1;
      continue;
    }
    stack.emplace_back(v, true);
    stack.emplace_back(node.right, false);
    stack.emplace_back(node.left, false);
  }
  if (out.size() + 1 != n) throw InternalError("tenex: contraction order: reconfiguration lost a step");
  return out;
}

}  // namespace

Path reconfigure(const Network& network, Path path, std::size_t subtree_size, double seconds) {
  check_path(network.size(), path);
  subtree_size = std::min<std::size_t>(subtree_size, 16);
  if (network.size() < 3 || subtree_size < 3) return path;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::clamp(seconds, 0.0, 1e6)));
  Tree tree(network, path);
  std::mt19937_64 random(network.size());
  constexpr std::array<Growth, 3> turns{Growth::costliest, Growth::first, Growth::random};
  // Passes until one of each growth in a row improves nothing, or the budget ends.
  std::size_t idle = 0;
  for (std::size_t pass = 0; idle < turns.size(); ++pass) {
    bool improved = false;
    for (int x : tree.by_cost()) {
      if (Clock::now() >= deadline) {
        idle = turns.size();
        break;
      }
      improved = tree.reconfigure_at(x, subtree_size, turns[pass % turns.size()], random) || improved;
    }
    idle = improved ? 0 : idle + 1;
  }
  Path out = tree.path();
  check_path(network.size(), out);
  return cheaper(score(network, out), score(network, path)) ? out : path;
}

}  // namespace tenex::tree
