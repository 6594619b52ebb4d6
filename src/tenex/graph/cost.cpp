#include "tenex/graph/cost.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <string_view>
#include <vector>

#include "tenex/error.hpp"
#include "tenex/labels.hpp"

namespace tenex::detail {

namespace {

/// Product of the extents of the distinct labels of the given nodes (a label's extent is
/// the same wherever it occurs in a valid graph). Allocates nothing: the pipeline counts
/// contractions with it for every set.
double iteration_space(std::initializer_list<const OpNode*> nodes) {
  double n = 1;
  const OpNode* const* begin = nodes.begin();
  for (const OpNode* const* node = begin; node != nodes.end(); ++node) {
    const std::vector<std::string>& labels = (*node)->labels;
    for (std::size_t i = 0; i < labels.size() && i < (*node)->extents.size(); ++i) {
      bool seen = false;
      for (std::size_t j = 0; j < i && !seen; ++j) seen = labels[j] == labels[i];
      for (const OpNode* const* earlier = begin; earlier != node && !seen; ++earlier) {
        seen = contains_label((*earlier)->labels, labels[i]);
      }
      if (!seen) n *= static_cast<double>((*node)->extents[i]);
    }
  }
  return n;
}

bool has_repeats(const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (labels[i] == labels[j]) return true;
    }
  }
  return false;
}

/// Matrix products of binary powering (matrix_power in the CPU backend).
std::size_t power_products(unsigned p) {
  if (p < 2) return 0;
  return static_cast<std::size_t>((std::bit_width(p) - 1) + (std::popcount(p) - 1));
}

/// The order n of the square operand of a decomposition (its first extent).
double order_of(const OpNode& operand) {
  return operand.extents.empty() ? 0.0 : static_cast<double>(operand.extents[0]);
}

}  // namespace

std::size_t element_bytes(DType dtype) { return dtype_bytes(dtype); }

NodeCost node_cost(const OpGraph& graph, NodeId id) {
  const OpNode& node = graph.node(id);
  NodeCost cost;
  cost.bytes = node.elements * element_bytes(node.dtype);
  const double elements = static_cast<double>(node.size());
  const std::vector<NodeId> ops = node.kind == OpKind::input ? std::vector<NodeId>{} : graph.operands(id);
  const OpNode* a = ops.empty() ? nullptr : &graph.node(ops[0]);
  const OpNode* b = ops.size() > 1 ? &graph.node(ops[1]) : nullptr;
  cost.kernels = 1;
  cost.kernel = "element-wise";
  cost.flops = elements;

  const OpKind kind = node.kind;
  if (kind == OpKind::input) {
    cost = NodeCost{0, cost.bytes, 0, ""};
  } else if (kind == OpKind::output) {
    cost.flops = 0;
    const bool same_layout = node.get<OutputParams>().operand_labels == node.labels;
    if (same_layout && a && a->kind != OpKind::input) {
      cost.kernel = "hand-over";  // the executor moves the operand's buffer into the target
      cost.kernels = 0;
    } else {
      cost.kernel = same_layout ? "copy" : "permute";
    }
  } else if (kind == OpKind::contract && a && b) {
    cost.flops = 2 * iteration_space({a, b, &node});
    bool batched = false;
    for (const std::string& l : node.labels) {
      batched = batched || (contains_label(a->labels, l) && contains_label(b->labels, l));
    }
    cost.kernel = batched ? "batched GEMM" : "GEMM";
  } else if (kind == OpKind::reduce && a) {
    const double space = iteration_space({a});
    if (space > elements) {
      cost.kernel = "reduce";
      cost.flops = space;
    } else {
      cost.flops = 0;
      cost.kernel = a->labels == node.labels || has_repeats(a->labels) ? "copy" : "permute";
    }
  } else if (kind == OpKind::add || kind == OpKind::subtract || kind == OpKind::divide || kind == OpKind::scale) {
    cost.kernel = "element-wise";
  } else if (kind == OpKind::mask) {
    cost.kernel = "mask";
  } else if (kind == OpKind::cholesky && a) {
    const double n = order_of(*a);
    cost.flops = n * n * n / 3;
    cost.kernel = "LAPACK potrf";
  } else if (kind == OpKind::eigen_solve && a) {
    const double n = static_cast<double>(decomposition_matrix(node.params, a->extents).n);
    cost.flops = b ? 34 * n * n * n / 3 : 9 * n * n * n;
    cost.kernel = b ? "LAPACK sygvd" : "LAPACK syevd";
  } else if (kind == OpKind::qr && a) {
    const MatrixExtents matrix = decomposition_matrix(node.params, a->extents);
    const double m = static_cast<double>(matrix.m), n = static_cast<double>(matrix.n);
    const double k = std::min(m, n);
    cost.flops = (2 * m * n * k - 2 * k * k * k / 3) + (2 * m * k * k - 2 * k * k * k / 3);
    cost.kernel = "LAPACK geqrf+orgqr";
    cost.kernels = 2;
  } else if (kind == OpKind::svd && a) {
    const MatrixExtents matrix = decomposition_matrix(node.params, a->extents);
    const double big = static_cast<double>(std::max(matrix.m, matrix.n));
    const double small = static_cast<double>(std::min(matrix.m, matrix.n));
    cost.flops = 14 * big * small * small + 8 * small * small * small;
    cost.kernel = "LAPACK gesdd";
  } else if (kind == OpKind::factor || kind == OpKind::slice || kind == OpKind::chip) {
    cost.flops = 0;
    cost.kernel = "copy";
  } else if (kind == OpKind::pow && a) {
    const double n = order_of(*a);
    const std::size_t products = power_products(node.get<PowParams>().power);
    cost.flops = 2 * n * n * n * static_cast<double>(products);
    cost.kernels = std::max<std::size_t>(products, 1);
    cost.kernel = products > 0 ? "GEMM" : "copy";
  } else {
    // Kinds added after this file: their own counts where the name is known, else one
    // element-wise kernel over the result.
    const std::string_view name = op_kind_name(kind);
    const double n = a ? order_of(*a) : 0.0;
    if (kind == OpKind::fused) {
      // Every instruction but loads and constants once per point of the iteration space
      // (the union of the operands' labels), plus one per point for a reduction.
      double points = elements;
      for (NodeId op : ops) {
        const OpNode& o = graph.node(op);
        for (std::size_t i = 0; i < o.labels.size() && i < o.extents.size(); ++i) {
          if (!contains_label(node.labels, o.labels[i])) {
            bool counted = false;
            for (NodeId earlier : ops) {
              if (earlier == op) break;
              counted = counted || contains_label(graph.node(earlier).labels, o.labels[i]);
            }
            if (!counted) points *= static_cast<double>(o.extents[i]);
          }
        }
      }
      double per_point = points > elements ? 1.0 : 0.0;
      for (const FusedInstr& in : node.get<FusedParams>().program) {
        per_point += in.op == FusedOp::load || in.op == FusedOp::constant ? 0.0 : 1.0;
      }
      cost.flops = per_point * points;
      cost.kernel = "fused";
    } else if (name == "inverse") {
      cost.flops = 2 * n * n * n;  // getrf 2n^3/3 + getri 4n^3/3
      cost.kernel = "LAPACK getrf+getri";
      cost.kernels = 2;
    } else if (name == "solve") {
      const double rhs = n > 0 ? elements / n : 0.0;
      cost.flops = 2 * n * n * n / 3 + 2 * n * n * rhs;
      cost.kernel = "LAPACK gesv";
    } else if (name == "spd_pow") {
      cost.flops = 9 * n * n * n + 2 * n * n * n;  // syevd, then V f(w) V^T
      cost.kernel = "LAPACK syevd";
      cost.kernels = 2;
    }
  }
  return cost;
}

