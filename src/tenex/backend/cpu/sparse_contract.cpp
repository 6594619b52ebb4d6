// Sparse products key by key (sparse_contract.hpp): the plan's pairing at each key
// (sparse_contract_plan.cpp), then the kernel: keys with equal offsets that read one block of b
// run as one GEMM over their gathered rows; a key whose product is a row times a matrix is
// recorded instead, and all such rows are swept at the end in the order they lie in b.
#include "tenex/backend/cpu/sparse_contract.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/compact_layout.hpp"
#include "tenex/backend/cpu/gather_kernel.hpp"
#include "tenex/backend/cpu/gemm_call.hpp"
#include "tenex/backend/cpu/single_threaded_blas.hpp"
#include "tenex/backend/cpu/sparse_contract_plan.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu::sparse {
namespace {

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
  KeyScratch pairing;  // the key's blocks and offsets (pair_blocks)
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

/// What the groups of a loop read and write: a and b (expanded where the plan says), alpha, c.
template <class T>
struct Operands {
  const T* a = nullptr;
  const T* b = nullptr;
  T alpha{};
  T* c = nullptr;
};

/// The pending group as one key whose product is a row of a times a matrix of b: its row of c
/// and columns of b recorded, and each nonzero element of its row of a with the row of b it
/// multiplies (run row by row of b by sweep_blocks).
template <class T>
void record_row_key(Work<T>& g, const T* a, T alpha) {
  const std::size_t S = g.gas.size(), N = g.gbn.size();
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
}

/// The group's block of b as the GEMM reads it (S x N): in place when its rows are equally
/// spaced and its columns contiguous (`ld` its rows' spacing), else gathered into g.bg.
template <class T>
const T* b_matrix(Work<T>& g, const T* b, std::ptrdiff_t& ld) {
  const std::size_t S = g.gas.size(), N = g.gbn.size();
  bool in_place = N > 0 && S > 0;
  for (std::size_t y = 0; y < N && in_place; ++y) in_place = g.gbn[y] == g.gbn[0] + static_cast<std::ptrdiff_t>(y);
  ld = S > 1 ? g.gbs[1] - g.gbs[0] : static_cast<std::ptrdiff_t>(N);
  for (std::size_t x = 1; x < S && in_place; ++x) in_place = g.gbs[x] - g.gbs[x - 1] == ld;
  in_place = in_place && ld >= static_cast<std::ptrdiff_t>(N);
  if (in_place) return b + g.gbs[0] + g.gbn[0];
  ld = static_cast<std::ptrdiff_t>(N);
  g.bg.resize(S * N);
  for (std::size_t x = 0; x < S; ++x) {
    for (std::size_t y = 0; y < N; ++y) g.bg[x * N + y] = b[g.gbs[x] + g.gbn[y]];
  }
  return g.bg.data();
}

/// The pending group as one GEMM over the rows of all its keys: their rows of a gathered
/// into g.ag, times the block of b, into g.cg, added to each key's elements of c.
template <class T>
void gemm_group(Work<T>& g, const T* a, const T* b, T alpha, T* c) {
  const std::size_t G = g.group.size(), M = g.gam.size(), S = g.gas.size(), N = g.gbn.size();
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
  std::ptrdiff_t ld = 0;
  const T* bm = b_matrix(g, b, ld);
  contraction::Geometry geo;
  geo.m = rows;
  geo.n = N;
  geo.k = S;
  geo.a_m = static_cast<std::ptrdiff_t>(S);
  geo.a_k = 1;
  geo.b_k = ld;
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
}

/// Runs the pending group of keys: one key whose product is a row times a matrix is
/// recorded (run row by row of b by sweep_blocks); otherwise one GEMM over the rows of all
/// the group's keys, b read in place where its block is a strided matrix. Returns the calls
/// it counts (1, none for an empty group).
template <class T>
std::size_t run_group(Work<T>& g, const Operands<T>& x) {
  if (g.group.empty()) return 0;
  if (g.group.size() == 1 && g.gam.size() == 1) {
    record_row_key(g, x.a, x.alpha);
  } else {
    gemm_group(g, x.a, x.b + g.group_b, x.alpha, x.c);
  }
  g.group.clear();
  return 1;
}

/// Keeps an exception of the loop's threads, the first one.
void keep_error(std::exception_ptr& error) {
#pragma omp critical(tenex_sparse_error)
  if (!error) error = std::current_exception();
}

/// This thread's share of the keys (an OpenMP loop within the caller's parallel region): each
/// key's blocks paired, then joined to the pending group where it reads the same block of b
/// with the same offsets, else the pending group run and a new one started with it.
template <class T>
void run_keys(const KeyLoop& loop, const Operands<T>& x, Work<T>& w, double& flops, std::size_t& calls,
              std::exception_ptr& error) {
  KeyScratch& pk = w.pairing;
  const std::size_t keys = loop.provider->keys.size();
#pragma omp for schedule(static) nowait
  for (std::size_t k = 0; k < keys; ++k) {
    try {
      std::ptrdiff_t base[3] = {0, 0, 0};
      if (!pair_blocks(loop, loop.provider->keys[k], pk, base)) continue;
      const std::size_t M = pk.am.size(), S = pk.as.size(), N = pk.bn.size();
      flops += 2.0 * static_cast<double>(M) * static_cast<double>(S) * static_cast<double>(N);
      // Keys with equal domains that read the same block of b join one GEMM (a group).
      const bool joins = loop.shared_b && !w.group.empty() && base[2] == w.group_b && pk.am == w.gam &&
                         pk.as == w.gas && pk.bs == w.gbs && pk.bn == w.gbn && pk.cm == w.gcm && pk.cn == w.gcn;
      if (joins) {
        w.group.push_back({base[1], base[0]});
        continue;
      }
      calls += run_group(w, x);
      w.group.push_back({base[1], base[0]});
      w.group_b = base[2];
      w.gam.swap(pk.am);
      w.gas.swap(pk.as);
      w.gbs.swap(pk.bs);
      w.gbn.swap(pk.bn);
      w.gcm.swap(pk.cm);
      w.gcn.swap(pk.cn);
    } catch (...) {
      keep_error(error);
    }
  }
}

/// After this thread's keys: its last group run, then its recorded rows swept in b's order.
template <class T>
void finish_keys(const Operands<T>& x, std::size_t b_elements, Work<T>& w, std::size_t& calls,
                 std::exception_ptr& error) {
  const std::size_t blocks = (b_elements >> kBlockShift) + 1;
  try {
    calls += run_group(w, x);
    sort_rows(w, b_elements);
  } catch (...) {
    keep_error(error);
  }
  try {
    sweep_blocks(w, x.b, b_elements, x.c, 0, blocks);
  } catch (...) {
    keep_error(error);
  }
  w.rows.clear();
  w.row_keys.clear();
  trim(w);
}

/// Operands the plan reads expanded: their dense tensors, in `expanded_a` and `expanded_b`.
template <class T>
void expand_operands(const KeyLoop& loop, Operands<T>& x, std::vector<T>& expanded_a, std::vector<T>& expanded_b) {
  std::vector<T>* expanded[3] = {nullptr, &expanded_a, &expanded_b};
  const T** data[3] = {nullptr, &x.a, &x.b};
  for (int k = 1; k < 3; ++k) {
    const Side& s = loop.sides[k];
    if (!s.expanded) continue;
    expanded[k]->resize(s.node->size());
    expand(*s.node->pattern, *data[k], expanded[k]->data());
    *data[k] = expanded[k]->data();
  }
}

}  // namespace

