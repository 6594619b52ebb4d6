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

std::size_t element_bytes(DType dtype) { return dtype_bytes(dtype); }

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

/// The bytes a buffer of `elements` of `dtype` takes: backends hand out whole 64-byte lines.
std::size_t buffer_bytes(std::size_t elements, DType dtype) { return (elements * element_bytes(dtype) + 63) / 64 * 64; }

/// The most bytes of intermediates held while one batch of `step` values of the product's
/// mode `mode` runs, in the order the executor runs it under a limit (depth first, the
/// running sum first, then the consumer's operands in order, each factor's slices just
/// before the partial product): the running sum, an intermediate that is sliced (held whole
/// across the batches), the slices and the partial product, then the next running sum,
/// which takes over the previous one's buffer.
std::size_t batch_peak(const OpGraph& graph, NodeId product, NodeId consumer, std::size_t mode, std::size_t step) {
  const OpNode& p = graph.node(product);
  const std::string& label = p.labels[mode];
  const DType dtype = p.dtype;
  const std::vector<NodeId> outer = graph.operands(consumer);
  const NodeId other = outer[0] == product ? outer[1] : outer[0];
  // An operand's slice of `step` values (none when it lacks the label), and the operand itself
  // when it is an intermediate: it stays held while its slices are taken.
  std::size_t whole = 0;
  auto slice_of = [&](NodeId id) -> std::size_t {
    const OpNode& n = graph.node(id);
    if (n.kind != OpKind::input) whole += buffer_bytes(n.elements, dtype);
    const std::size_t m = find_label(n.labels, label);
    if (m == n.labels.size() || n.extents[m] == 0) return 0;
    return buffer_bytes(n.elements / n.extents[m] * step, dtype);
  };
  const std::vector<NodeId> factors = graph.operands(product);
  const std::size_t factor_slices = slice_of(factors[0]) + slice_of(factors[1]);
  const std::size_t other_slice = slice_of(other);
  const std::size_t part = buffer_bytes(p.elements / p.extents[mode] * step, dtype);
  const std::size_t sum = buffer_bytes(graph.node(consumer).elements, dtype);
  const std::size_t before_part = outer[0] == product ? 0 : other_slice;  // the other operand first
  return whole + sum + std::max(before_part + factor_slices + part, part + other_slice);
}

/// The largest number of values of the product's mode `mode`, at most `most`, whose batch
/// fits under `limit` (batch_peak); `most` where none does (the set then fails at planning,
/// naming what does not fit).
std::size_t fitting_step(const OpGraph& graph, NodeId product, NodeId consumer, std::size_t mode, std::size_t most,
                         std::size_t limit) {
  if (batch_peak(graph, product, consumer, mode, most) <= limit) return most;
  if (batch_peak(graph, product, consumer, mode, 1) > limit) return most;
  std::size_t fits = 1, too_many = most;  // the peak grows with the step
  while (too_many - fits > 1) {
    const std::size_t mid = fits + (too_many - fits) / 2;
    (batch_peak(graph, product, consumer, mode, mid) <= limit ? fits : too_many) = mid;
  }
  return fits;
}

}  // namespace

NodeId restrict_to(OpGraph& graph, NodeId id, const std::string& label, std::size_t lo, std::size_t hi,
                   const std::string& note) {
  const OpNode& n = graph.node(id);
  const std::size_t mode = find_label(n.labels, label);
  if (mode == n.labels.size()) return id;
  SliceParams params;
  params.lo.assign(n.extents.size(), 0);
  params.hi = n.extents;
  params.lo[mode] = lo;
  params.hi[mode] = hi;
  const NodeId slice = graph.add(std::move(params), {id});
  graph.node(slice).note = note;
  return slice;
}

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
    // Batches of at most a quarter of the limit each, and fewer values of the label still
    // where a batch with the running sum and the slices held beside it would not fit.
    const std::size_t quarter = std::max<std::size_t>(memory_limit / 4, 1);
    const std::size_t wanted = (bytes + quarter - 1) / quarter;
    const std::size_t batches = std::min(extent, wanted);
    if (batches < 2) continue;
    const std::size_t step = fitting_step(graph, id, consumer, best, (extent + batches - 1) / batches, memory_limit);

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
