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
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "tenex/error.hpp"
#include "tenex/graph/cost.hpp"
#include "tenex/graph/shape_rule.hpp"
#include "tenex/labels.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex {

namespace {

// Boost.Graph draws the DOT text: a bidirectional adjacency_list lists its edges in the order
// they were made, as OpGraph does.
struct EdgeData {
  std::size_t operand_index = 0;
};
using DotGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, EdgeData>;

using detail::format_extents;
using detail::join_labels;

std::atomic<std::uint64_t> next_serial{1};

constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

}  // namespace

std::size_t OpNode::size() const {
  std::size_t n = 1;
  for (std::size_t e : extents) n *= e;
  return n;
}

// Adjacency vectors, each in the order its edges were made, as Boost's vecS lists keep them
// (the topological order and the DOT text follow that order). A value may be read by a
// hundred thousand statements, so removing one use must not scan or shift the others: a
// removed use is blanked in its operand's list (each edge knows its place there) and the
// list is compacted once more than half of it is blank. A consumer's operand list is short
// and is erased from directly.
struct OpGraph::Impl {
  struct Use {
    NodeId consumer = npos;  // npos: removed
    std::size_t edge = 0;
  };
  struct Operand {
    NodeId source = 0;
    std::size_t index = 0;  // the operand's position in the consumer's operand list
    std::size_t edge = 0;
  };
  struct Vertex {  // (the nodes apart: a walk of the graph touches these only)
    std::vector<Operand> in;
    std::vector<Use> out;
    std::size_t out_live = 0;
  };
  struct Edge {
    NodeId source = 0, target = 0;
    std::size_t index = 0;
    std::size_t place = 0;  // in vertices[source].out
    bool live = true;
  };

  struct Stored {  // a node and, for inputs and outputs, the tensor value it reads or writes
    OpNode node;
    std::shared_ptr<void> binding;
  };
  std::vector<Stored> nodes;
  std::vector<Vertex> vertices;  // by node id, as nodes
  std::vector<Edge> edges;       // every edge made, in order (removed ones until prune())
  std::vector<SparseMapUse> sparse_maps;
  std::uint64_t serial = next_serial.fetch_add(1);
  // The topological order, kept until a node or an edge is added or removed: most passes
  // change nothing in most sets, and each walk of a large graph costs a cache miss or two
  // per node. (Threads reading one finished plan's graph share it: the lock.)
  mutable std::mutex order_mutex;
  mutable std::vector<NodeId> order;
  mutable bool order_known = false;

  void connect(NodeId operand, NodeId consumer, std::size_t index) {
    order_known = false;
    const std::size_t e = edges.size();
    Vertex& source = vertices[operand];
    edges.push_back(Edge{operand, consumer, index, source.out.size(), true});
    source.out.push_back(Use{consumer, e});
    ++source.out_live;
    vertices[consumer].in.push_back(Operand{operand, index, e});
  }
  /// Removes the edges into `consumer` whose operand index `pick` accepts.
  template <class Pick>
  void disconnect(NodeId consumer, Pick pick) {
    std::vector<Operand>& in = vertices[consumer].in;
    for (const Operand& op : in) {
      if (pick(op.index)) drop_use(op.edge);
    }
    std::erase_if(in, [&](const Operand& op) { return pick(op.index); });
  }
  /// Blanks edge `e` in its source's list of uses (the consumer's side is the caller's).
  void drop_use(std::size_t e) {
    order_known = false;
    Edge& edge = edges[e];
    edge.live = false;
    Vertex& source = vertices[edge.source];
    source.out[edge.place].consumer = npos;
    --source.out_live;
    if (source.out.size() > 16 && source.out_live < source.out.size() / 2) {
      std::size_t kept = 0;
      for (const Use& use : source.out) {
        if (use.consumer == npos) continue;
        edges[use.edge].place = kept;
        source.out[kept++] = use;
      }
      source.out.resize(kept);
    }
  }

  /// Every node after its operands (what topological_order() keeps).
  std::vector<NodeId> sorted() const;

  // Asked on every access: the test inlined, the message out of line.
  void check(NodeId id) const {
    if (id >= vertices.size()) [[unlikely]]
      missing(id);
  }
  [[noreturn]] void missing(NodeId id) const;
};