double node_flops(const OpGraph& graph, NodeId id) { return node_cost(graph, id).flops; }

std::size_t node_bytes(const OpGraph& graph, NodeId id) {
  const OpNode& node = graph.node(id);
  return node.elements * element_bytes(node.dtype);
}

std::string kernel_class(const OpGraph& graph, NodeId id) { return node_cost(graph, id).kernel; }

double contraction_flops(const OpGraph& graph) {
  double flops = 0;
  for (NodeId id = 0; id < graph.size(); ++id) {
    const OpNode& node = graph.node(id);
    if (node.kind != OpKind::contract) continue;
    const std::vector<NodeId> ops = graph.operands(id);
    if (ops.size() != 2) continue;
    flops += 2 * iteration_space({&graph.node(ops[0]), &graph.node(ops[1]), &node});
  }
  return flops;
}

double chain_contraction_flops(const OpGraph& graph) {
  std::size_t contractions = 0;
  for (NodeId id = 0; id < graph.size() && contractions < 2; ++id) {
    contractions += graph.node(id).kind == OpKind::contract ? 1 : 0;
  }
  return contractions < 2 ? -1.0 : contraction_flops(graph);
}

std::vector<std::string> tensor_names(const OpGraph& graph) {
  std::vector<std::string> names(graph.size());
  std::vector<const void*> seen;
  // In the order the executor reads them; a malformed graph (a cycle) in node order.
  std::vector<NodeId> order;
  try {
    order = graph.topological_order();
  } catch (const Error&) {
    order.clear();
    for (NodeId id = 0; id < graph.size(); ++id) order.push_back(id);
  }
  for (NodeId id : order) {
    const void* storage = graph.binding(id).get();
    if (!storage) continue;
    auto it = std::find(seen.begin(), seen.end(), storage);
    if (it == seen.end()) it = seen.insert(seen.end(), storage);
    names[id] = 't';  // then appended: "t" + std::to_string(...) is GCC 12's false -Wrestrict (bug 105329)
    names[id] += std::to_string(it - seen.begin());
  }
  return names;
}

std::string format_count(double value) {
  char text[32];
  if (value < 1e6) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%.2e", value);
  }
  return text;
}

std::string format_bytes(std::size_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%zu B", bytes);
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  }
  return text;
}

}  // namespace tenex::detail
