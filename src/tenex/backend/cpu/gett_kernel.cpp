// The GETT kernel (gett_kernel.hpp): c[M, N] = sum over K of small[M, K] big[K, N] for
// M <= kGettMost, on AVX-512, the large operand packed from its own strides a block at a time.
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tenex/backend/cpu/avx512_vec.hpp"
#include "tenex/backend/cpu/gett_kernel.hpp"
#include "tenex/backend/cpu/operand_offsets.hpp"
#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/backend/cpu/thread_partition.hpp"

namespace tenex::detail::cpu::contraction {
namespace {

// Values of K one block of the large operand holds at most: a strip of it ([kc][2 vectors],
// 32 KB of doubles) stays in the L1 while every panel runs over it.
constexpr std::size_t kBlockK = 256;
// Strips of N one block holds at most (a block of 512 KB at most, in the L2).
constexpr std::size_t kBlockStrips = 16;
// Rows of a panel at most: 12 rows of two vectors of sums, 24 of the 32 registers.
constexpr std::size_t kPanelRows = 12;

// How the problem is cut.
struct Blocking {
  int small = -1, big = -1;
  std::size_t m = 0, n = 0, k = 0;  // the small operand's free values, the large one's, K
  std::size_t rows = 0;             // of a panel: an even number up to kPanelRows
  std::size_t panels = 0;           // rows * panels >= m
  std::size_t kc = 0;               // values of K per block
  std::size_t nc = 0;               // values of N per block, whole strips
  std::size_t strip = 0;            // values of N per strip: two vectors
  std::size_t tasks = 0;            // blocks of N
  std::size_t per_thread = 0;       // elements of scratch: a block of big, then the sums
};

std::size_t ceil_div(std::size_t x, std::size_t y) { return (x + y - 1) / y; }

Blocking blocking(const Problem& p, std::size_t threads) {
  Blocking g;
  g.small = gett_small_operand(p);
  g.big = g.small == kA ? kB : kA;
  g.m = free_size(p, g.small);
  g.n = free_size(p, g.big);
  g.k = k_size(p);
  g.panels = ceil_div(g.m, kPanelRows);
  g.rows = round_up(ceil_div(g.m, g.panels), 2);
  g.kc = ceil_div(g.k, ceil_div(g.k, kBlockK));
  g.strip = 2 * (p.element_size == sizeof(float) ? Vec<float>::width : Vec<double>::width);
  const std::size_t strips = ceil_div(g.n, g.strip);
  std::size_t per_block = std::min(kBlockStrips, strips);
  // Four blocks per thread at least, where N has them, so that the threads end together.
  if (threads > 1) per_block = std::min(per_block, std::max<std::size_t>(1, ceil_div(strips, 4 * threads)));
  g.nc = per_block * g.strip;
  g.tasks = ceil_div(g.n, g.nc);
  g.per_thread = g.kc * g.nc + g.rows * g.panels * g.nc;
  return g;
}

// A run of the large operand's values that lie together in memory and in one strip.
struct Run {
  std::ptrdiff_t from = 0;  // offset in the operand, k aside
  std::size_t to = 0;       // offset in the packed block, k aside
  std::size_t length = 0;   // at most a strip
};

template <class T>
__attribute__((target("avx512f"))) void copy_run(const T* from, T* to, std::size_t length) {
  using X = Vec<T>;
  if (length >= X::width) {
    X::store(to, X::load(from));
    if (length > X::width) {
      const auto rest = lanes<T>(length - X::width);
      X::store(rest, to + X::width, X::load(rest, from + X::width));
    }
    return;
  }
  const auto part = lanes<T>(length);
  X::store(part, to, X::load(part, from));
}

// Sums of R rows and one strip over kc values of K: `strip` is [kc][2 vectors], `panel`
// [kc][R]; the sums come from `sums` (rows `ld` apart) unless `first`, and go back there.
template <class T, std::size_t R>
__attribute__((target("avx512f"))) void strip_kernel(const T* strip, const T* panel, std::size_t kc, T* sums,
                                                     std::size_t ld, bool first) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  typename X::V acc[R][2];
  for (std::size_t r = 0; r < R; ++r) {
    acc[r][0] = first ? X::zero() : X::load(sums + r * ld);
    acc[r][1] = first ? X::zero() : X::load(sums + r * ld + W);
  }
  for (std::size_t k = 0; k < kc; ++k) {
    const typename X::V b0 = X::load(strip + k * 2 * W), b1 = X::load(strip + k * 2 * W + W);
    const T* row = panel + k * R;
    for (std::size_t r = 0; r < R; ++r) {
      const typename X::V x = X::set1(row[r]);
      acc[r][0] = X::fma(x, b0, acc[r][0]);
      acc[r][1] = X::fma(x, b1, acc[r][1]);
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    X::store(sums + r * ld, acc[r][0]);
    X::store(sums + r * ld + W, acc[r][1]);
  }
}

template <class T>
struct Work {
  const Blocking& g;
  Offsets big_k, big_n, c_m, c_n;
  bool m_inner = false;  // c's writes: the small operand's values innermost
  const T* big = nullptr;
  const T* panel = nullptr;  // [panels][K][rows]
  T alpha{}, beta{};
  T* c = nullptr;
};

// Block `t` of N: packed a block of K at a time into `block` ([strips][kc][strip]), the sums
// in `sums` ([rows * panels][nc]), then written to c.
template <class T, std::size_t R>
__attribute__((target("avx512f"))) void block_task(const Work<T>& w, std::size_t t, T* block, T* sums,
                                                   std::vector<Run>& runs) {
  const Blocking& g = w.g;
  const std::size_t n0 = t * g.nc, count = std::min(g.nc, g.n - n0);
  const std::size_t strips = ceil_div(count, g.strip), stride = g.kc * g.strip;
  runs.clear();
  for (std::size_t j = 0; j < count;) {
    Run run{w.big_n[n0 + j], j / g.strip * stride + j % g.strip, 1};
    ++j;
    while (j < count && j % g.strip != 0 && w.big_n[n0 + j] == run.from + static_cast<std::ptrdiff_t>(run.length)) {
      ++run.length;
      ++j;
    }
    runs.push_back(run);
  }
  if (count % g.strip != 0) {  // the last strip's columns past N: zero
    T* last = block + (strips - 1) * stride;
    for (std::size_t k = 0; k < g.kc; ++k)
      std::fill(last + k * g.strip + count % g.strip, last + (k + 1) * g.strip, T(0));
  }
  for (std::size_t k0 = 0; k0 < g.k; k0 += g.kc) {
    const std::size_t kc = std::min(g.kc, g.k - k0);
    for (std::size_t k = 0; k < kc; ++k) {
      const T* from = w.big + w.big_k[k0 + k];
      T* to = block + k * g.strip;
      for (const Run& run : runs) copy_run(from + run.from, to + run.to, run.length);
    }
    for (std::size_t s = 0; s < strips; ++s) {
      for (std::size_t p = 0; p < g.panels; ++p) {
        strip_kernel<T, R>(block + s * stride, w.panel + (p * g.k + k0) * R, kc, sums + p * R * g.nc + s * g.strip,
                           g.nc, k0 == 0);
      }
    }
  }
  if (w.m_inner) {
    for (std::size_t j = 0; j < count; ++j) {
      T* out = w.c + w.c_n[n0 + j];
      for (std::size_t i = 0; i < g.m; ++i) store_value(out[w.c_m[i]], sums[i * g.nc + j], w.alpha, w.beta);
    }
  } else {
    for (std::size_t i = 0; i < g.m; ++i) {
      T* out = w.c + w.c_m[i];
      const T* row = sums + i * g.nc;
      for (std::size_t j = 0; j < count; ++j) store_value(out[w.c_n[n0 + j]], row[j], w.alpha, w.beta);
    }
  }
}

template <class T, std::size_t R>
void run_blocks(const Work<T>& w, T* scratch, std::size_t threads) {
  const Blocking& g = w.g;
  std::vector<std::vector<Run>> runs(threads);
  for (auto& r : runs) r.reserve(g.nc);  // no allocation in the parallel region
  const bool par = threads > 1;
#pragma omp parallel num_threads(static_cast <int>(threads)) if (par)
  {
    const auto me = static_cast<std::size_t>(omp_get_thread_num());
    T* block = scratch + me * g.per_thread;
    T* sums = block + g.kc * g.nc;
#pragma omp for schedule(dynamic)
    for (std::size_t t = 0; t < g.tasks; ++t) block_task<T, R>(w, t, block, sums, runs[me]);
  }
}

}  // namespace

int gett_small_operand(const Problem& p) {
  bool has_k = false;
  for (Role r : p.role) {
    if (r == Role::batch) return -1;
    has_k = has_k || r == Role::k;
  }
  if (!has_k || (p.element_size != sizeof(float) && p.element_size != sizeof(double))) return -1;
  const std::size_t ma = free_size(p, kA), nb = free_size(p, kB);
  if (std::min(ma, nb) > kGettMost) return -1;
  return ma <= nb ? kA : kB;
}

std::size_t gett_scratch_elements(const Problem& p, std::size_t threads) {
  const Blocking g = blocking(p, threads);
  return g.rows * g.panels * g.k + std::max<std::size_t>(threads, 1) * g.per_thread;
}

template <class T>
std::size_t run_gett(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  const Blocking g = blocking(p, p.threads);
  // Threads where the work pays for waking them (as the GEMM plans judge it).
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  const bool par = omp_get_max_threads() > 1 && !omp_in_parallel() && flops >= kParallelFlops;
  const std::size_t threads =
      par ? std::min<std::size_t>(std::max<std::size_t>(p.threads, 1), static_cast<std::size_t>(omp_get_max_threads()))
          : 1;
  const std::size_t used = std::min(threads, g.tasks);
  const std::vector<int> k_modes = modes_of(p, g.big, Role::k);
  const std::vector<int> big_free = modes_of(p, g.big, free_role(g.big));
  const std::vector<int> small_free = modes_of(p, g.small, free_role(g.small));
  Work<T> w{g, offsets(p, g.big, k_modes), offsets(p, g.big, big_free), offsets(p, kC, small_free),
            offsets(p, kC, big_free)};
  if (!small_free.empty() && !big_free.empty()) {
    const auto& cs = p.stride[kC];
    w.m_inner = cs[static_cast<std::size_t>(small_free.back())] < cs[static_cast<std::size_t>(big_free.back())];
  }
  w.big = g.big == kA ? a : b;
  w.alpha = alpha;
  w.beta = beta;
  w.c = c;
  // The panels: the small operand's values in the large one's k order, [K][rows] each, zero
  // past M.
  const T* small = g.small == kA ? a : b;
  const Offsets small_k = offsets(p, g.small, k_modes), small_m = offsets(p, g.small, small_free);
  Scratch<T> scratch(gett_scratch_elements(p, p.threads));  // prefault_scratch takes the same
  T* panel = scratch.get();
  for (std::size_t q = 0; q < g.panels; ++q) {
    for (std::size_t k = 0; k < g.k; ++k) {
      T* row = panel + (q * g.k + k) * g.rows;
      for (std::size_t r = 0; r < g.rows; ++r) {
        const std::size_t i = q * g.rows + r;
        row[r] = i < g.m ? small[small_k[k] + small_m[i]] : T(0);
      }
    }
  }
  w.panel = panel;
  T* rest = panel + g.rows * g.panels * g.k;
  switch (g.rows) {
    case 2: run_blocks<T, 2>(w, rest, used); break;
    case 4: run_blocks<T, 4>(w, rest, used); break;
    case 6: run_blocks<T, 6>(w, rest, used); break;
    case 8: run_blocks<T, 8>(w, rest, used); break;
    case 10: run_blocks<T, 10>(w, rest, used); break;
    default: run_blocks<T, 12>(w, rest, used); break;
  }
  return 1;
}

template std::size_t run_gett<float>(const Problem&, float, const float*, const float*, float, float*);
template std::size_t run_gett<double>(const Problem&, double, const double*, const double*, double, double*);

}  // namespace tenex::detail::cpu::contraction
