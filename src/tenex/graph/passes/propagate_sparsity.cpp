// Sparsity: which elements of every node can be non-zero (docs/sparse.md).
//
// A node's `holds` are the sparse maps true of its value: a mask's maps and its operand's;
// through a product, a sum over labels or a permutation, the maps of the operands whose
// labels the result keeps, and their compositions through any label (i->a and a->Q give
// i->Q: (i, Q) is non-zero only if some a pairs with both); through a sum or difference
// the maps both operands hold; through a quotient the numerator's; through a slice the
// maps cut to the block; through a fused region the maps under which its program gives
// zero when the operands it loads are zero. `pattern` counts what they allow. Nothing
// here changes what runs: plan_sparse_evaluation decides that.
#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "tenex/graph/passes/passes.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex::passes {

namespace {

constexpr std::size_t kMaxMaps = 16;  // per node: closures stay small

bool has_label(const std::vector<std::string>& labels, const std::string& l) {
  return std::find(labels.begin(), labels.end(), l) != labels.end();
}

bool carries(const std::vector<std::string>& labels, const SparseMapUse& use) {
  for (const auto& l : use.source) {
    if (!has_label(labels, l)) return false;
  }
  for (const auto& l : use.target) {
    if (!has_label(labels, l)) return false;
  }
  return true;
}

bool unique_labels(const std::vector<std::string>& labels) {
  // A node has a few labels: comparing pairs costs less than building a set, for every node.
  if (labels.size() > 16) return std::set<std::string>(labels.begin(), labels.end()).size() == labels.size();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (labels[i] == labels[j]) return false;
    }
  }
  return true;
}

void add_unique(std::vector<SparseMapUse>& list, const SparseMapUse& use) {
  if (std::find(list.begin(), list.end(), use) == list.end()) list.push_back(use);
}

std::vector<SparseMapUse> carried(const std::vector<SparseMapUse>& maps, const std::vector<std::string>& labels) {
  std::vector<SparseMapUse> kept;
  for (const SparseMapUse& use : maps) {
    if (carries(labels, use)) add_unique(kept, use);
  }
  return kept;
}

std::vector<SparseMapUse> common(const std::vector<SparseMapUse>& a, const std::vector<SparseMapUse>& b) {
  std::vector<SparseMapUse> both;
  for (const SparseMapUse& use : a) {
    if (std::find(b.begin(), b.end(), use) != b.end()) add_unique(both, use);
  }
  return both;
}

class Propagation {
 public:
  explicit Propagation(OpGraph& graph) : graph_(graph) {}

  void run() {
    // Masks are where maps enter (every other node's maps come from its operands'): a graph
    // without one holds none, and most sets have none.
    bool masked = false;
    for (NodeId id = 0; id < graph_.size() && !masked; ++id) masked = graph_.node(id).kind == OpKind::mask;
    if (!masked) {
      for (NodeId id = 0; id < graph_.size(); ++id) {
        graph_.node(id).holds.clear();
        graph_.node(id).pattern.reset();
      }
      return;
    }
    for (NodeId id : graph_.topological_order()) {
      OpNode& node = graph_.node(id);
      node.holds.clear();
      node.pattern.reset();
      if (!unique_labels(node.labels) || packed_factor_count(node.kind) > 0) continue;
      node.holds = holds_of(id);
      if (node.holds.size() > kMaxMaps) node.holds.resize(kMaxMaps);
      if (node.holds.empty()) continue;
      std::vector<detail::LabeledMap> maps;
      for (const SparseMapUse& use : node.holds) maps.push_back({&use.source, &use.target, use.map.get()});
      node.pattern = detail::make_sparse_pattern(node.labels, node.extents, maps);
    }
  }

 private:
  const std::vector<SparseMapUse>& holds(NodeId id) const { return graph_.node(id).holds; }

  std::vector<SparseMapUse> holds_of(NodeId id) {
    const OpNode& node = graph_.node(id);
    const std::vector<NodeId> ops = node.kind == OpKind::input ? std::vector<NodeId>{} : graph_.operands(id);
    switch (node.kind) {
      case OpKind::mask: {
        std::vector<SparseMapUse> all = holds(ops[0]);
        for (const SparseMapUse& use : node.get<MaskParams>().maps) add_unique(all, use);
        return closed(all, node.labels);
      }
      case OpKind::contract: {
        std::vector<SparseMapUse> all = holds(ops[0]);
        for (const SparseMapUse& use : holds(ops[1])) add_unique(all, use);
        std::vector<SparseMapUse> product = closed(all, node.labels);
        if (ops.size() == 3) return common(product, carried(holds(ops[2]), node.labels));
        return product;
      }
      case OpKind::add:
      case OpKind::subtract: return common(carried(holds(ops[0]), node.labels), carried(holds(ops[1]), node.labels));
      case OpKind::divide: return carried(holds(ops[0]), node.labels);
      case OpKind::scale:
      case OpKind::reduce: return closed(holds(ops[0]), node.labels);
      case OpKind::chip: return carried(holds(ops[0]), node.labels);
      case OpKind::slice: return sliced(ops[0], node.get<SliceParams>());
      case OpKind::fused: return fused(node, ops);
      case OpKind::output: {
        const std::vector<std::string>& renamed = node.get<OutputParams>().operand_labels;
        const std::vector<std::string>& names = graph_.node(ops[0]).labels;
        std::vector<SparseMapUse> out;
        for (SparseMapUse use : holds(ops[0])) {
          for (auto* group : {&use.source, &use.target}) {
            for (std::string& l : *group) {
              const auto at = static_cast<std::size_t>(std::find(names.begin(), names.end(), l) - names.begin());
              if (at < renamed.size()) l = renamed[at];
            }
          }
          if (carries(node.labels, use)) add_unique(out, use);
        }
        return out;
      }
      case OpKind::input:  // a tensor's value: its maps apply through the mask after it
      case OpKind::cholesky:
      case OpKind::eigen_solve:
      case OpKind::qr:
      case OpKind::svd:
      case OpKind::factor:
      case OpKind::pow:
      case OpKind::inverse:
      case OpKind::solve:
      case OpKind::spd_pow: return {};  // matrix functions fill in what maps exclude
    }
    return {};
  }

