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
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/export.hpp"
#include "tenex/graph/graph_builder.hpp"
#include "tenex/graph/op_kind.hpp"
#include "tenex/graph/storage_kind.hpp"
#include "tenex/scalar.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex {

struct SparsePattern;

/// One operation of the graph. Its kind is the kind of its parameters (OpGraph::add_node
/// sets `kind` from `params`, or fills in the kind's default parameters when `params` is
/// left empty).
struct TENEX_API OpNode {
  OpKind kind = OpKind::input;
  DType dtype = DType::f64;
  std::vector<std::string> labels;   // result labels (input: as written, may repeat)
  std::vector<std::size_t> extents;  // one per label
  OpParams params;                   // the struct of `kind` from TENEX_FOR_EACH_OP
  /// What the result's buffer holds (tenex/graph/storage_kind.hpp), chosen by the passes: dense
  /// unless a pass stores the value in another kind its backend declares. `elements` is the
  /// buffer's size in that kind (dense: the product of the extents; packed decompositions:
  /// all factors; blocks: the allowed elements).
  StorageKind layout = StorageKind::dense;
  std::size_t elements = 0;
  std::vector<std::size_t> sparse_maps;  // indices into OpGraph::sparse_maps() that hold for this result
  /// The maps true of this node's value as evaluated (after its masks): registered ones,
  /// and those propagated through operations and composed (i->a, a->Q give i->Q). Filled by
  /// the sparsity pass (docs/sparse.md); `pattern` is the set of elements they allow (null:
  /// every element); a `blocks` layout holds only those, as per-key dense blocks.
  std::vector<SparseMapUse> holds;
  std::shared_ptr<const SparsePattern> pattern;
  std::string note;  // shown in DOT: "factor L", "target"

  std::size_t size() const;  // product of extents
  /// Whether the buffer holds blocks (layout StorageKind::blocks), not every element.
  bool blocks() const { return layout == StorageKind::blocks; }
  /// The parameters as their struct: node.get<ContractParams>().alpha.
  template <class P>
  const P& get() const {
    return std::get<P>(params);
  }
  template <class P>
  P& get() {
    return std::get<P>(params);
  }
};

template <class P>
NodeId OpGraph::add(P params, const std::vector<NodeId>& operands, std::vector<std::string> labels) {
  OpNode n;
  n.kind = op_kind_of<P>;
  n.params = std::move(params);
  n.labels = std::move(labels);
  return add_derived(std::move(n), operands);
}

}  // namespace tenex
