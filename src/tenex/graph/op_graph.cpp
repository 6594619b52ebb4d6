// GCC 12 with the sanitizers reports boost::optional's storage in named_graph.hpp as read
// uninitialised where add_vertex inlines it: a false positive inside Boost.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "tenex/graph/op_graph.hpp"

#include <algorithm>
#include <atomic>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <boost/graph/topological_sort.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "tenex/error.hpp"
#include "tenex/graph/cost.hpp"
#include "tenex/graph/shape_rule.hpp"
#include "tenex/labels.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex {

namespace {

struct EdgeData {
  std::size_t operand_index = 0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, OpNode, EdgeData>;

using detail::format_extents;
using detail::join_labels;

std::atomic<std::uint64_t> next_serial{1};

}  // namespace

std::size_t OpNode::size() const {
  std::size_t n = 1;
  for (std::size_t e : extents) n *= e;
  return n;
}

struct OpGraph::Impl {
  Graph graph;
  std::vector<SparseMapUse> sparse_maps;
  std::uint64_t serial = next_serial.fetch_add(1);

  void check(NodeId id) const {
    if (id >= boost::num_vertices(graph)) {
      throw InternalError("tenex: OpGraph: node " + std::to_string(id) + " does not exist (the graph has " +
                          std::to_string(boost::num_vertices(graph)) + " nodes)");
    }
  }
};

OpGraph::OpGraph() : impl_(std::make_unique<Impl>()) {}
OpGraph::~OpGraph() = default;
OpGraph::OpGraph(OpGraph&&) noexcept = default;
OpGraph& OpGraph::operator=(OpGraph&&) noexcept = default;

NodeId OpGraph::add_node(OpNode node, const std::vector<NodeId>& operands) {
  for (NodeId op : operands) impl_->check(op);
  if (node.params.index() == 0) {
    node.params = default_params(node.kind);
  } else {
    node.kind = op_kind_of_params(node.params);
  }
  std::size_t count = 1;
  for (std::size_t e : node.extents) {
    if (e != 0 && count > std::numeric_limits<std::size_t>::max() / e) {
      throw ShapeError("tenex: OpGraph: the result of " + std::string(op_kind_name(node.kind)) + " (\"" +
                       join_labels(node.labels) + "\") " + format_extents(node.extents) +
                       " has more elements than std::size_t can count");
    }
    count *= e;
  }
  if (node.elements == 0) {
    node.elements = packed_factor_count(node.kind) > 0 && node.extents.size() == 2
                        ? packed_size(node.kind, node.extents[0], node.extents[1])
                        : node.size();
  }
  NodeId id = boost::add_vertex(std::move(node), impl_->graph);
  for (std::size_t i = 0; i < operands.size(); ++i) boost::add_edge(operands[i], id, EdgeData{i}, impl_->graph);
  return id;
}

NodeId OpGraph::add_derived(OpNode node, const std::vector<NodeId>& operands) {
  std::vector<const OpNode*> ops;
  for (NodeId op : operands) ops.push_back(&this->node(op));
  if (!ops.empty()) node.dtype = ops[0]->dtype;
  const int arity = op_kind_arity(node.kind);
  if (arity >= 0 && static_cast<std::size_t>(arity) != operands.size()) {
    throw ShapeError("tenex: OpGraph::add: " + std::string(op_kind_name(node.kind)) + " takes " +
                     std::to_string(arity) + " operands, got " + std::to_string(operands.size()));
  }
  if (std::string error = detail::apply_shape_rule(node, ops, true); !error.empty()) {
    throw ShapeError("tenex: OpGraph::add: " + std::string(op_kind_name(node.kind)) + " (\"" +
                     join_labels(node.labels) + "\"): " + error);
  }
  return add_node(std::move(node), operands);
}

NodeId OpGraph::add_input_storage(std::shared_ptr<void> storage, DType dtype, const std::vector<std::size_t>& extents,
                                  std::string_view labels) {
  OpNode node;
  node.kind = OpKind::input;
  node.params = InputParams{};
  node.dtype = dtype;
  node.labels = detail::parse_labels(labels);
  if (node.labels.size() != extents.size()) {
    throw ShapeError("tenex: OpGraph::add_input: labels \"" + join_labels(node.labels) + "\" name " +
                     std::to_string(node.labels.size()) + " modes but the tensor has extents " +
                     format_extents(extents));
  }
  node.extents = extents;
  node.storage = std::move(storage);
  return add_node(std::move(node));
}

std::uint64_t OpGraph::serial() const { return impl_->serial; }

void OpGraph::detach(NodeId id) {
  impl_->check(id);
  boost::clear_in_edges(id, impl_->graph);
}

const OpNode& OpGraph::node(NodeId id) const {
  impl_->check(id);
  return impl_->graph[id];
}

OpNode& OpGraph::node(NodeId id) {
  impl_->check(id);
  return impl_->graph[id];
}

std::vector<NodeId> OpGraph::operands(NodeId id) const {
  impl_->check(id);
  std::vector<std::pair<std::size_t, NodeId>> ordered;
  for (auto [it, end] = boost::in_edges(id, impl_->graph); it != end; ++it) {
    ordered.emplace_back(impl_->graph[*it].operand_index, boost::source(*it, impl_->graph));
  }
  std::sort(ordered.begin(), ordered.end());
  std::vector<NodeId> result;
  result.reserve(ordered.size());
  for (auto& [index, source] : ordered) result.push_back(source);
  return result;
}

std::vector<NodeId> OpGraph::consumers(NodeId id) const {
  impl_->check(id);
  std::set<NodeId> result;
  for (auto [it, end] = boost::out_edges(id, impl_->graph); it != end; ++it) {
    result.insert(boost::target(*it, impl_->graph));
  }
  return {result.begin(), result.end()};
}

std::size_t OpGraph::size() const { return boost::num_vertices(impl_->graph); }

std::vector<NodeId> OpGraph::outputs() const {
  std::vector<NodeId> result;
  for (NodeId id = 0; id < size(); ++id) {
    if (impl_->graph[id].kind == OpKind::output) result.push_back(id);
  }
  return result;
}

std::vector<NodeId> OpGraph::topological_order() const {
  std::vector<NodeId> reversed;
  try {
    boost::topological_sort(impl_->graph, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    throw InternalError("tenex: OpGraph: the graph has a cycle");
  }
  return {reversed.rbegin(), reversed.rend()};
}

void OpGraph::validate() const {
  auto fail = [](NodeId id, const OpNode& n, const std::string& what) {
    throw InternalError("tenex: OpGraph: node " + std::to_string(id) + " (" + std::string(op_kind_name(n.kind)) +
                        " \"" + join_labels(n.labels) + "\" " + format_extents(n.extents) + "): " + what);
  };
  for (NodeId id = 0; id < size(); ++id) {
    const OpNode& n = impl_->graph[id];
    const int arity = op_kind_arity(n.kind);
    const std::size_t count = boost::in_degree(id, impl_->graph);
    if (arity >= 0 && count != static_cast<std::size_t>(arity)) {
      fail(id, n, "takes " + std::to_string(arity) + " operands but has " + std::to_string(count));
    }
    if (n.params.index() == 0 || op_kind_of_params(n.params) != n.kind) fail(id, n, "has parameters of another kind");
    if (n.labels.size() != n.extents.size()) fail(id, n, "has a different number of labels and extents");
    if (n.kind != OpKind::input) {
      std::set<std::string> seen(n.labels.begin(), n.labels.end());
      if (seen.size() != n.labels.size()) fail(id, n, "repeats a label");
    }
    if ((n.kind == OpKind::input || n.kind == OpKind::output) && !n.storage && n.dtype != DType::shape) {
      fail(id, n, "has no storage");
    }
    for (std::size_t m : n.sparse_maps) {
      if (m >= impl_->sparse_maps.size()) fail(id, n, "names sparse map " + std::to_string(m) + " that does not exist");
    }
    if (arity < 0 || count == static_cast<std::size_t>(arity)) {
      std::vector<const OpNode*> ops;
      for (NodeId op : operands(id)) ops.push_back(&impl_->graph[op]);
      OpNode copy = n;
      if (std::string error = detail::apply_shape_rule(copy, ops, false); !error.empty()) fail(id, n, error);
    }
  }
  (void)topological_order();
}

void OpGraph::set_operand(NodeId consumer, std::size_t index, NodeId operand) {
  impl_->check(consumer);
  impl_->check(operand);
  std::vector<Graph::edge_descriptor> doomed;
  for (auto [it, end] = boost::in_edges(consumer, impl_->graph); it != end; ++it) {
    if (impl_->graph[*it].operand_index == index) doomed.push_back(*it);
  }
  if (doomed.empty()) {
    throw InternalError("tenex: OpGraph: node " + std::to_string(consumer) + " has no operand " +
                        std::to_string(index));
  }
  for (auto e : doomed) boost::remove_edge(e, impl_->graph);
  boost::add_edge(operand, consumer, EdgeData{index}, impl_->graph);
}

void OpGraph::replace_uses(NodeId from, NodeId to) {
  impl_->check(from);
  impl_->check(to);
  std::vector<std::pair<NodeId, std::size_t>> uses;
  for (auto [it, end] = boost::out_edges(from, impl_->graph); it != end; ++it) {
    uses.emplace_back(boost::target(*it, impl_->graph), impl_->graph[*it].operand_index);
  }
  boost::clear_out_edges(from, impl_->graph);
  for (auto& [consumer, index] : uses) boost::add_edge(to, consumer, EdgeData{index}, impl_->graph);
}

std::vector<NodeId> OpGraph::prune() {
  const std::size_t n = size();
  std::vector<bool> needed(n, false);
  std::vector<NodeId> stack = outputs();
  if (stack.empty()) {
    std::vector<NodeId> identity(n);
    for (NodeId i = 0; i < n; ++i) identity[i] = i;
    return identity;
  }
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = true;
    for (NodeId op : operands(id)) stack.push_back(op);
  }
  Impl fresh;
  fresh.sparse_maps = std::move(impl_->sparse_maps);
  fresh.serial = impl_->serial;
  std::vector<NodeId> mapping(n, n);
  for (NodeId id : topological_order()) {
    if (!needed[id]) continue;
    mapping[id] = boost::add_vertex(impl_->graph[id], fresh.graph);
  }
  for (NodeId id = 0; id < n; ++id) {
    if (!needed[id]) continue;
    for (auto [it, end] = boost::in_edges(id, impl_->graph); it != end; ++it) {
      boost::add_edge(mapping[boost::source(*it, impl_->graph)], mapping[id], impl_->graph[*it], fresh.graph);
    }
  }
  *impl_ = std::move(fresh);
  for (NodeId& m : mapping) {
    if (m >= n) m = size();
  }
  return mapping;
}

std::size_t OpGraph::add_sparse_map(SparseMapUse use) {
  impl_->sparse_maps.push_back(std::move(use));
  return impl_->sparse_maps.size() - 1;
}

const std::vector<SparseMapUse>& OpGraph::sparse_maps() const { return impl_->sparse_maps; }

std::string OpGraph::to_dot() const {
  const Graph& g = impl_->graph;
  const std::vector<std::string> names = detail::tensor_names(*this);
  auto vertex_writer = [&](std::ostream& os, NodeId id) {
    const OpNode& n = g[id];
    std::string text = std::string(op_kind_name(n.kind)) + describe_params(n.params);
    // An output names the tensor it writes (inputs reading it carry the same name).
    const std::string note = n.kind == OpKind::output && n.note == "target" ? "target " + names[id] : n.note;
    if (!note.empty()) text += " [" + note + "]";
    text += "\\n(" + join_labels(n.labels) + ") " + format_extents(n.extents);
    for (std::size_t m : n.sparse_maps) {
      const SparseMapUse& use = impl_->sparse_maps.at(m);
      text += "\\nsparse " + join_labels(use.source) + " -> " + join_labels(use.target) + " (" +
              std::to_string(use.map->pair_count()) + " pairs)";
    }
    if (n.pattern) {
      text += "\\nallowed " + detail::format_fraction(n.pattern->fraction()) + (n.compact ? " (per-key blocks)" : "");
    }
    const char* shape = n.kind == OpKind::input ? "ellipse" : n.kind == OpKind::output ? "house" : "box";
    // What the node costs, beside it: its flops and the bytes of its result (no kernel names:
    // they could spell a kind's name, which readers of DOT count).
    std::string side;
    if (n.kind == OpKind::input) {
      side = names[id].empty() ? std::string() : names[id] + "\\n";
    } else {
      side = detail::format_count(detail::node_flops(*this, id)) + " flops\\n";
    }
    side += detail::format_bytes(detail::node_bytes(*this, id));
    os << "[label=\"" << text << "\", shape=" << shape << ", xlabel=\"" << side << "\"]";
  };
  auto edge_writer = [&](std::ostream& os, Graph::edge_descriptor e) {
    os << "[label=\"" << g[e].operand_index << "\"]";
  };
  std::ostringstream os;
  boost::write_graphviz(os, g, vertex_writer, edge_writer);
  return os.str();
}

#define TENEX_INSTANTIATE_ADD_INPUT(T) \
  template TENEX_API NodeId OpGraph::add_input<T>(const Tensor<T>&, std::string_view);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_ADD_INPUT)
#undef TENEX_INSTANTIATE_ADD_INPUT

}  // namespace tenex
