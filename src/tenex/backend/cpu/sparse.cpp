// Sparse evaluation on the CPU (sparse.hpp): which way each node runs over compact
// operands, and the element-by-element paths (an operand read at another node's allowed
// elements, a compact operand summed into a result). The products key by key are in
// sparse_contract.cpp, the conversions between compact and dense buffers in compact_layout.cpp.
#include "tenex/backend/cpu/sparse.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/compact_layout.hpp"
#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/sparse_contract.hpp"
#include "tenex/error.hpp"
#include "tenex/scalar.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex::detail::cpu {

namespace {

using sparse::dense_strides;
using sparse::expand;
using sparse::gather;
using sparse::next_tuple;
using sparse::same_layout;
using sparse::sparse_contract;

// ---- element by element: any layouts ----------------------------------------------------

constexpr std::size_t npos = static_cast<std::size_t>(-1);

/// Calls f(index, compact offset) for every allowed element; index is in the node's modes.
template <class F>
void for_each_element(const SparsePattern& p, F&& f) {
  std::vector<std::size_t> index(p.extents.size(), 0), pos(p.row_modes.size(), 0);
  std::size_t compact = 0;
  for (const SparsePattern::Key& key : p.keys) {
    for (std::size_t d = 0; d < p.key_modes.size(); ++d) index[p.key_modes[d]] = key.index[d];
    compact = key.offset;
    bool empty = false;
    for (const auto& dom : key.domains) empty = empty || dom.empty();
    if (empty) continue;
    std::fill(pos.begin(), pos.end(), 0);
    while (true) {
      for (std::size_t r = 0; r < p.row_modes.size(); ++r) index[p.row_modes[r]] = key.domains[r][pos[r]];
      for (std::size_t d : p.free_modes) index[d] = 0;
      for (std::size_t e = 0; e < p.free_size; ++e) {
        f(index, compact++);
        for (std::size_t i = p.free_modes.size(); i-- > 0;) {
          const std::size_t d = p.free_modes[i];
          if (++index[d] < p.extents[d]) break;
          index[d] = 0;
        }
      }
      if (!next_tuple(pos, key)) break;
    }
  }
}

/// Where the element `index` (in the pattern's modes) lies in a compact buffer, or npos
/// when the pattern excludes it.
std::size_t locate(const SparsePattern& p, const std::vector<std::size_t>& index, std::vector<std::size_t>& key) {
  key.resize(p.key_modes.size());
  for (std::size_t d = 0; d < p.key_modes.size(); ++d) key[d] = index[p.key_modes[d]];
  const SparsePattern::Key* k = p.find(key);
  if (!k) return npos;
  std::size_t row = 0;
  for (std::size_t r = 0; r < p.row_modes.size(); ++r) {
    const auto& dom = k->domains[r];
    const auto it = std::lower_bound(dom.begin(), dom.end(), index[p.row_modes[r]]);
    if (it == dom.end() || *it != index[p.row_modes[r]]) return npos;
    row = row * dom.size() + static_cast<std::size_t>(it - dom.begin());
  }
  std::size_t free = 0;
  for (std::size_t d : p.free_modes) free = free * p.extents[d] + index[d];
  return k->offset + row * p.free_size + free;
}

/// Reads an operand (dense or compact, any label order) at points given in another node's
/// modes.
template <class T>
class Reader {
 public:
  Reader(const OpNode& operand, const T* data, const std::vector<std::string>& labels) : node_(operand), data_(data) {
    for (const std::string& l : operand.labels) {
      at_.push_back(static_cast<std::size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin()));
    }
    strides_ = dense_strides(operand.extents);
    own_.resize(operand.labels.size());
  }
  T operator()(const std::vector<std::size_t>& index) {
    if (!node_.blocks()) {
      std::size_t off = 0;
      for (std::size_t d = 0; d < at_.size(); ++d) off += index[at_[d]] * strides_[d];
      return data_[off];
    }
    for (std::size_t d = 0; d < at_.size(); ++d) own_[d] = index[at_[d]];
    const std::size_t off = locate(*node_.pattern, own_, key_);
    return off == npos ? T(0) : data_[off];
  }

 private:
  const OpNode& node_;
  const T* data_;
  std::vector<std::size_t> at_, strides_, own_, key_;
};

bool labels_within(const OpNode& operand, const OpNode& node) {
  for (const std::string& l : operand.labels) {
    if (std::find(node.labels.begin(), node.labels.end(), l) == node.labels.end()) return false;
  }
  return true;
}

/// Each operand at the allowed elements of `node`, as vectors of node.elements values (an
/// operand in the node's own layout is used as it is). False when an operand has labels the
/// node lacks (a reduction).
template <class T>
bool operands_at_allowed(const KernelArgs<T>& args, std::vector<std::vector<T>>& gathered, std::vector<const T*>& in) {
  const OpNode& node = args.node;
  for (const OpNode* op : args.operand_nodes) {
    if (!labels_within(*op, node)) return false;
  }
  gathered.resize(args.operands.size());
  in.resize(args.operands.size());
  for (std::size_t k = 0; k < args.operands.size(); ++k) {
    const OpNode& op = *args.operand_nodes[k];
    if (same_layout(node, op)) {
      in[k] = args.operands[k].data;
      continue;
    }
    gathered[k].resize(node.elements);
    Reader<T> read(op, args.operands[k].data, node.labels);
    T* g = gathered[k].data();
    for_each_element(*node.pattern, [&](const std::vector<std::size_t>& index, std::size_t c) { g[c] = read(index); });
    in[k] = g;
  }
  return true;
}

/// out (dense, node's labels) = the compact operand written or summed into it; or, for a
/// compact out, the same at its allowed elements.
template <class T>
void scatter_sum(const OpNode& operand, const T* in, const std::vector<std::string>& operand_names, const OpNode& node,
                 T* out) {
  const std::vector<std::size_t> strides = dense_strides(node.extents);
  std::vector<std::size_t> to(operand_names.size(), npos);  // node mode of each operand mode
  for (std::size_t d = 0; d < operand_names.size(); ++d) {
    const auto at = static_cast<std::size_t>(std::find(node.labels.begin(), node.labels.end(), operand_names[d]) -
                                             node.labels.begin());
    if (at < node.labels.size()) to[d] = at;
  }
  std::fill(out, out + (node.blocks() ? node.elements : node.size()), T(0));
  std::vector<std::size_t> target(node.labels.size(), 0), key;
  for_each_element(*operand.pattern, [&](const std::vector<std::size_t>& index, std::size_t c) {
    if (!node.blocks()) {
      std::size_t off = 0;
      for (std::size_t d = 0; d < to.size(); ++d) {
        if (to[d] != npos) off += index[d] * strides[to[d]];
      }
      out[off] += in[c];
      return;
    }
    for (std::size_t d = 0; d < to.size(); ++d) {
      if (to[d] != npos) target[to[d]] = index[d];
    }
    const std::size_t off = locate(*node.pattern, target, key);
    if (off != npos) out[off] += in[c];
  });
}


/// Whether the fused program is zero wherever operand `k` is zero (a product with it, ...).
bool zero_with(const FusedParams& params, std::size_t k) {
  std::vector<char> zero(params.program.size(), 0);
  for (std::size_t n = 0; n < params.program.size(); ++n) {
    const FusedInstr& in = params.program[n];
    const bool a = in.a < n && zero[in.a], b = in.b < n && zero[in.b];
    zero[n] = in.op == FusedOp::load ? in.a == k : fused_op_keeps_zero(in, a, b);
  }
  return !zero.empty() && zero.back();
}

/// A fused region that sums: its program over the allowed elements of a compact operand
/// that spans its space and outside of which it is zero, then summed into the result.
template <class T>
std::optional<KernelCount> fused_sum_over_allowed(const KernelArgs<T>& args) {
  const OpNode& node = args.node;
  const FusedParams& params = node.get<FusedParams>();
  if (params.reduce != ReduceOp::sum) return std::nullopt;
  std::vector<std::string> space;
  for (const OpNode* op : args.operand_nodes) {
    for (const std::string& l : op->labels) {
      if (std::find(space.begin(), space.end(), l) == space.end()) space.push_back(l);
    }
  }
  for (std::size_t k = 0; k < args.operands.size(); ++k) {
    const OpNode& lead = *args.operand_nodes[k];
    if (!lead.blocks() || lead.labels.size() != space.size() || !zero_with(params, k)) continue;
    const std::size_t n = lead.elements;
    std::vector<std::vector<T>> gathered(args.operands.size());
    std::vector<const T*> in(args.operands.size());
    for (std::size_t o = 0; o < args.operands.size(); ++o) {
      const OpNode& op = *args.operand_nodes[o];
      if (same_layout(lead, op)) {
        in[o] = args.operands[o].data;
        continue;
      }
      gathered[o].resize(n);
      Reader<T> read(op, args.operands[o].data, lead.labels);
      T* g = gathered[o].data();
      for_each_element(*lead.pattern,
                       [&](const std::vector<std::size_t>& index, std::size_t c) { g[c] = read(index); });
      in[o] = g;
    }
    std::vector<T> values(n);
    const Modes one{0};
    const Extents flat{n};
    KernelCount count = fused(params, in, std::vector<Modes>(in.size(), one), std::vector<Extents>(in.size(), flat),
                              values.data(), one, flat);
    scatter_sum(lead, values.data(), lead.labels, node, args.out.data);
    count.calls += 1;
    return count;
  }
  return std::nullopt;
}

}  // namespace

/// The estimate that chooses between per-key products and one dense GEMM (explain() shows
/// the same).
/// The estimate walks every key (a fraction of a millisecond for thousands): a plan run
/// again (the plan cache keeps its nodes and patterns) finds it in a small per-thread
/// cache, keyed by the patterns (held weakly: a live pattern at an address is the same,
/// immutable, pattern) and the labels and extents.
template <class T>
SparseProductCost sparse_product_cost_of(const OpNode& node, const KernelArgs<T>& args) {
  const OpNode* sides[3] = {&node, args.operand_nodes[0], args.operand_nodes[1]};
  struct Entry {
    std::weak_ptr<const SparsePattern> pattern[3];
    bool has[3] = {false, false, false};
    std::vector<std::string> labels[3];
    std::vector<std::size_t> extents[3];
    SparseProductCost cost;
  };
  thread_local std::vector<Entry> cache;
  for (const Entry& e : cache) {
    bool same = true;
    for (int i = 0; i < 3 && same; ++i) {
      const OpNode& n = *sides[i];
      same = e.has[i] == (n.pattern != nullptr) && (!e.has[i] || e.pattern[i].lock() == n.pattern) &&
             e.labels[i] == n.labels && e.extents[i] == n.extents;
    }
    if (same) return e.cost;
  }
  const OpNode& a = *sides[1];
  const OpNode& b = *sides[2];
  Entry e;
  e.cost = sparse_product_cost(node.labels, node.pattern.get(), a.labels, a.pattern.get(), b.labels, b.pattern.get(),
                               node.extents, a.extents, b.extents);
  for (int i = 0; i < 3; ++i) {
    e.pattern[i] = sides[i]->pattern;
    e.has[i] = sides[i]->pattern != nullptr;
    e.labels[i] = sides[i]->labels;
    e.extents[i] = sides[i]->extents;
  }
  constexpr std::size_t kEntries = 16;
  if (cache.size() == kEntries) cache.erase(cache.begin());
  cache.push_back(std::move(e));
  return cache.back().cost;
}

template <class T>
KernelCount run_sparse(Backend<T>& dense, const KernelArgs<T>& args) {
  const OpNode& node = args.node;
  const std::size_t n_ops = args.operands.size();
  const bool dense_choice = node.kind == OpKind::contract && n_ops == 2 && sparse_product_cost_of(node, args).dense;
  if (node.kind == OpKind::contract && n_ops == 2 && !dense_choice) {
    std::vector<T> ea, eb;
    if (auto count = sparse_contract(node.get<ContractParams>(), args, ea, eb)) return *count;
  }
  if (node.kind == OpKind::mask && node.blocks()) {
    const OpNode& in = *args.operand_nodes[0];
    if (same_layout(node, in)) {
      std::memcpy(args.out.data, args.operands[0].data, node.elements * sizeof(T));
      return {0, 1};
    }
    if (!in.blocks() && in.labels == node.labels) {
      gather(*node.pattern, args.operands[0].data, args.out.data);
      return {0, 1};
    }
  }
  if (node.kind == OpKind::output && args.operand_nodes[0]->blocks()) {
    const std::vector<std::string>& names = node.get<OutputParams>().operand_labels;
    if (names == node.labels) {
      expand(*args.operand_nodes[0]->pattern, args.operands[0].data, args.out.data);
    } else {
      scatter_sum(*args.operand_nodes[0], args.operands[0].data, names, node, args.out.data);
    }
    return {0, 1};
  }
  if (node.kind == OpKind::reduce && args.operand_nodes[0]->blocks()) {
    scatter_sum(*args.operand_nodes[0], args.operands[0].data, args.operand_nodes[0]->labels, node, args.out.data);
    return {static_cast<double>(args.operand_nodes[0]->elements), 1};
  }
  if (node.kind == OpKind::fused && !node.blocks()) {
    if (auto count = fused_sum_over_allowed(args)) return *count;
  }
  const bool pointwise = node.kind == OpKind::mask || node.kind == OpKind::scale || node.kind == OpKind::add ||
                         node.kind == OpKind::subtract || node.kind == OpKind::divide ||
                         (node.kind == OpKind::fused && node.get<FusedParams>().reduce == ReduceOp::sum);
  std::vector<std::vector<T>> gathered;
  std::vector<const T*> in;
  if (node.blocks() && n_ops > 0 && pointwise && operands_at_allowed(args, gathered, in)) {
    // Element-wise over the allowed elements, as one long vector.
    const std::size_t n = node.elements;
    const Modes one{0};
    const Extents flat{n};
    if (node.kind == OpKind::mask) {
      if (n) std::memcpy(args.out.data, in[0], n * sizeof(T));
      return {0, 1};
    }
    if (node.kind == OpKind::scale) {
      const ScaleParams& p = node.get<ScaleParams>();
      return scale(scalar_factor<T>(p.alpha, p.alpha_imag), in[0], args.out.data, n);
    }
    if (node.kind == OpKind::fused) {
      return fused(node.get<FusedParams>(), in, std::vector<Modes>(n_ops, one), std::vector<Extents>(n_ops, flat),
                   args.out.data, one, flat);
    }
    const ElementwiseParams& p = node.kind == OpKind::add ? static_cast<const ElementwiseParams&>(node.get<AddParams>())
                                 : node.kind == OpKind::subtract
                                     ? static_cast<const ElementwiseParams&>(node.get<SubtractParams>())
                                     : static_cast<const ElementwiseParams&>(node.get<DivideParams>());
    const BinaryOp op = node.kind == OpKind::add        ? BinaryOp::add
                        : node.kind == OpKind::subtract ? BinaryOp::subtract
                                                        : BinaryOp::divide;
    return elementwise(op, static_cast<T>(p.alpha), in[0], one, static_cast<T>(p.alpha_b), in[1], one, args.out.data,
                       flat, one);
  }
  // Any other node: expanded operands, the dense kernel, the allowed elements of its result.
  std::vector<std::vector<T>> expanded(n_ops);
  KernelArgs<T> dense_args{node, args.operand_nodes, args.operands, args.out};
  for (std::size_t k = 0; k < n_ops; ++k) {
    const OpNode& op = *args.operand_nodes[k];
    if (!op.blocks()) continue;
    expanded[k].resize(op.size());
    expand(*op.pattern, args.operands[k].data, expanded[k].data());
    dense_args.operands[k] = View<const T>{expanded[k].data(), op.size(), Device::host};
  }
  std::vector<T> out;
  if (node.blocks()) {
    out.resize(node.size());
    dense_args.out = View<T>{out.data(), node.size(), Device::host};
  }
  KernelCount count = dense.run(dense_args);
  if (node.blocks()) gather(*node.pattern, out.data(), args.out.data);
  return count;
}

#define TENEX_INSTANTIATE_SPARSE(T) template KernelCount run_sparse<T>(Backend<T>&, const KernelArgs<T>&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_SPARSE)
#undef TENEX_INSTANTIATE_SPARSE

}  // namespace tenex::detail::cpu
