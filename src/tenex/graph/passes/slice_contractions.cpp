// Under a memory limit, a product whose intermediate does not fit is computed in batches.
//
// P = contract(A, B) read once, by C = contract(P, Q), where P's label x is summed in C:
//   C = sum over ranges r of x:  contract(contract(A[x in r], B[x in r]), Q[x in r])
// Each batch is one more contraction with an addend (GEMM beta = 1) accumulating into the
// previous batch's result, so P is never held whole: only one batch of it at a time (the
// executor runs the batches one after another under a limit; see schedule_of).
#include <algorithm>
#include <string>
#include <vector>

#include "tenex/graph/passes/passes.hpp"
#include "tenex/labels.hpp"

namespace tenex::passes {

namespace {

using detail::contains_label;
using detail::find_label;

std::size_t element_bytes(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::shape: return 0;
  }
  return 0;
}

bool repeats_a_label(const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (labels[i] == labels[j]) return true;
    }
  }
  return false;
}

/// A two-operand contraction with no addend and no sparse map.
bool plain_product(const OpGraph& graph, NodeId id) {
  const OpNode& n = graph.node(id);
  return n.kind == OpKind::contract && n.sparse_maps.empty() && graph.operands(id).size() == 2 &&
         n.get<ContractParams>().beta == 0.0;
}

/// `id` restricted to [lo, hi) of `label` (itself when it lacks the label).
NodeId restrict_to(OpGraph& graph, NodeId id, const std::string& label, std::size_t lo, std::size_t hi) {
  const OpNode& n = graph.node(id);
  const std::size_t mode = find_label(n.labels, label);
  if (mode == n.labels.size()) return id;
  SliceParams params;
  params.lo.assign(n.extents.size(), 0);
  params.hi = n.extents;
  params.lo[mode] = lo;
  params.hi[mode] = hi;
  return graph.add(std::move(params), {id});
}

}  // namespace

void slice_contractions(OpGraph& graph, std::size_t memory_limit) {
  if (memory_limit == 0) return;
  for (NodeId id : graph.topological_order()) {
    if (!plain_product(graph, id)) continue;
    const OpNode& product = graph.node(id);
    const std::size_t bytes = product.elements * element_bytes(product.dtype);
    if (bytes == 0 || bytes <= memory_limit / 2) continue;
    const std::vector<NodeId> consumers = graph.consumers(id);
    if (consumers.size() != 1 || !plain_product(graph, consumers[0])) continue;
    const NodeId consumer = consumers[0];
    const std::vector<NodeId> outer = graph.operands(consumer);
    if (outer[0] == outer[1]) continue;
    const NodeId other = outer[0] == id ? outer[1] : outer[0];
    const std::vector<NodeId> factors = graph.operands(id);
    if (repeats_a_label(graph.node(factors[0]).labels) || repeats_a_label(graph.node(factors[1]).labels) ||
        repeats_a_label(graph.node(other).labels)) {
      continue;  // diagonals of inputs: left whole
    }
    // The label to batch over: summed by the consumer, on its other operand, largest extent.
    const OpNode& c = graph.node(consumer);
    std::size_t best = product.labels.size();
    for (std::size_t m = 0; m < product.labels.size(); ++m) {
      const std::string& l = product.labels[m];
      if (contains_label(c.labels, l) || !contains_label(graph.node(other).labels, l)) continue;
      if (best == product.labels.size() || product.extents[m] > product.extents[best]) best = m;
    }
    if (best == product.labels.size()) continue;
    const std::string label = product.labels[best];
    const std::size_t extent = product.extents[best];
    // Batches of at most a quarter of the limit each (the operands' slices and the running
    // sum are held beside them).
    const std::size_t quarter = std::max<std::size_t>(memory_limit / 4, 1);
    const std::size_t wanted = (bytes + quarter - 1) / quarter;
    const std::size_t batches = std::min(extent, wanted);
    if (batches < 2) continue;
    const std::size_t step = (extent + batches - 1) / batches;

    const ContractParams inner = product.get<ContractParams>();
    const ContractParams outer_params = c.get<ContractParams>();
    const std::vector<std::string> product_labels = product.labels, result_labels = c.labels;
    const bool product_first = outer[0] == id;
    NodeId sum = 0;
    bool first = true;
    for (std::size_t lo = 0; lo < extent; lo += step) {
      const std::size_t hi = std::min(extent, lo + step);
      const NodeId a = restrict_to(graph, factors[0], label, lo, hi);
      const NodeId b = restrict_to(graph, factors[1], label, lo, hi);
      const NodeId part = graph.add(inner, {a, b}, product_labels);
      const NodeId q = restrict_to(graph, other, label, lo, hi);
      std::vector<NodeId> operands = product_first ? std::vector<NodeId>{part, q} : std::vector<NodeId>{q, part};
      ContractParams params = outer_params;
      if (!first) {
        params.beta = 1.0;  // accumulate into the batches before
        operands.push_back(sum);
      }
      sum = graph.add(params, operands, result_labels);
      graph.node(sum).note = graph.node(consumer).note;
      first = false;
    }
    graph.replace_uses(consumer, sum);
    graph.detach(consumer);
    graph.detach(id);
  }
}

}  // namespace tenex::passes
