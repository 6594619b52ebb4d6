#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

namespace {

void mix(std::size_t& h, std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }

/// A hash of everything but the parameters (kind, element type, labels, extents, operands,
/// bound value, sparse maps): nodes of equal hashes are then compared in full, the parameters
/// by their structs' defaulted operator== (every field, whatever a kind adds later).
std::size_t signature_hash(const OpNode& n, const void* value, const std::vector<NodeId>& operands) {
  std::size_t h = static_cast<std::size_t>(n.kind);
  mix(h, static_cast<std::size_t>(n.dtype));
  for (const std::string& l : n.labels) mix(h, std::hash<std::string>{}(l));
  mix(h, n.labels.size());
  for (std::size_t e : n.extents) mix(h, e);
  for (NodeId op : operands) mix(h, op);
  mix(h, operands.size());
  mix(h, std::hash<const void*>{}(value));
  for (std::size_t m : n.sparse_maps) mix(h, m);
  return h;
}

/// The order pass marks the input slices of each slice of a sliced network ("slice 3"): the
/// slices' intermediates stay apart, so that one slice's are freed before the next runs,
/// rather than shared across slices and held all the while (docs/networks.md).
bool of_a_slice(const std::string& note) { return note.rfind("slice ", 0) == 0; }

bool same_value(const OpGraph& graph, NodeId a, NodeId b, const std::vector<NodeId>& b_operands) {
  const OpNode& m = graph.node(b);
  const OpNode& n = graph.node(a);
  return n.kind == m.kind && n.dtype == m.dtype && n.labels == m.labels && n.extents == m.extents &&
         graph.binding(a) == graph.binding(b) && n.sparse_maps == m.sparse_maps && graph.operands(a) == b_operands &&
         n.params == m.params && (n.note == m.note || (!of_a_slice(n.note) && !of_a_slice(m.note)));
}

}  // namespace

void eliminate_common_subexpressions(OpGraph& graph) {
  // Hashed, not ordered: a set of a hundred thousand statements is as many nodes, each
  // hashed once into a table of node ids chained by bucket (no allocation per node), where
  // an ordered map compared label lists at every step of every search. A node merges into
  // the earlier node (in topological order) equal to it; there is at most one, since of two
  // equal nodes the later one merged into the earlier.
  const std::vector<NodeId> order = graph.topological_order();
  constexpr NodeId none = std::numeric_limits<NodeId>::max();
  std::size_t buckets = 16;
  while (buckets < 2 * order.size()) buckets *= 2;
  std::vector<NodeId> head(buckets, none);       // the last node kept in each bucket
  std::vector<NodeId> next(graph.size(), none);  // the node kept before it in its bucket
  std::vector<std::size_t> hash(graph.size(), 0);
  for (NodeId id : order) {
    const OpNode& node = graph.node(id);
    // Outputs write distinct targets; everything else with equal signatures is one value.
    if (node.kind == OpKind::output) continue;
    const std::vector<NodeId> operands = graph.operands(id);
    hash[id] = signature_hash(node, graph.binding(id).get(), operands);
    NodeId& bucket = head[hash[id] & (buckets - 1)];
    bool merged = false;
    for (NodeId other = bucket; other != none; other = next[other]) {
      if (hash[other] == hash[id] && same_value(graph, other, id, operands)) {
        graph.replace_uses(id, other);
        graph.detach(id);  // dead now: let later passes see the true consumer counts
        merged = true;
        break;
      }
    }
    if (!merged) {
      next[id] = bucket;
      bucket = id;
    }
  }
}

}  // namespace tenex::passes
