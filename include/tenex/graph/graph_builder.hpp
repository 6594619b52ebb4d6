// tenex/graph/graph_builder.hpp — the graph an expression draws itself into, as
// Expression::add_to_graph sees it (API.md, "Extending the DSL").
//
//   tenex::OpGraph g;                          // tenex::GraphBuilder is the same class
//   auto id = (a("i,k") * b("k,j")).add_to_graph(g);
//   std::string dot = g.to_dot();
//
// This header is what <tenex/tenex.hpp> gives: the graph as an opaque builder (its nodes,
// OpNode, and the op table's parameter structs are incomplete here). Code that adds nodes of
// its own (g.add(tenex::ScaleParams{2.0}, {x})) or reads them includes <tenex/ir.hpp>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/detail/access.hpp"
#include "tenex/export.hpp"
#include "tenex/scalar.hpp"

namespace tenex {

template <class T>
class Tensor;
struct OpNode;        // tenex/graph/op_graph.hpp
struct SparseMapUse;  // tenex/graph/op_kind.hpp

using NodeId = std::size_t;

/// The operation graph a linked set is compiled into: nodes (one operation each, with its
/// result labels, extents and parameters) and edges from operand to consumer, in operand
/// order. It validates itself, sorts topologically and prints Graphviz DOT.
class TENEX_API OpGraph {
 public:
  OpGraph();
  ~OpGraph();
  OpGraph(OpGraph&&) noexcept;
  OpGraph& operator=(OpGraph&&) noexcept;
  OpGraph(const OpGraph&) = delete;
  OpGraph& operator=(const OpGraph&) = delete;

  /// Adds a node whose operands are `operands`, in order. Checks the node against its
  /// kind's shape rule (ShapeError naming the node) and fills in `elements`.
  NodeId add_node(OpNode node, const std::vector<NodeId>& operands = {});
  /// The typed way to add a node, for code outside the library too (docs/extending.md):
  ///   NodeId s = g.add(tenex::ScaleParams{2.0}, {x});                 // labels from the shape rule
  ///   NodeId c = g.add(tenex::ContractParams{}, {a, b}, {"i", "j"});   // labels chosen
  /// The result's labels default to what the kind's shape rule gives (for a contraction:
  /// the labels on one operand only); extents always come from the operands. The element
  /// type is the first operand's.
  /// P is a parameter struct of the op table, so the definition is in <tenex/ir.hpp>.
  template <class P>
  NodeId add(P params, const std::vector<NodeId>& operands, std::vector<std::string> labels = {});
  /// An input node reading `tensor`'s value with `labels` (comma-separated; a repeated
  /// label takes the diagonal where it is used).
  template <class T>
  NodeId add_input(const Tensor<T>& tensor, std::string_view labels);
  const OpNode& node(NodeId id) const;
  OpNode& node(NodeId id);
  /// Operands of `id` in operand order.
  std::vector<NodeId> operands(NodeId id) const;
  /// Nodes that use `id` as an operand (each once, in increasing order).
  std::vector<NodeId> consumers(NodeId id) const;
  /// Whether some node uses `id` as an operand. O(1).
  bool has_consumers(NodeId id) const;
  /// The node that uses `id` as an operand (once or more) when it is the only one; nullopt
  /// when none or several do. Stops at the second consumer, so a value read by thousands
  /// of nodes costs no more to ask about than one read by two.
  std::optional<NodeId> only_consumer(NodeId id) const;
  std::size_t size() const;
  /// Nodes of kind output.
  std::vector<NodeId> outputs() const;
  /// Every node after its operands.
  std::vector<NodeId> topological_order() const;
  /// Throws tenex::InternalError naming the node when the graph is malformed
  /// (wrong arity, labels and extents of different lengths, repeated labels, a cycle).
  void validate() const;

  /// Makes operand `index` of `consumer` be `operand`.
  void set_operand(NodeId consumer, std::size_t index, NodeId operand);
  /// Makes every consumer of `from` use `to` instead.
  void replace_uses(NodeId from, NodeId to);
  /// Removes the nodes that no output needs (all nodes when the graph has no output
  /// are kept). Node ids change: returns the new id of each old id (or size() when removed).
  std::vector<NodeId> prune();

  /// The tensor value input node `id` reads or output node `id` writes (null: none): the
  /// graph's table of bindings, kept apart from the nodes, which describe operations only.
  const std::shared_ptr<void>& binding(NodeId id) const;
  /// Binds `value` (a tensor's storage, detail::Access::storage) to input or output node `id`.
  void bind(NodeId id, std::shared_ptr<void> value);

  /// Registers a sparse map; returns its index.
  std::size_t add_sparse_map(SparseMapUse use);
  const std::vector<SparseMapUse>& sparse_maps() const;

  /// Graphviz text: each node's operation, labels, extents and parameters.
  std::string to_dot() const;

  /// A number no other graph of this process has: lets the layers above keep their own
  /// bookkeeping about a graph without storing it in the graph.
  std::uint64_t serial() const;
  /// Removes the operand edges of `id` (a node no one needs any more; prune() drops it).
  void detach(NodeId id);

 private:
  NodeId add_derived(OpNode node, const std::vector<NodeId>& operands);
  NodeId add_input_storage(std::shared_ptr<void> storage, DType dtype, const std::vector<std::size_t>& extents,
                           std::string_view labels);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The name add_to_graph's argument goes by in docs/extending.md: the same class.
using GraphBuilder = OpGraph;

template <class T>
NodeId OpGraph::add_input(const Tensor<T>& tensor, std::string_view labels) {
  return add_input_storage(detail::Access::storage(tensor), dtype_of<Tensor<T>>(), tensor.shape().extents(), labels);
}

}  // namespace tenex