void OpGraph::Impl::missing(NodeId id) const {
  throw InternalError("tenex: OpGraph: node " + std::to_string(id) + " does not exist (the graph has " +
                      std::to_string(vertices.size()) + " nodes)");
}

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
  bool countable = true;
  for (std::size_t e : node.extents) {
    if (e != 0 && count > std::numeric_limits<std::size_t>::max() / e) {
      // An intermediate of a product as written may be reordered away: its size saturates
      // and check_countable() refuses it only if it is still there when the set runs.
      if (node.kind == OpKind::contract) {
        countable = false;
        break;
      }
      throw ShapeError("tenex: OpGraph: the result of " + std::string(op_kind_name(node.kind)) + " (\"" +
                       join_labels(node.labels) + "\") " + format_extents(node.extents) +
                       " has more elements than std::size_t can count");
    }
    count *= e;
  }
  if (!countable) {
    node.elements = std::numeric_limits<std::size_t>::max();
  } else if (node.elements == 0) {
    if (packed_factor_count(node.kind) > 0 && node.extents.size() >= 2) {
      const MatrixExtents matrix = decomposition_matrix(node.params, node.extents);
      node.elements = packed_size(node.params, matrix.m, matrix.n);
    } else {
      node.elements = node.size();
    }
  }
  const NodeId id = impl_->vertices.size();
  impl_->nodes.push_back({std::move(node), nullptr});
  impl_->vertices.emplace_back();
  impl_->order_known = false;
  for (std::size_t i = 0; i < operands.size(); ++i) impl_->connect(operands[i], id, i);
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
  const NodeId id = add_node(std::move(node));
  impl_->nodes[id].binding = std::move(storage);
  return id;
}

const std::shared_ptr<void>& OpGraph::binding(NodeId id) const {
  impl_->check(id);
  return impl_->nodes[id].binding;
}

void OpGraph::bind(NodeId id, std::shared_ptr<void> value) {
  impl_->check(id);
  impl_->nodes[id].binding = std::move(value);
}

std::uint64_t OpGraph::serial() const { return impl_->serial; }

void OpGraph::detach(NodeId id) {
  impl_->check(id);
  impl_->disconnect(id, [](std::size_t) { return true; });
}

const OpNode& OpGraph::node(NodeId id) const {
  impl_->check(id);
  return impl_->nodes[id].node;
}

OpNode& OpGraph::node(NodeId id) {
  impl_->check(id);
  return impl_->nodes[id].node;
}

std::vector<NodeId> OpGraph::operands(NodeId id) const {
  impl_->check(id);
  // The operand indices of a node are 0..n-1 (every change of an operand keeps its index):
  // each operand goes straight to its place.
  const std::vector<Impl::Operand>& in = impl_->vertices[id].in;
  std::vector<NodeId> result(in.size(), npos);
  for (const Impl::Operand& op : in) {
    if (op.index >= in.size() || result[op.index] != npos) {
      throw InternalError("tenex: OpGraph: node " + std::to_string(id) + " has operand " + std::to_string(op.index) +
                          " twice or out of order");
    }
    result[op.index] = op.source;
  }
  return result;
}

std::vector<NodeId> OpGraph::consumers(NodeId id) const {
  impl_->check(id);
  const Impl::Vertex& v = impl_->vertices[id];
  std::vector<NodeId> result;
  result.reserve(v.out_live);
  for (const Impl::Use& use : v.out) {
    if (use.consumer != npos) result.push_back(use.consumer);
  }
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

bool OpGraph::has_consumers(NodeId id) const {
  impl_->check(id);
  return impl_->vertices[id].out_live != 0;
}

std::optional<NodeId> OpGraph::only_consumer(NodeId id) const {
  impl_->check(id);
  std::optional<NodeId> only;
  for (const Impl::Use& use : impl_->vertices[id].out) {
    if (use.consumer == npos) continue;
    if (only && *only != use.consumer) return std::nullopt;
    only = use.consumer;
  }
  return only;
}

std::size_t OpGraph::size() const { return impl_->vertices.size(); }

std::vector<NodeId> OpGraph::outputs() const {
  std::vector<NodeId> result;
  for (NodeId id = 0; id < size(); ++id) {
    if (impl_->nodes[id].node.kind == OpKind::output) result.push_back(id);
  }
  return result;
}

std::vector<NodeId> OpGraph::topological_order() const {
  std::lock_guard<std::mutex> lock(impl_->order_mutex);
  if (!impl_->order_known) {
    impl_->order = impl_->sorted();
    impl_->order_known = true;
  }
  return impl_->order;
}

std::vector<NodeId> OpGraph::Impl::sorted() const {
  // Boost's topological_sort, written out over the adjacency vectors: a depth-first search
  // from each unvisited node in id order, through the uses in the order they were made;
  // the reverse of the order in which nodes finish.
  const std::size_t n = vertices.size();
  enum : char { white, gray, black };
  std::vector<char> color(n, white);
  std::vector<NodeId> finished;
  finished.reserve(n);
  std::vector<std::pair<NodeId, std::size_t>> stack;  // node, next use to look at
  for (NodeId root = 0; root < n; ++root) {
    if (color[root] != white) continue;
    color[root] = gray;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      const std::vector<Impl::Use>& out = vertices[u].out;
      while (next < out.size() && out[next].consumer == npos) ++next;
      if (next == out.size()) {
        color[u] = black;
        finished.push_back(u);
        stack.pop_back();
        continue;
      }
      const NodeId v = out[next++].consumer;
      if (color[v] == gray) throw InternalError("tenex: OpGraph: the graph has a cycle");
      if (color[v] == white) {
        color[v] = gray;
        stack.emplace_back(v, 0);
      }
    }
  }
  return {finished.rbegin(), finished.rend()};
}

