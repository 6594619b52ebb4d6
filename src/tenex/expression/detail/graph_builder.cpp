#include "tenex/expression/detail/graph_builder.hpp"

#include <algorithm>
#include <set>

#include "tenex/error.hpp"
#include "tenex/expression/labels.hpp"
#include "tenex/graph/passes/contraction_order.hpp"

namespace tenex::detail {

namespace {

std::vector<std::string> filter(const std::vector<std::string>& order, const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  for (const std::string& l : order) {
    if (contains_label(allowed, l)) out.push_back(l);
  }
  return out;
}

std::string key_of(const std::vector<std::string>& labels) { return "keep:" + join_labels(labels); }

class Builder {
 public:
  Builder(OpGraph& graph, DType dtype, const std::vector<Assignment>* batch) : graph_(graph), dtype_(dtype) {
    if (batch) {
      for (const Assignment& a : *batch) producers_[a.target.get()] = &a;
    }
  }

  /// A node holding `keep` (a subset of n's labels, in any order) of `n`.
  NodeId build(const NodePtr& n, const std::vector<std::string>& keep) {
    const std::string key = key_of(keep);
    if (const NodeId* hit = graph_.find_memo(n.get(), key)) return *hit;
    NodeId id = build_uncached(n, keep);
    graph_.set_memo(n.get(), key, id, n);
    return id;
  }

  NodeId build_assignment(const Assignment& a) {
    if (const NodeId* hit = graph_.find_memo(a.target.get(), "output")) return *hit;
    // Ask for the value in the target's order: the last kernel writes it in place and the
    // output hands the buffer over instead of permuting it.
    const std::vector<std::string>& keep = a.rhs_labels;
    NodeId value = build(a.rhs, keep);
    OpNode out;
    out.kind = OpKind::output;
    out.dtype = dtype_;
    out.labels = a.target_labels;
    for (const std::string& l : a.rhs_labels) out.extents.push_back(extent(*a.rhs, l));
    for (const std::string& l : keep) {
      out.params.operand_labels.push_back(a.target_labels[find_label(a.rhs_labels, l)]);
    }
    out.storage = a.target;
    out.note = "target";
    NodeId id = graph_.add_node(std::move(out), {value});
    graph_.set_memo(a.target.get(), "output", id, a.target);
    return id;
  }

  void register_sparse_maps(const std::vector<RegisteredSparseMap>& maps) {
    std::vector<std::size_t> ids;
    for (const RegisteredSparseMap& m : maps) {
      std::size_t found = graph_.sparse_maps().size();
      for (std::size_t i = 0; i < graph_.sparse_maps().size(); ++i) {
        const SparseMapUse& use = graph_.sparse_maps()[i];
        if (use.map == m.map && use.source == m.source && use.target == m.target) found = i;
      }
      if (found == graph_.sparse_maps().size()) found = graph_.add_sparse_map({m.source, m.target, m.map});
      ids.push_back(found);
    }
    for (NodeId id = 0; id < graph_.size(); ++id) {
      OpNode& node = graph_.node(id);
      if (node.kind == OpKind::eigen_solve || node.kind == OpKind::qr || node.kind == OpKind::svd) continue;
      std::set<std::string> unique(node.labels.begin(), node.labels.end());
      if (unique.size() != node.labels.size()) continue;
      for (std::size_t m : ids) {
        const SparseMapUse& use = graph_.sparse_maps()[m];
        bool all = true;
        for (const auto& l : use.source) all = all && unique.count(l);
        for (const auto& l : use.target) all = all && unique.count(l);
        if (all && std::find(node.sparse_maps.begin(), node.sparse_maps.end(), m) == node.sparse_maps.end()) {
          node.sparse_maps.push_back(m);
        }
      }
    }
  }

 private:
  static std::size_t extent(const ExprNode& n, const std::string& label) {
    std::size_t at = find_label(n.labels, label);
    if (at == n.labels.size()) {
      throw InternalError("tenex: graph building: label \"" + label + "\" is not in " + n.text());
    }
    return n.extents[at];
  }

  NodeId add(OpKind kind, const std::vector<std::string>& labels, const std::vector<std::size_t>& extents,
             const std::vector<NodeId>& operands, OpParams params = {}, std::string note = {}) {
    OpNode node;
    node.kind = kind;
    node.dtype = dtype_;
    node.labels = labels;
    node.extents = extents;
    node.params = std::move(params);
    node.note = std::move(note);
    return graph_.add_node(std::move(node), operands);
  }

  static std::vector<std::size_t> extents_in(const ExprNode& n, const std::vector<std::string>& labels) {
    std::vector<std::size_t> out;
    for (const auto& l : labels) out.push_back(extent(n, l));
    return out;
  }

  static std::vector<std::size_t> extents_in(const std::map<std::string, std::size_t>& extents,
                                             const std::vector<std::string>& labels) {
    std::vector<std::size_t> out;
    for (const auto& l : labels) out.push_back(extents.at(l));
    return out;
  }

