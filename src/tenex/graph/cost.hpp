// What a node of an OpGraph costs: floating-point operations, the bytes of its result, the
// kernels it launches and the class of kernel that runs it. Read by OpGraph::to_dot, by
// tenex::explain and by the pipeline; defined once here so every report counts alike.
//
// Kinds this file does not know yet cost the elements of their result (one kernel, class
// "element-wise"): a new kind shows up in every report before it gets its own count.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

struct NodeCost {
  double flops = 0;         // floating-point operations (2*m*n*k for a GEMM)
  std::size_t bytes = 0;    // size of the result buffer (packed decompositions: all factors)
  std::size_t kernels = 0;  // kernel launches and library calls (0: nothing runs)
  std::string kernel;       // "GEMM", "batched GEMM", "LAPACK potrf", "permute", ... ("" for an input)
};

/// Bytes of one element of `dtype` (0 for shapes).
std::size_t element_bytes(DType dtype);

/// Floating-point operations of node `id`. Contraction: 2 * (product of the extents of every
/// label of both operands); element-wise: elements of the result; reduce: the additions;
/// decompositions: LAPACK's textbook counts (potrf n^3/3, syevd 9n^3, sygvd 34n^3/3,
/// geqrf+orgqr, gesdd 14 m n^2 + 8 n^3); pow: 2n^3 per product; copies: 0.
double node_flops(const OpGraph& graph, NodeId id);
/// Bytes of the result of node `id` (its elements times the element size).
std::size_t node_bytes(const OpGraph& graph, NodeId id);
/// The class of kernel that runs node `id`: "GEMM", "batched GEMM", "element-wise", "reduce",
/// "permute", "copy", "LAPACK potrf", "hand-over" (an output whose value is already in place),
/// "" for an input.
std::string kernel_class(const OpGraph& graph, NodeId id);
/// Everything at once.
NodeCost node_cost(const OpGraph& graph, NodeId id);

/// Flops of the contraction nodes only (what the ordering of products changes).
double contraction_flops(const OpGraph& graph);
/// contraction_flops of a graph that has two contractions or more, else -1 (one contraction
/// has no order to change): what the pipeline records of each set before the passes, at the
/// cost of a look at each node's kind for most sets.
double chain_contraction_flops(const OpGraph& graph);

/// A name for each tensor the graph reads or writes, "t0", "t1", ... in the order the graph
/// runs (its topological order; one name per storage: an input that reads a target the graph
/// writes has the target's name); "" for nodes without storage.
std::vector<std::string> tensor_names(const OpGraph& graph);

/// 12800 -> "12800", 2.4e7 -> "2.40e+07" (flops and element counts in reports).
std::string format_count(double value);
/// 320 -> "320 B", 983040 -> "960.0 KiB", ... (binary units).
std::string format_bytes(std::size_t bytes);

}  // namespace tenex::detail