  /// `maps` with their compositions, kept to those a node with `labels` carries.
  std::vector<SparseMapUse> closed(std::vector<SparseMapUse> maps, const std::vector<std::string>& labels) {
    for (bool grew = true; grew && maps.size() < kMaxMaps;) {
      grew = false;
      const std::size_t n = maps.size();
      for (std::size_t a = 0; a < n && !grew; ++a) {
        for (std::size_t b = 0; b < n && !grew; ++b) {
          const SparseMapUse& first = maps[a];
          const SparseMapUse& second = maps[b];
          if (a == b || first.target != second.source) continue;
          SparseMapUse use{first.source, second.target, nullptr};
          bool disjoint = true;
          for (const auto& l : use.source) disjoint = disjoint && !has_label(use.target, l);
          if (!disjoint || !carries(labels, use)) continue;
          bool known = false;
          for (const SparseMapUse& m : maps) known = known || (m.source == use.source && m.target == use.target);
          if (known) continue;
          use.map = composed(*first.map, *second.map);
          maps.push_back(std::move(use));
          grew = true;
        }
      }
    }
    return carried(maps, labels);
  }

  std::shared_ptr<const SparseMap> composed(const SparseMap& first, const SparseMap& second) {
    auto& slot = compositions_[{&first, &second}];
    if (slot) return slot;
    auto map = std::make_shared<SparseMap>();
    for (const auto& [source, middle] : first.entries()) {
      std::set<SparseMap::Index> targets;
      for (const SparseMap::Index& m : middle) {
        auto it = second.entries().find(m);
        if (it != second.entries().end()) targets.insert(it->second.begin(), it->second.end());
      }
      if (!targets.empty()) map->insert(source, std::vector<SparseMap::Index>(targets.begin(), targets.end()));
    }
    slot = map;
    return slot;
  }

  std::vector<SparseMapUse> sliced(NodeId operand, const SliceParams& params) {
    const std::vector<std::string>& labels = graph_.node(operand).labels;
    std::vector<SparseMapUse> out;
    for (const SparseMapUse& use : holds(operand)) {
      auto window = [&](const std::vector<std::string>& group, const SparseMap::Index& index, SparseMap::Index& cut) {
        cut.resize(index.size());
        for (std::size_t d = 0; d < index.size(); ++d) {
          const auto mode =
              static_cast<std::size_t>(std::find(labels.begin(), labels.end(), group[d]) - labels.begin());
          if (index[d] < params.lo[mode] || index[d] >= params.hi[mode]) return false;
          cut[d] = index[d] - params.lo[mode];
        }
        return true;
      };
      auto map = std::make_shared<SparseMap>();
      SparseMap::Index source, target;
      for (const auto& [s, targets] : use.map->entries()) {
        if (!window(use.source, s, source)) continue;
        std::vector<SparseMap::Index> kept;
        for (const SparseMap::Index& t : targets) {
          if (window(use.target, t, target)) kept.push_back(target);
        }
        if (!kept.empty()) map->insert(source, kept);
      }
      out.push_back({use.source, use.target, std::move(map)});
    }
    return out;
  }

  /// The maps under which the program's value is zero wherever the map excludes the point.
  std::vector<SparseMapUse> fused(const OpNode& node, const std::vector<NodeId>& ops) {
    const FusedParams& params = node.get<FusedParams>();
    std::vector<std::string> space;
    std::vector<SparseMapUse> candidates;
    for (NodeId op : ops) {
      for (const std::string& l : graph_.node(op).labels) {
        if (!has_label(space, l)) space.push_back(l);
      }
      for (const SparseMapUse& use : holds(op)) add_unique(candidates, use);
    }
    std::vector<SparseMapUse> zero_where_excluded;
    for (const SparseMapUse& use : candidates) {
      std::vector<char> zero(params.program.size(), 0);
      for (std::size_t k = 0; k < params.program.size(); ++k) {
        const FusedInstr& in = params.program[k];
        const bool a = in.a < k && zero[in.a], b = in.b < k && zero[in.b];
        if (in.op == FusedOp::load) {
          const auto& h = holds(ops.at(in.a));
          zero[k] = std::find(h.begin(), h.end(), use) != h.end();
        } else {
          zero[k] = fused_op_keeps_zero(in, a, b);
        }
      }
      if (!params.program.empty() && zero.back()) zero_where_excluded.push_back(use);
    }
    return closed(closed(zero_where_excluded, space), node.labels);
  }

  OpGraph& graph_;
  std::map<std::pair<const SparseMap*, const SparseMap*>, std::shared_ptr<const SparseMap>> compositions_;
};

}  // namespace

void propagate_sparsity(OpGraph& graph) { Propagation(graph).run(); }

}  // namespace tenex::passes