template <class T>
std::optional<KernelCount> sparse_contract(const ContractParams& params, const KernelArgs<T>& args,
                                           std::vector<T>& expanded_a, std::vector<T>& expanded_b) {
  const OpNode& cn = args.node;
  const KeyLoop loop = key_loop(cn, *args.operand_nodes[0], *args.operand_nodes[1]);
  Operands<T> x{args.operands[0].data, args.operands[1].data, T{}, args.out.data};
  expand_operands(loop, x, expanded_a, expanded_b);
  if (!loop.runs) return std::nullopt;  // the expanded, dense product runs instead
  x.alpha = static_cast<T>(params.alpha);
  T* const c = x.c;
  const std::size_t total = cn.blocks() ? cn.elements : cn.size();
  const OpNode& bn = *args.operand_nodes[1];
  const std::size_t b_elements = loop.sides[2].compact ? bn.elements : bn.size();
  const std::size_t keys = loop.provider->keys.size();
  const auto threads = static_cast<std::size_t>(omp_in_parallel() ? 1 : omp_get_max_threads());
  const bool par = loop.key_in_result && threads > 1 && keys > 1;
  std::optional<SingleThreadedBlas> single;
  if (par) single.emplace();
  std::exception_ptr error;
  double flops = 0;
  std::size_t calls = 0;
#pragma omp parallel if (par) reduction(+ : flops, calls)
  {
    Work<T>& w = thread_work<T>();
    start_pairing(loop, w.pairing);
    w.group.clear();
    w.start.assign((b_elements >> kBlockShift) + 2, 0);
    constexpr std::size_t chunk = std::size_t{1} << 16;
#pragma omp for schedule(static)
    for (std::size_t at = 0; at < total; at += chunk) std::fill(c + at, c + std::min(total, at + chunk), T(0));
    run_keys(loop, x, w, flops, calls, error);
    finish_keys(x, b_elements, w, calls, error);
  }
  if (error) std::rethrow_exception(error);
  return KernelCount{flops, calls};
}

#define TENEX_INSTANTIATE_SPARSE_CONTRACT(T)                                                                           \
  template std::optional<KernelCount> sparse_contract<T>(const ContractParams&, const KernelArgs<T>&, std::vector<T>&, \
                                                         std::vector<T>&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_SPARSE_CONTRACT)
#undef TENEX_INSTANTIATE_SPARSE_CONTRACT

}  // namespace tenex::detail::cpu::sparse
