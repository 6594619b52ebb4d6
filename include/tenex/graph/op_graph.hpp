// tenex/graph/op_graph.hpp — the operation graph a linked set is compiled into.
//
// A node is one operation with its result labels and extents and its
// parameters; edges run from operand to consumer and keep operand order. The
// graph validates itself, sorts topologically and prints Graphviz DOT.
//
//   tenex::OpGraph g;
//   auto id = (a("i,k") * b("k,j")).add_to_graph(g);
//   std::string dot = g.to_dot();
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tenex/export.hpp"
#include "tenex/graph/op_kind.hpp"
#include "tenex/scalar.hpp"

namespace tenex {

class SparseMap;

using NodeId = std::size_t;

/// Parameters of a node; which ones apply depends on the kind.
struct OpParams {
  double alpha = 1.0;                 // scale, contract, element-wise: factor of the result
  double alpha_b = 1.0;               // element-wise: factor of the second operand
  std::vector<std::size_t> lo, hi;    // slice: half-open bounds per mode
  std::size_t mode = 0;               // chip: the mode fixed (of the operand)
  std::size_t index = 0;              // chip: its index
  unsigned power = 0;                 // pow
  std::size_t factor = 0;             // factor: which factor (0, 1, 2) of the packed operand
  std::size_t offset = 0;             // factor: first element inside the packed operand
  std::vector<std::string> operand_labels;  // output: the operand's labels renamed to the target's
};

/// One operation of the graph.
struct TENEX_API OpNode {
  OpKind kind = OpKind::input;
  DType dtype = DType::f64;
  std::vector<std::string> labels;    // result labels (input: as written, may repeat)
  std::vector<std::size_t> extents;   // one per label
  OpParams params;
  std::size_t elements = 0;           // size of the result buffer (packed decompositions: all factors)
  std::vector<std::size_t> sparse_maps;  // indices into OpGraph::sparse_maps() that mask this result
  std::shared_ptr<void> storage;      // input: the value read; output: the target written
  std::string note;                   // shown in DOT: "factor L", "target c"

  std::size_t size() const;           // product of extents
};

/// A sparse map registered on the graph: source labels -> target labels.
struct SparseMapUse {
  std::vector<std::string> source;
  std::vector<std::string> target;
  std::shared_ptr<const SparseMap> map;
};

class TENEX_API OpGraph {
 public:
  OpGraph();
  ~OpGraph();
  OpGraph(OpGraph&&) noexcept;
  OpGraph& operator=(OpGraph&&) noexcept;
  OpGraph(const OpGraph&) = delete;
  OpGraph& operator=(const OpGraph&) = delete;

  /// Adds a node whose operands are `operands`, in order.
  NodeId add_node(OpNode node, const std::vector<NodeId>& operands = {});
  const OpNode& node(NodeId id) const;
  OpNode& node(NodeId id);
  /// Operands of `id` in operand order.
  std::vector<NodeId> operands(NodeId id) const;
  /// Nodes that use `id` as an operand (each once).
  std::vector<NodeId> consumers(NodeId id) const;
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

  /// Registers a sparse map; returns its index.
  std::size_t add_sparse_map(SparseMapUse use);
  const std::vector<SparseMapUse>& sparse_maps() const;

  /// Graphviz text: each node's operation, labels, extents and parameters.
  std::string to_dot() const;

  /// Memo of the expression layer: the node built for (object, key), if any. The graph
  /// keeps `owner` (the object) alive, so its address is never reused while the memo lasts.
  const NodeId* find_memo(const void* object, const std::string& key) const;
  void set_memo(const void* object, const std::string& key, NodeId id, std::shared_ptr<const void> owner);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenex
