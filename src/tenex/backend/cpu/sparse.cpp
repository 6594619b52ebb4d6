#include "tenex/backend/cpu/sparse.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/gather_kernel.hpp"
#include "tenex/backend/cpu/gemm_call.hpp"
#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/single_threaded_blas.hpp"
#include "tenex/error.hpp"
#include "tenex/scalar.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex::detail::cpu {

namespace {

using Offsets = std::vector<std::ptrdiff_t>;

std::vector<std::size_t> dense_strides(const std::vector<std::size_t>& extents) {
  std::vector<std::size_t> strides(extents.size(), 1);
  for (std::size_t d = extents.size(); d-- > 1;) strides[d - 1] = strides[d] * extents[d];
  return strides;
}


/// How a pattern's allowed elements lie in the dense layout: strides, and whether the free
/// modes are trailing (a row's free block is then contiguous).
struct RunLayout {
  std::vector<std::size_t> strides, free_extents;
  bool trailing = true;
  explicit RunLayout(const SparsePattern& p) : strides(dense_strides(p.extents)) {
    const std::size_t rank = p.extents.size();
    for (std::size_t i = 0; i < p.free_modes.size(); ++i) {
      trailing = trailing && p.free_modes[i] == rank - p.free_modes.size() + i;
    }
    for (std::size_t d : p.free_modes) free_extents.push_back(p.extents[d]);
  }
};

/// Steps `pos` (one position per row mode in the key's domains) to the next tuple of the key's
/// domains, the last mode fastest; false after the last tuple.
bool next_tuple(std::vector<std::size_t>& pos, const SparsePattern::Key& key) {
  for (std::size_t r = pos.size(); r-- > 0;) {
    if (++pos[r] < key.domains[r].size()) return true;
    pos[r] = 0;
  }
  return false;
}

/// Calls f(dense offset, compact offset, count) for every run of allowed elements of one
/// key: `count` elements contiguous in both layouts. `pos` and `fidx` are scratch.
template <class F>
void for_each_run_of_key(const SparsePattern& p, const RunLayout& lay, const SparsePattern::Key& key,
                         std::vector<std::size_t>& pos, std::vector<std::size_t>& fidx, F&& f) {
  const std::vector<std::size_t>& st = lay.strides;
  for (const auto& dom : key.domains) {
    if (dom.empty()) return;
  }
  std::size_t base = 0;
  for (std::size_t d = 0; d < p.key_modes.size(); ++d) base += key.index[d] * st[p.key_modes[d]];
  std::size_t compact = key.offset;
  if (p.row_modes.size() == 1 && lay.trailing) {  // the common case: one restricted mode
    const std::size_t stride = st[p.row_modes[0]];
    for (std::size_t v : key.domains[0]) {
      f(base + v * stride, compact, p.free_size);
      compact += p.free_size;
    }
    return;
  }
  pos.assign(p.row_modes.size(), 0);
  while (true) {
    std::size_t off = base;
    for (std::size_t r = 0; r < p.row_modes.size(); ++r) off += key.domains[r][pos[r]] * st[p.row_modes[r]];
    if (lay.trailing) {
      f(off, compact, p.free_size);
      compact += p.free_size;
    } else {
      fidx.assign(p.free_modes.size(), 0);
      for (std::size_t e = 0; e < p.free_size; ++e) {
        std::size_t o = off;
        for (std::size_t i = 0; i < p.free_modes.size(); ++i) o += fidx[i] * st[p.free_modes[i]];
        f(o, compact++, std::size_t{1});
        for (std::size_t i = p.free_modes.size(); i-- > 0;) {
          if (++fidx[i] < lay.free_extents[i]) break;
          fidx[i] = 0;
        }
      }
    }
    if (!next_tuple(pos, key)) break;
  }
}

/// Whether a loop over `work` items is worth OpenMP threads.
bool parallel_worth(std::size_t items, std::size_t elements) {
  return items > 1 && elements >= (std::size_t{1} << 15) && !omp_in_parallel() && omp_get_max_threads() > 1;
}

template <class T>
void copy_run(T* to, const T* from, std::size_t n) {
  if (n == 1) {
    *to = *from;
  } else {
    std::memcpy(to, from, n * sizeof(T));
  }
}

/// The dense tensor of a compact buffer, zeros where the pattern excludes. Every element is
/// written once, in parallel: when the key modes lead, each key owns a contiguous slab of
/// the dense layout, zeroed and filled by the thread that has the key (in cache).
template <class T>
void expand(const SparsePattern& p, const T* compact, T* dense) {
  const RunLayout lay(p);
  bool leading = true;
  for (std::size_t d = 0; d < p.key_modes.size(); ++d) leading = leading && p.key_modes[d] == d;
  const std::size_t keys = p.keys.size();
  [[maybe_unused]] const bool par = parallel_worth(keys, p.total);
  if (!leading || keys == 0) {
    std::fill(dense, dense + p.total, T(0));
#pragma omp parallel if (par)
    {
      std::vector<std::size_t> pos, fidx;
#pragma omp for schedule(static)
      for (std::size_t k = 0; k < keys; ++k) {
        for_each_run_of_key(p, lay, p.keys[k], pos, fidx,
                            [&](std::size_t d, std::size_t c, std::size_t n) { copy_run(dense + d, compact + c, n); });
      }
    }
    return;
  }
  const std::size_t slab = p.key_modes.empty() ? p.total : lay.strides[p.key_modes.back()];
  auto slab_of = [&](std::size_t k) {
    std::size_t s = 0;
    for (std::size_t d = 0; d < p.key_modes.size(); ++d) s += p.keys[k].index[d] * lay.strides[d];
    return s;
  };
  // Slabs of a few KiB and more are built in a buffer in cache and streamed out.
  const bool stream = streams_past_caches() && slab * sizeof(T) >= 4096 && slab * sizeof(T) <= (std::size_t{1} << 20);
#pragma omp parallel if (par)
  {
    std::vector<std::size_t> pos, fidx;
    std::vector<T> buffer(stream ? slab : 0);
#pragma omp for schedule(static)
    for (std::size_t k = 0; k < keys; ++k) {
      const std::size_t begin = slab_of(k);
      const std::size_t from = k == 0 ? 0 : slab_of(k - 1) + slab;    // the slabs of keys with nothing before it
      const std::size_t to = k + 1 == keys ? p.total : begin + slab;  // the last key zeroes the rest
      if (!stream) {
        std::fill(dense + from, dense + to, T(0));
        for_each_run_of_key(p, lay, p.keys[k], pos, fidx,
                            [&](std::size_t d, std::size_t c, std::size_t n) { copy_run(dense + d, compact + c, n); });
        continue;
      }
      std::fill(buffer.begin(), buffer.end(), T(0));
      for_each_run_of_key(p, lay, p.keys[k], pos, fidx, [&](std::size_t d, std::size_t c, std::size_t n) {
        copy_run(buffer.data() + (d - begin), compact + c, n);
      });
      auto bytes = [](T* at) { return reinterpret_cast<char*>(at); };
      stream_bytes(bytes(dense + from), nullptr, (begin - from) * sizeof(T));
      stream_bytes(bytes(dense + begin), reinterpret_cast<const char*>(buffer.data()), slab * sizeof(T));
      stream_bytes(bytes(dense + begin + slab), nullptr, (to - begin - slab) * sizeof(T));
    }
  }
}

/// The allowed elements of a dense tensor, as a compact buffer (keys in parallel).
template <class T>
void gather(const SparsePattern& p, const T* dense, T* compact) {
  const RunLayout lay(p);
  const std::size_t keys = p.keys.size();
#pragma omp parallel if (parallel_worth(keys, p.allowed))
  {
    std::vector<std::size_t> pos, fidx;
#pragma omp for schedule(static)
    for (std::size_t k = 0; k < keys; ++k) {
      for_each_run_of_key(p, lay, p.keys[k], pos, fidx,
                          [&](std::size_t d, std::size_t c, std::size_t n) { copy_run(compact + c, dense + d, n); });
    }
  }
}

bool same_layout(const OpNode& a, const OpNode& b) {
  if (!a.compact || !b.compact || a.labels != b.labels) return false;
  const SparsePattern& p = *a.pattern;
  const SparsePattern& q = *b.pattern;
  if (&p == &q) return true;
  if (p.key_modes != q.key_modes || p.row_modes != q.row_modes || p.free_modes != q.free_modes ||
      p.extents != q.extents || p.allowed != q.allowed || p.keys.size() != q.keys.size()) {
    return false;
  }
  for (std::size_t k = 0; k < p.keys.size(); ++k) {
    if (p.keys[k].index != q.keys[k].index || p.keys[k].domains != q.keys[k].domains) return false;
  }
  return true;
}


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
    if (!node_.compact) {
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
  std::fill(out, out + (node.compact ? node.elements : node.size()), T(0));
  std::vector<std::size_t> target(node.labels.size(), 0), key;
  for_each_element(*operand.pattern, [&](const std::vector<std::size_t>& index, std::size_t c) {
    if (!node.compact) {
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
    if (!lead.compact || lead.labels.size() != space.size() || !zero_with(params, k)) continue;
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

// ---- per-key gathered products ----------------------------------------------------------

/// One operand (or the result) of a sparse product, as the per-key loop reads it.
template <class T>
struct Side {
  const OpNode* node = nullptr;
  const T* data = nullptr;
  std::vector<std::size_t> strides;        // dense strides (when not compact)
  const SparsePattern* pattern = nullptr;  // product pattern whose key modes lie in the key
  bool compact = false;
  std::vector<std::size_t> key_pick;      // for each key mode of the pattern: its place in the key
  std::vector<int> key_of_label;          // for each label: its place in the key, or -1
  std::vector<std::size_t> free_strides;  // compact: stride of each mode in the block, free modes
};

template <class T>
void prepare(Side<T>& s, const std::vector<std::string>& key) {
  const OpNode& n = *s.node;
  s.strides = dense_strides(n.extents);
  s.key_of_label.assign(n.labels.size(), -1);
  for (std::size_t d = 0; d < n.labels.size(); ++d) {
    const auto at = std::find(key.begin(), key.end(), n.labels[d]) - key.begin();
    if (static_cast<std::size_t>(at) < key.size()) s.key_of_label[d] = static_cast<int>(at);
  }
  const SparsePattern* p = n.pattern.get();
  if (p && p->product) {
    bool inside = true;
    for (std::size_t d : p->key_modes) inside = inside && s.key_of_label[d] >= 0;
    if (inside) {
      s.pattern = p;
      for (std::size_t d : p->key_modes) s.key_pick.push_back(static_cast<std::size_t>(s.key_of_label[d]));
      s.free_strides.assign(n.labels.size(), 0);
      std::size_t stride = 1;
      for (std::size_t i = p->free_modes.size(); i-- > 0;) {
        s.free_strides[p->free_modes[i]] = stride;
        stride *= p->extents[p->free_modes[i]];
      }
    }
  }
}

struct RowKey {
  std::ptrdiff_t c = 0;   // the key's row of the result
  std::size_t begin = 0;  // its offsets in bn_all and cn_all
  std::size_t count = 0;
  bool dense_c = false;  // the result's offsets are 0, 1, 2, ...: cn_all holds none for it
};
template <class T>
struct RowOfB {
  T a = 0;                // alpha times the element of a
  std::ptrdiff_t b = 0;   // the row of b it multiplies
  std::uint32_t key = 0;  // in row_keys
};

/// Per-thread buffers of the per-key loop.
template <class T>
struct Work {
  std::vector<std::size_t> index;
  std::vector<std::vector<std::size_t>> domain;  // by label of the problem
  std::vector<char> restricted;
  std::vector<std::size_t> tmp, row_stride;
  std::vector<const Offsets*> list;
  std::vector<Offsets> offsets;  // by side and label
  Offsets am, as, bs, bn, cm, cn, next;
  std::vector<T> ag, bg, cg;
  // Keys whose product is a row times a matrix (one row of a): each row of b they read,
  // run grouped by where it lies in b, so that a row of b is read from cache by every key
  // that needs it (scattered domains otherwise miss the cache on nearly every element).
  std::vector<RowKey> row_keys;
  std::vector<RowOfB<T>> rows, sorted;
  Offsets bn_all, cn_all;
  std::vector<std::int32_t> bn32;
  bool narrow = true;
  std::vector<std::uint32_t> start;
  // The pending group of keys with equal offsets: (base of a, base of c) of each key, the
  // base of b they share, and their offsets.
  std::vector<std::pair<std::ptrdiff_t, std::ptrdiff_t>> group;
  std::ptrdiff_t group_b = 0;
  Offsets gam, gas, gbs, gbn, gcm, gcn;
};

/// c[y] += a * b[idx[y]], y < n: the inner loop of a row of b times a key's domain.
template <class T>
void gather_axpy_scalar(T* __restrict c, T a, const T* __restrict b, const std::int32_t* __restrict idx,
                        std::size_t n) {
  for (std::size_t y = 0; y < n; ++y) c[y] += a * b[idx[y]];
}

template <class T>
void gather_axpy(T* c, T a, const T* b, const std::int32_t* idx, std::size_t n) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    gather_axpy_simd(c, a, b, idx, n);  // the row of b gathered a vector at a time
  } else {
    gather_axpy_scalar(c, a, b, idx, n);
  }
}

/// The per-key loop's buffers of the calling thread, kept between calls (OpenMP's threads
/// persist): allocating the lists of rows anew each time cost more in page faults than the
/// sweep over them. Larger than `keep` bytes, they are given back after use.
template <class T>
Work<T>& thread_work() {
  thread_local Work<T> w;
  w.rows.clear();
  w.row_keys.clear();
  w.bn_all.clear();
  w.cn_all.clear();
  return w;
}

template <class T>
void trim(Work<T>& w) {
  constexpr std::size_t keep = std::size_t{32} << 20;
  if (w.rows.capacity() * sizeof(RowOfB<T>) > keep) {
    w.rows = {};
    w.sorted = {};
    w.bn_all = {};
    w.cn_all = {};
    w.bn32 = {};
  }
}

constexpr unsigned kBlockShift = 11;  // 2048 elements of b per block of the sweep

/// Sorts the recorded rows by the block of b they read (a counting sort into a copy read in
/// order; w.start[k] is then the end of block k) and narrows the offsets into rows of b to
/// 32 bits where they fit (the gathers take them).
template <class T>
void sort_rows(Work<T>& w, std::size_t b_elements) {
  const std::size_t blocks = (b_elements >> kBlockShift) + 1;
  // w.start[k + 1] counts the rows in block k (counted as they were recorded).
  w.start.resize(blocks + 1, 0);
  for (std::size_t k = 0; k < blocks; ++k) w.start[k + 1] += w.start[k];
  w.sorted.resize(w.rows.size());
  for (const RowOfB<T>& r : w.rows) w.sorted[w.start[static_cast<std::size_t>(r.b) >> kBlockShift]++] = r;
  w.narrow = true;
  for (std::ptrdiff_t o : w.bn_all) w.narrow = w.narrow && o >= 0 && o <= INT32_MAX;
  if (w.narrow) w.bn32.assign(w.bn_all.begin(), w.bn_all.end());
}

/// c[key's row][cn] += a * b[row + bn] for the sorted rows of w in blocks [lo, hi) of b;
/// the next block of b is prefetched while one is swept.
template <class T>
void sweep_blocks(const Work<T>& w, const T* b, std::size_t b_elements, T* c, std::size_t lo, std::size_t hi) {
  if (w.sorted.empty()) return;
  std::size_t at = lo == 0 ? 0 : w.start[lo - 1];
  for (std::size_t blk = lo; blk < hi; ++blk) {
    const std::size_t end = w.start[blk];
    if (at == end) continue;
    // The next block's cache lines, a few per row swept here, the rest after: spread among
    // the gathers rather than all at once (which stalls on the line-fill buffers).
    constexpr std::size_t line = 64 / sizeof(T);
    const std::size_t next = (blk + 1) << kBlockShift;
    const std::size_t next_end = std::min(b_elements, next + (std::size_t{1} << kBlockShift));
    std::size_t ahead = next;
    const std::size_t per_row = ((next_end > next ? next_end - next : 0) / line) / (end - at) + 1;
    for (; at < end; ++at) {
      for (std::size_t f = 0; f < per_row && ahead < next_end; ++f, ahead += line) __builtin_prefetch(b + ahead);
      const RowOfB<T>& r = w.sorted[at];
      const RowKey& k = w.row_keys[r.key];
      const T* brow = b + r.b;
      T* crow = c + k.c;
      if (k.dense_c && w.narrow) {
        gather_axpy(crow, r.a, brow, w.bn32.data() + k.begin, k.count);
        continue;
      }
      const std::ptrdiff_t* bn = w.bn_all.data() + k.begin;
      if (k.dense_c) {
        for (std::size_t y = 0; y < k.count; ++y) crow[y] += r.a * brow[bn[y]];
        continue;
      }
      const std::ptrdiff_t* cn = w.cn_all.data() + k.begin;
      for (std::size_t y = 0; y < k.count; ++y) crow[cn[y]] += r.a * brow[bn[y]];
    }
    for (; ahead < next_end; ahead += line) __builtin_prefetch(b + ahead);
  }
}

void intersect_into(std::vector<std::size_t>& domain, const std::vector<std::size_t>& with,
                    std::vector<std::size_t>& tmp) {
  tmp.clear();
  std::set_intersection(domain.begin(), domain.end(), with.begin(), with.end(), std::back_inserter(tmp));
  domain.swap(tmp);
}

void cartesian(const std::vector<const Offsets*>& parts, Offsets& out, Offsets& next) {
  if (parts.size() == 1) {
    out = *parts[0];
    return;
  }
  out.assign(1, 0);
  for (const Offsets* part : parts) {
    const std::size_t n = out.size();
    next.clear();
    next.reserve(n * part->size());
    for (std::size_t i = 0; i < n; ++i) {
      for (std::ptrdiff_t o : *part) next.push_back(out[i] + o);
    }
    out.swap(next);
  }
}

/// Whether the product's labels allow the per-key loop: every non-key label is on the
/// result and one operand, or on both operands and not the result.
bool loopable(const OpNode& c, const OpNode& a, const OpNode& b, const std::vector<std::string>& key) {
  auto has = [](const OpNode& n, const std::string& l) {
    return std::find(n.labels.begin(), n.labels.end(), l) != n.labels.end();
  };
  for (const OpNode* n : {&a, &b, &c}) {
    for (const std::string& l : n->labels) {
      if (std::find(key.begin(), key.end(), l) != key.end()) continue;
      const int count = (has(a, l) ? 1 : 0) + (has(b, l) ? 1 : 0) + (has(c, l) ? 1 : 0);
      if (count != 2) return false;
    }
  }
  return true;
}

template <class T>
std::optional<KernelCount> sparse_contract(const ContractParams& params, const KernelArgs<T>& args,
                                           std::vector<T>& expanded_a, std::vector<T>& expanded_b) {
  const OpNode& cn = args.node;
  const OpNode* nodes[3] = {&cn, args.operand_nodes[0], args.operand_nodes[1]};
  // The key: the result's pattern's key, else an operand's.
  const SparsePattern* provider = nullptr;
  const OpNode* provider_node = nullptr;
  for (const OpNode* n : nodes) {
    if (!provider && n->pattern && n->pattern->product) {
      provider = n->pattern.get();
      provider_node = n;
    }
  }
  std::vector<std::string> key;
  if (provider) {
    for (std::size_t d : provider->key_modes) key.push_back(provider_node->labels[d]);
  }
  Side<T> sides[3];
  T* c = args.out.data;
  sides[0].node = &cn;
  sides[0].compact = cn.compact;
  for (int k = 1; k < 3; ++k) {
    sides[k].node = nodes[k];
    sides[k].data = args.operands[static_cast<std::size_t>(k - 1)].data;
    sides[k].compact = nodes[k]->compact;
  }
  for (Side<T>& s : sides) prepare(s, key);
  // A compact operand whose key is not within the loop's key is read expanded.
  std::vector<T>* expanded[3] = {nullptr, &expanded_a, &expanded_b};
  for (int k = 1; k < 3; ++k) {
    Side<T>& s = sides[k];
    if (s.compact && !s.pattern) {
      expanded[k]->resize(s.node->size());
      expand(*s.node->pattern, s.data, expanded[k]->data());
      s.data = expanded[k]->data();
      s.compact = false;
    }
  }
  if (!provider || !loopable(cn, *nodes[1], *nodes[2], key) || (sides[0].compact && !sides[0].pattern)) {
    return std::nullopt;  // the expanded, dense product runs instead
  }
  // Labels of the problem: the result's, then the operands' others.
  std::vector<std::string> labels;
  std::vector<std::size_t> extent;
  for (const OpNode* n : nodes) {
    for (std::size_t d = 0; d < n->labels.size(); ++d) {
      if (std::find(labels.begin(), labels.end(), n->labels[d]) == labels.end()) {
        labels.push_back(n->labels[d]);
        extent.push_back(n->extents[d]);
      }
    }
  }
  auto label_id = [&](const std::string& l) {
    return static_cast<std::size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin());
  };
  auto in = [](const OpNode& n, const std::string& l) {
    return std::find(n.labels.begin(), n.labels.end(), l) != n.labels.end();
  };
  auto is_key = [&](const std::string& l) { return std::find(key.begin(), key.end(), l) != key.end(); };
  std::vector<std::size_t> m_labels, n_labels, s_labels;  // ids, in the order of A, B, A
  for (const std::string& l : nodes[1]->labels) {
    if (is_key(l)) continue;
    (in(cn, l) ? m_labels : s_labels).push_back(label_id(l));
  }
  for (const std::string& l : nodes[2]->labels) {
    if (!is_key(l) && in(cn, l)) n_labels.push_back(label_id(l));
  }
  std::vector<std::vector<std::size_t>> full(labels.size());
  for (std::size_t l = 0; l < labels.size(); ++l) {
    full[l].resize(extent[l]);
    std::iota(full[l].begin(), full[l].end(), std::size_t{0});
  }
  std::vector<char> key_label(labels.size());  // per label of the problem: a key label
  for (std::size_t l = 0; l < labels.size(); ++l) key_label[l] = is_key(labels[l]) ? 1 : 0;
  std::vector<std::size_t> id_of[3];  // per side and mode: the label of the problem
  for (int i = 0; i < 3; ++i) {
    for (const std::string& l : nodes[i]->labels) id_of[i].push_back(label_id(l));
  }
  bool key_in_result = true;
  for (const std::string& l : key) key_in_result = key_in_result && in(cn, l);

  const std::size_t total = cn.compact ? cn.elements : cn.size();
  const T alpha = static_cast<T>(params.alpha);
  const std::size_t b_elements = sides[2].compact ? nodes[2]->elements : nodes[2]->size();
  const std::size_t keys = provider->keys.size();
  bool shared_b = true;  // b carries no key label: every key reads the same b
  for (int kp : sides[2].key_of_label) shared_b = shared_b && kp < 0;
  const auto threads = static_cast<std::size_t>(omp_in_parallel() ? 1 : omp_get_max_threads());
  const bool par = key_in_result && threads > 1 && keys > 1;
  std::optional<SingleThreadedBlas> single;
  if (par) single.emplace();
  std::exception_ptr error;
  double flops = 0;
  std::size_t calls = 0;
#pragma omp parallel if (par) reduction(+ : flops, calls)
  {
    Work<T>& w = thread_work<T>();
    w.domain.resize(labels.size());
    std::vector<const std::vector<std::size_t>*> domain(labels.size());  // the key's domain of each label
    w.restricted.resize(labels.size());
    w.offsets.resize(3 * labels.size());
    w.group.clear();
    w.start.assign((b_elements >> kBlockShift) + 2, 0);
    // Runs the pending group of keys: one key whose product is a row times a matrix is
    // recorded (run row by row of b by sweep_blocks); otherwise one GEMM over the rows of all
    // the group's keys, b read in place where its block is a strided matrix.
    auto run_group = [&](Work<T>& g) {
      if (g.group.empty()) return;
      const std::size_t G = g.group.size(), M = g.gam.size(), S = g.gas.size(), N = g.gbn.size();
      const T* a = sides[1].data;
      const T* b = sides[2].data + g.group_b;
      calls += 1;
      if (G == 1 && M == 1) {
        RowKey& rk = g.row_keys.emplace_back();
        rk.c = g.group[0].second + g.gcm[0];
        rk.begin = g.bn_all.size();
        rk.count = N;
        rk.dense_c = N > 0 && g.gcn[N - 1] == static_cast<std::ptrdiff_t>(N - 1) && g.gcn[0] == 0;
        g.bn_all.insert(g.bn_all.end(), g.gbn.begin(), g.gbn.end());
        g.cn_all.resize(rk.begin);  // cn_all runs beside bn_all
        if (rk.dense_c) {
          g.cn_all.resize(rk.begin + N);
        } else {
          g.cn_all.insert(g.cn_all.end(), g.gcn.begin(), g.gcn.end());
        }
        const auto slot = static_cast<std::uint32_t>(g.row_keys.size() - 1);
        for (std::size_t x = 0; x < S; ++x) {
          const std::ptrdiff_t at = g.group[0].first + g.gam[0] + g.gas[x];
          if (a[at] != T(0)) {
            g.rows.push_back({alpha * a[at], g.group_b + g.gbs[x], slot});
            ++g.start[(static_cast<std::size_t>(g.rows.back().b) >> kBlockShift) + 1];
          }
        }
        g.group.clear();
        return;
      }
      const std::size_t rows = G * M;
      g.ag.resize(rows * S);
      g.cg.resize(rows * N);
      for (std::size_t e = 0; e < G; ++e) {
        const T* ae = a + g.group[e].first;
        for (std::size_t x = 0; x < M; ++x) {
          T* to = g.ag.data() + (e * M + x) * S;
          for (std::size_t y = 0; y < S; ++y) to[y] = ae[g.gam[x] + g.gas[y]];
        }
      }
      // b in place when its rows are equally spaced and its columns contiguous.
      bool in_place = N > 0 && S > 0;
      for (std::size_t y = 0; y < N && in_place; ++y) in_place = g.gbn[y] == g.gbn[0] + static_cast<std::ptrdiff_t>(y);
      const std::ptrdiff_t ld = S > 1 ? g.gbs[1] - g.gbs[0] : static_cast<std::ptrdiff_t>(N);
      for (std::size_t x = 1; x < S && in_place; ++x) in_place = g.gbs[x] - g.gbs[x - 1] == ld;
      in_place = in_place && ld >= static_cast<std::ptrdiff_t>(N);
      const T* bm = nullptr;
      if (in_place) {
        bm = b + g.gbs[0] + g.gbn[0];
      } else {
        g.bg.resize(S * N);
        for (std::size_t x = 0; x < S; ++x) {
          for (std::size_t y = 0; y < N; ++y) g.bg[x * N + y] = b[g.gbs[x] + g.gbn[y]];
        }
        bm = g.bg.data();
      }
      contraction::Geometry geo;
      geo.m = rows;
      geo.n = N;
      geo.k = S;
      geo.a_m = static_cast<std::ptrdiff_t>(S);
      geo.a_k = 1;
      geo.b_k = in_place ? ld : static_cast<std::ptrdiff_t>(N);
      geo.b_n = 1;
      geo.c_m = static_cast<std::ptrdiff_t>(N);
      geo.c_n = 1;
      contraction::gemm(geo, alpha, g.ag.data(), bm, T(0), g.cg.data());
      for (std::size_t e = 0; e < G; ++e) {
        T* ce = c + g.group[e].second;
        for (std::size_t x = 0; x < M; ++x) {
          T* crow = ce + g.gcm[x];
          const T* from = g.cg.data() + (e * M + x) * N;
          for (std::size_t y = 0; y < N; ++y) crow[g.gcn[y]] += from[y];
        }
      }
      g.group.clear();
    };
    constexpr std::size_t chunk = std::size_t{1} << 16;
#pragma omp for schedule(static)
    for (std::size_t at = 0; at < total; at += chunk) std::fill(c + at, c + std::min(total, at + chunk), T(0));
#pragma omp for schedule(static) nowait
    for (std::size_t k = 0; k < keys; ++k) {
      try {
        const SparsePattern::Key& pk = provider->keys[k];
        // The key's values by key label.
        const std::vector<std::size_t>& s = pk.index;
        const SparsePattern::Key* found[3] = {nullptr, nullptr, nullptr};
        bool zero = false;
        for (int i = 0; i < 3 && !zero; ++i) {
          const Side<T>& side = sides[i];
          if (!side.pattern) continue;
          w.index.resize(side.key_pick.size());
          for (std::size_t d = 0; d < side.key_pick.size(); ++d) w.index[d] = s[side.key_pick[d]];
          found[i] = side.pattern == provider ? &pk : side.pattern->find(w.index);
          zero = found[i] == nullptr;
        }
        if (zero) continue;
        std::fill(w.restricted.begin(), w.restricted.end(), 0);
        for (int i = 0; i < 3 && !zero; ++i) {
          if (!found[i]) continue;
          const Side<T>& side = sides[i];
          for (std::size_t r = 0; r < side.pattern->row_modes.size(); ++r) {
            const std::size_t mode = side.pattern->row_modes[r];
            const std::vector<std::size_t>& dom = found[i]->domains[r];
            const int kp = side.key_of_label[mode];
            if (kp >= 0) {  // a key label the side restricts: its value must be allowed
              zero = !std::binary_search(dom.begin(), dom.end(), s[static_cast<std::size_t>(kp)]);
              continue;
            }
            const std::size_t l = id_of[i][mode];
            if (!w.restricted[l]) {
              domain[l] = &dom;  // read in place unless another side restricts it too
              w.restricted[l] = 1;
            } else {
              if (domain[l] != &w.domain[l]) w.domain[l] = *domain[l];
              intersect_into(w.domain[l], dom, w.tmp);
              domain[l] = &w.domain[l];
            }
          }
        }
        if (zero) continue;
        for (std::size_t l = 0; l < labels.size(); ++l) {
          if (!w.restricted[l] && !key_label[l]) domain[l] = &full[l];
          if (!key_label[l] && domain[l]->empty()) zero = true;
        }
        if (zero) continue;
        // Offsets of each side along each of its non-key labels, and its base.
        std::ptrdiff_t base[3] = {0, 0, 0};
        for (int i = 0; i < 3; ++i) {
          const Side<T>& side = sides[i];
          const OpNode& n = *side.node;
          const bool blocks = side.compact;
          std::vector<std::size_t>& row_stride = w.row_stride;
          if (blocks) {
            const SparsePattern& p = *side.pattern;
            row_stride.assign(p.row_modes.size(), p.free_size);
            for (std::size_t r = p.row_modes.size(); r-- > 1;) {
              row_stride[r - 1] = row_stride[r] * found[i]->domains[r].size();
            }
            base[i] = static_cast<std::ptrdiff_t>(found[i]->offset);
          }
          for (std::size_t d = 0; d < n.labels.size(); ++d) {
            const int kp = side.key_of_label[d];
            const std::size_t l = id_of[i][d];
            Offsets& off = w.offsets[static_cast<std::size_t>(i) * labels.size() + l];
            std::size_t stride = blocks ? side.free_strides[d] : side.strides[d];
            const std::vector<std::size_t>* within = nullptr;  // the side's domain (a row mode)
            if (blocks) {
              const auto& rows = side.pattern->row_modes;
              const auto r = static_cast<std::size_t>(std::find(rows.begin(), rows.end(), d) - rows.begin());
              if (r < rows.size()) {
                within = &found[i]->domains[r];
                stride = row_stride[r];
              } else if (std::count(side.pattern->key_modes.begin(), side.pattern->key_modes.end(), d)) {
                continue;  // selects the block
              }
            }
            if (kp >= 0) {
              const std::size_t v = s[static_cast<std::size_t>(kp)];
              const std::size_t at =
                  within
                      ? static_cast<std::size_t>(std::lower_bound(within->begin(), within->end(), v) - within->begin())
                      : v;
              base[i] += static_cast<std::ptrdiff_t>(at * stride);
              continue;
            }
            const std::vector<std::size_t>& dom = *domain[l];
            off.resize(dom.size());
            if (within) {  // positions of the domain's values in the side's (a superset)
              std::size_t p = 0;
              for (std::size_t t = 0; t < dom.size(); ++t) {
                while ((*within)[p] < dom[t]) ++p;
                off[t] = static_cast<std::ptrdiff_t>(p * stride);
              }
            } else {
              for (std::size_t t = 0; t < dom.size(); ++t) off[t] = static_cast<std::ptrdiff_t>(dom[t] * stride);
            }
          }
        }
        auto parts = [&](int side, const std::vector<std::size_t>& ids, Offsets& out) {
          w.list.clear();
          for (std::size_t l : ids) w.list.push_back(&w.offsets[static_cast<std::size_t>(side) * labels.size() + l]);
          cartesian(w.list, out, w.next);
        };
        parts(1, m_labels, w.am);
        parts(1, s_labels, w.as);
        parts(2, s_labels, w.bs);
        parts(2, n_labels, w.bn);
        // The result's M and N offsets, in A's and B's label order.
        parts(0, m_labels, w.cm);
        parts(0, n_labels, w.cn);
        const std::size_t M = w.am.size(), S = w.as.size(), N = w.bn.size();
        flops += 2.0 * static_cast<double>(M) * static_cast<double>(S) * static_cast<double>(N);
        // Keys with equal domains that read the same block of b join one GEMM (a group).
        const bool joins = shared_b && !w.group.empty() && base[2] == w.group_b && w.am == w.gam && w.as == w.gas &&
                           w.bs == w.gbs && w.bn == w.gbn && w.cm == w.gcm && w.cn == w.gcn;
        if (joins) {
          w.group.push_back({base[1], base[0]});
          continue;
        }
        run_group(w);
        w.group.push_back({base[1], base[0]});
        w.group_b = base[2];
        w.gam.swap(w.am);
        w.gas.swap(w.as);
        w.gbs.swap(w.bs);
        w.gbn.swap(w.bn);
        w.gcm.swap(w.cm);
        w.gcn.swap(w.cn);
      } catch (...) {
#pragma omp critical(tenex_sparse_error)
        if (!error) error = std::current_exception();
      }
    }
    const std::size_t blocks = (b_elements >> kBlockShift) + 1;
    try {
      run_group(w);
      sort_rows(w, b_elements);
    } catch (...) {
#pragma omp critical(tenex_sparse_error)
      if (!error) error = std::current_exception();
    }
    try {
      sweep_blocks(w, sides[2].data, b_elements, c, 0, blocks);
    } catch (...) {
#pragma omp critical(tenex_sparse_error)
      if (!error) error = std::current_exception();
    }
    w.rows.clear();
    w.row_keys.clear();
    trim(w);
  }
  if (error) std::rethrow_exception(error);
  return KernelCount{flops, calls};
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
  if (node.kind == OpKind::mask && node.compact) {
    const OpNode& in = *args.operand_nodes[0];
    if (same_layout(node, in)) {
      std::memcpy(args.out.data, args.operands[0].data, node.elements * sizeof(T));
      return {0, 1};
    }
    if (!in.compact && in.labels == node.labels) {
      gather(*node.pattern, args.operands[0].data, args.out.data);
      return {0, 1};
    }
  }
  if (node.kind == OpKind::output && args.operand_nodes[0]->compact) {
    const std::vector<std::string>& names = node.get<OutputParams>().operand_labels;
    if (names == node.labels) {
      expand(*args.operand_nodes[0]->pattern, args.operands[0].data, args.out.data);
    } else {
      scatter_sum(*args.operand_nodes[0], args.operands[0].data, names, node, args.out.data);
    }
    return {0, 1};
  }
  if (node.kind == OpKind::reduce && args.operand_nodes[0]->compact) {
    scatter_sum(*args.operand_nodes[0], args.operands[0].data, args.operand_nodes[0]->labels, node, args.out.data);
    return {static_cast<double>(args.operand_nodes[0]->elements), 1};
  }
  if (node.kind == OpKind::fused && !node.compact) {
    if (auto count = fused_sum_over_allowed(args)) return *count;
  }
  const bool pointwise = node.kind == OpKind::mask || node.kind == OpKind::scale || node.kind == OpKind::add ||
                         node.kind == OpKind::subtract || node.kind == OpKind::divide ||
                         (node.kind == OpKind::fused && node.get<FusedParams>().reduce == ReduceOp::sum);
  std::vector<std::vector<T>> gathered;
  std::vector<const T*> in;
  if (node.compact && n_ops > 0 && pointwise && operands_at_allowed(args, gathered, in)) {
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
    if (!op.compact) continue;
    expanded[k].resize(op.size());
    expand(*op.pattern, args.operands[k].data, expanded[k].data());
    dense_args.operands[k] = View<const T>{expanded[k].data(), op.size(), Device::host};
  }
  std::vector<T> out;
  if (node.compact) {
    out.resize(node.size());
    dense_args.out = View<T>{out.data(), node.size(), Device::host};
  }
  KernelCount count = dense.run(dense_args);
  if (node.compact) gather(*node.pattern, out.data(), args.out.data);
  return count;
}

#define TENEX_INSTANTIATE_SPARSE(T) template KernelCount run_sparse<T>(Backend<T>&, const KernelArgs<T>&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_SPARSE)
#undef TENEX_INSTANTIATE_SPARSE

}  // namespace tenex::detail::cpu