  /// `id` holds `labels`; returns a node holding `keep` (summing the others, permuting).
  NodeId reduce_to(NodeId id, const std::vector<std::string>& labels, const std::vector<std::size_t>& extents,
                   const std::vector<std::string>& keep) {
    if (labels == keep) return id;
    std::vector<std::size_t> keep_extents;
    for (const auto& l : keep) keep_extents.push_back(extents[find_label(labels, l)]);
    return add(OpKind::reduce, keep, keep_extents, {id});
  }

  NodeId input(const NodePtr& n) {
    const void* object = n->storage ? n->storage.get() : static_cast<const void*>(n.get());
    const std::string key = "input:" + join_labels(n->written);
    if (const NodeId* hit = graph_.find_memo(object, key)) return *hit;
    std::vector<NodeId> operands;
    auto producer = producers_.find(n->storage.get());
    if (n->storage && producer != producers_.end()) operands.push_back(build_assignment(*producer->second));
    OpNode node;
    node.kind = OpKind::input;
    node.dtype = dtype_;
    node.labels = n->written;
    for (const auto& l : n->written) node.extents.push_back(extent(*n, l));
    node.storage = n->storage;
    if (!node.storage && dtype_ != DType::shape) {
      throw InternalError("tenex: graph building: an operand " + n->text() + " carries no data");
    }
    NodeId id = graph_.add_node(std::move(node), operands);
    graph_.set_memo(object, key, id, n);
    return id;
  }

  NodeId build_uncached(const NodePtr& n, const std::vector<std::string>& keep) {
    switch (n->kind) {
      case ExprKind::indexed: {
        NodeId in = input(n);
        if (n->written == keep) return in;
        std::vector<std::size_t> keep_extents;
        for (const auto& l : keep) keep_extents.push_back(extent(*n, l));
        return add(OpKind::reduce, keep, keep_extents, {in});
      }
      case ExprKind::scale: {
        OpParams p;
        p.alpha = n->factor;
        NodeId c = build(n->children[0], keep);
        return add(OpKind::scale, keep, extents_in(*n, keep), {c}, p);
      }
      case ExprKind::permutation: {
        const NodePtr& c = n->children[0];
        std::vector<std::string> child_keep = filter(c->labels, keep);
        NodeId id = build(c, child_keep);
        return reduce_to(id, child_keep, extents_in(*c, child_keep), keep);
      }
      case ExprKind::addition:
      case ExprKind::subtraction:
      case ExprKind::division: {
        NodeId ids[2];
        for (int i = 0; i < 2; ++i) {
          const NodePtr& c = n->children[i];
          // Each term sums the labels nobody above keeps on its own: c(i) = a(i,j) + b(i)
          // is sum_j a(i,j) + b(i), and a product inside a term contracts them.
          ids[i] = build(c, filter(c->labels, keep));
        }
        OpKind kind = n->kind == ExprKind::addition      ? OpKind::add
                      : n->kind == ExprKind::subtraction ? OpKind::subtract
                                                         : OpKind::divide;
        return add(kind, keep, extents_in(*n, keep), {ids[0], ids[1]});
      }
      case ExprKind::multiplication: return product(n, keep);
      case ExprKind::decomposition: {
        if (n->decomposition != OpKind::cholesky) {
          throw InternalError("tenex: graph building: a packed decomposition is read through its factors only");
        }
        NodeId a = build(n->children[0], n->children[0]->labels);
        NodeId id = add(OpKind::cholesky, n->labels, n->extents, {a}, {}, "factor L");
        return reduce_to(id, n->labels, n->extents, keep);
      }
      case ExprKind::factor: return factor(n, keep);
      case ExprKind::slice:
      case ExprKind::chip:
      case ExprKind::pow: {
        const NodePtr& c = n->children[0];
        NodeId a = build(c, c->labels);
        OpParams p;
        p.lo = n->lo;
        p.hi = n->hi;
        p.mode = n->mode;
        p.index = n->index;
        p.power = n->power;
        OpKind kind = n->kind == ExprKind::slice ? OpKind::slice : n->kind == ExprKind::chip ? OpKind::chip : OpKind::pow;
        NodeId id = add(kind, n->labels, n->extents, {a}, p);
        return reduce_to(id, n->labels, n->extents, keep);
      }
    }
    throw InternalError("tenex: graph building: unknown expression kind");
  }