void OpGraph::validate() const {
  auto fail = [](NodeId id, const OpNode& n, const std::string& what) {
    throw InternalError("tenex: OpGraph: node " + std::to_string(id) + " (" + std::string(op_kind_name(n.kind)) +
                        " \"" + join_labels(n.labels) + "\" " + format_extents(n.extents) + "): " + what);
  };
  for (NodeId id = 0; id < size(); ++id) {
    const OpNode& n = impl_->nodes[id].node;
    const int arity = op_kind_arity(n.kind);
    const std::size_t count = impl_->vertices[id].in.size();
    if (arity >= 0 && count != static_cast<std::size_t>(arity)) {
      fail(id, n, "takes " + std::to_string(arity) + " operands but has " + std::to_string(count));
    }
    if (n.params.index() == 0 || op_kind_of_params(n.params) != n.kind) fail(id, n, "has parameters of another kind");
    if (n.labels.size() != n.extents.size()) fail(id, n, "has a different number of labels and extents");
    if (n.kind != OpKind::input) {
      for (std::size_t i = 0; i < n.labels.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          if (n.labels[i] == n.labels[j]) fail(id, n, "repeats a label");
        }
      }
    }
    if ((n.kind == OpKind::input || n.kind == OpKind::output) && !impl_->nodes[id].binding && n.dtype != DType::shape) {
      fail(id, n, "has no storage");
    }
    for (std::size_t m : n.sparse_maps) {
      if (m >= impl_->sparse_maps.size()) fail(id, n, "names sparse map " + std::to_string(m) + " that does not exist");
    }
    if (arity < 0 || count == static_cast<std::size_t>(arity)) {
      std::vector<const OpNode*> ops;
      for (NodeId op : operands(id)) ops.push_back(&impl_->nodes[op].node);
      // Checking (no inference) leaves the node as it is.
      if (std::string error = detail::apply_shape_rule(impl_->nodes[id].node, ops, false); !error.empty()) {
        fail(id, n, error);
      }
    }
  }
  (void)topological_order();
}

void OpGraph::set_operand(NodeId consumer, std::size_t index, NodeId operand) {
  impl_->check(consumer);
  impl_->check(operand);
  const std::vector<Impl::Operand>& in = impl_->vertices[consumer].in;
  if (std::none_of(in.begin(), in.end(), [&](const Impl::Operand& op) { return op.index == index; })) {
    throw InternalError("tenex: OpGraph: node " + std::to_string(consumer) + " has no operand " +
                        std::to_string(index));
  }
  impl_->disconnect(consumer, [index](std::size_t i) { return i == index; });
  impl_->connect(operand, consumer, index);
}

void OpGraph::replace_uses(NodeId from, NodeId to) {
  impl_->check(from);
  impl_->check(to);
  std::vector<std::pair<NodeId, std::size_t>> uses;
  Impl::Vertex& source = impl_->vertices[from];
  for (const Impl::Use& use : source.out) {
    if (use.consumer == npos) continue;
    Impl::Edge& edge = impl_->edges[use.edge];
    edge.live = false;
    uses.emplace_back(use.consumer, edge.index);
    std::erase_if(impl_->vertices[use.consumer].in, [&](const Impl::Operand& op) { return op.edge == use.edge; });
  }
  source.out.clear();
  source.out_live = 0;
  impl_->order_known = false;
  for (auto& [consumer, index] : uses) impl_->connect(to, consumer, index);
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
  std::vector<NodeId> mapping(n, n);
  std::size_t kept = 0;
  for (NodeId id = 0; id < n; ++id) kept += needed[id] ? 1 : 0;
  fresh.nodes.reserve(kept);
  fresh.vertices.reserve(kept);
  for (NodeId id : topological_order()) {
    if (!needed[id]) continue;
    mapping[id] = fresh.vertices.size();
    fresh.nodes.push_back(std::move(impl_->nodes[id]));  // the old graph is dropped below
    fresh.vertices.emplace_back();
  }
  for (NodeId id = 0; id < n; ++id) {
    if (!needed[id]) continue;
    for (const Impl::Operand& op : impl_->vertices[id].in) fresh.connect(mapping[op.source], mapping[id], op.index);
  }
  impl_->nodes = std::move(fresh.nodes);
  impl_->vertices = std::move(fresh.vertices);
  impl_->edges = std::move(fresh.edges);
  impl_->sparse_maps = std::move(fresh.sparse_maps);
  impl_->order_known = false;
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
  DotGraph g(size());
  for (const Impl::Edge& e : impl_->edges) {
    if (e.live) boost::add_edge(e.source, e.target, EdgeData{e.index}, g);
  }
  const std::vector<std::string> names = detail::tensor_names(*this);
  auto vertex_writer = [&](std::ostream& os, NodeId id) {
    const OpNode& n = impl_->nodes[id].node;
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
      text += "\\nallowed " + detail::format_fraction(n.pattern->fraction()) + (n.blocks() ? " (per-key blocks)" : "");
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
  auto edge_writer = [&](std::ostream& os, DotGraph::edge_descriptor e) {
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