  NodeId factor(const NodePtr& n, const std::vector<std::string>& keep) {
    const NodePtr& d = n->children[0];
    const std::size_t m = d->extents[0], cols = d->extents[1], k = std::min(m, cols);
    NodeId packed;
    if (const NodeId* hit = graph_.find_memo(d.get(), "packed")) {
      packed = *hit;
    } else {
      std::vector<NodeId> operands;
      for (const NodePtr& c : d->children) operands.push_back(build(c, c->labels));
      OpNode node;
      node.kind = d->decomposition;
      node.dtype = dtype_;
      node.labels = d->labels;
      node.extents = d->extents;
      node.elements = d->decomposition == OpKind::eigen_solve ? m * m + m
                      : d->decomposition == OpKind::qr       ? m * k + k * cols
                                                             : m * k + k + k * cols;
      if (d->decomposition == OpKind::eigen_solve && operands.size() == 2) node.note = "generalized";
      packed = graph_.add_node(std::move(node), operands);
      graph_.set_memo(d.get(), "packed", packed, d);
    }
    OpParams p;
    p.factor = n->which;
    static const char* names[3][3] = {{"vectors", "values", ""}, {"Q", "R", ""}, {"U", "S", "Vt"}};
    int row = d->decomposition == OpKind::eigen_solve ? 0 : d->decomposition == OpKind::qr ? 1 : 2;
    if (row == 0) p.offset = n->which == 0 ? 0 : m * m;
    if (row == 1) p.offset = n->which == 0 ? 0 : m * k;
    if (row == 2) p.offset = n->which == 0 ? 0 : n->which == 1 ? m * k : m * k + k;
    NodeId id = add(OpKind::factor, n->labels, n->extents, {packed}, p, names[row][n->which]);
    return reduce_to(id, n->labels, n->extents, keep);
  }

  /// Flattens nested products only this product holds, so the chain can be reordered;
  /// a product shared elsewhere (a named intermediate) stays one node, computed once.
  void flatten(const NodePtr& n, std::vector<NodePtr>& factors, double& alpha) {
    for (const NodePtr& c : n->children) {
      NodePtr f = c;
      double scale = 1.0;
      while (f->kind == ExprKind::scale && f.use_count() <= 2) {
        scale *= f->factor;
        f = f->children[0];
      }
      if (f->kind == ExprKind::multiplication && f.use_count() <= 2) {
        alpha *= scale;
        flatten(f, factors, alpha);
      } else if (scale != 1.0 && f != c) {
        alpha *= scale;
        factors.push_back(f);
      } else {
        factors.push_back(c);
      }
    }
  }

  NodeId product(const NodePtr& n, const std::vector<std::string>& keep) {
    std::vector<NodePtr> factors;
    double alpha = 1.0;
    flatten(n, factors, alpha);
    std::map<std::string, std::size_t> extents;
    for (const auto& f : factors) {
      for (std::size_t i = 0; i < f->labels.size(); ++i) extents[f->labels[i]] = f->extents[i];
    }
    // Each factor keeps what the result or another factor needs.
    std::vector<std::vector<std::string>> labels(factors.size());
    std::vector<NodeId> ids(factors.size());
    for (std::size_t i = 0; i < factors.size(); ++i) {
      std::vector<std::string> needed = keep;
      for (std::size_t j = 0; j < factors.size(); ++j) {
        if (j != i) needed.insert(needed.end(), factors[j]->labels.begin(), factors[j]->labels.end());
      }
      labels[i] = filter(factors[i]->labels, needed);
      ids[i] = build(factors[i], labels[i]);
    }
    if (factors.size() == 1) {
      NodeId id = reduce_to(ids[0], labels[0], extents_in(extents, labels[0]), keep);
      if (alpha == 1.0) return id;
      OpParams p;
      p.alpha = alpha;
      return add(OpKind::scale, keep, extents_in(extents, keep), {id}, p);
    }
    passes::ContractionPath path = passes::order_product(labels, extents, keep);
    std::vector<bool> live(labels.size(), true);
    for (std::size_t step = 0; step < path.size(); ++step) {
      auto [a, b] = path[step];
      live[a] = live[b] = false;
      const bool last = step + 1 == path.size();
      std::vector<std::string> needed = keep;
      for (std::size_t s = 0; s < labels.size(); ++s) {
        if (live[s]) needed.insert(needed.end(), labels[s].begin(), labels[s].end());
      }
      std::vector<std::string> out = last ? keep : passes::pair_result_labels(labels[a], labels[b], needed);
      OpParams p;
      if (last) p.alpha = alpha;
      ids.push_back(add(OpKind::contract, out, extents_in(extents, out), {ids[a], ids[b]}, p));
      labels.push_back(out);
      live.push_back(true);
    }
    return ids.back();
  }

  OpGraph& graph_;
  DType dtype_;
  std::map<const void*, const Assignment*> producers_;
};

}  // namespace

NodeId add_expression_to_graph(OpGraph& graph, const NodePtr& node, const std::vector<RegisteredSparseMap>& maps) {
  Builder builder(graph, node->dtype, nullptr);
  NodeId id = builder.build(node, node->labels);
  builder.register_sparse_maps(maps);
  return id;
}

OpGraph build_set_graph(DType dtype, const std::vector<Assignment>& batch,
                        const std::vector<RegisteredSparseMap>& maps) {
  OpGraph graph;
  Builder builder(graph, dtype, &batch);
  for (const Assignment& a : batch) builder.build_assignment(a);
  builder.register_sparse_maps(maps);
  return graph;
}

}  // namespace tenex::detail
