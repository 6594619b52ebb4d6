// The narrow kernel (narrow_kernel.hpp): c[M, N] = sum over K of big[M, K] small[K, N] for
// N <= kNarrowMost, the large operand read as it lies, in rows. Written over Highway's
// portable vectors: this file compiles itself once per SIMD target (hwy/foreach_target.h), and
// run_narrow calls the target simd.hpp picks; the panel's width and the rows of a task come
// from that target's lanes and registers.
#ifndef TENEX_NARROW_KERNEL_CPP_ONCE
#define TENEX_NARROW_KERNEL_CPP_ONCE
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "tenex/backend/cpu/narrow_kernel.hpp"
#include "tenex/backend/cpu/operand_offsets.hpp"
#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/backend/cpu/simd.hpp"

namespace tenex::detail::cpu::contraction {
namespace {


template <class T>
struct Layout {
  // K in blocks: big_k holds the offsets of one block's k values (the large operand's k modes
  // after its last free one, in its order, so that a block of rows lies together in memory),
  // big_block the offsets of each block; the panel's rows follow the same order.
  Offsets big_k, big_block;
  Offsets big_m, c_m;  // every free mode of big
  Offsets c_n;         // the small operand's free values in c
  std::size_t n = 0;   // free values of the small operand
  std::size_t panel_width = 0;
};

// Each thread takes a share of the tasks and runs the blocks of K in turn over its share,
// so that each block of the large operand is read in one sweep (rows together in memory).
template <class F>
void for_blocks(std::size_t tasks, std::size_t blocks, double flops_per_task, F task) {
  [[maybe_unused]] const bool par = tasks > 1 && omp_get_max_threads() > 1 && !omp_in_parallel() &&
                                    flops_per_task * static_cast<double>(tasks * blocks) >= 2e6;
#pragma omp parallel if (par)
  {
    const auto team = static_cast<std::size_t>(omp_get_num_threads());
    const auto me = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t first = tasks * me / team, last = tasks * (me + 1) / team;
    for (std::size_t block = 0; block < blocks; ++block) {
      for (std::size_t t = first; t < last; ++t) task(t, block);
    }
  }
}

// Values of K one block holds at least (fewer only where K has fewer): the sums go to memory
// and back between blocks.
constexpr std::size_t kBlockValues = 48;


// The offsets of the problem, the panel `lanes` values wide at least.
template <class T>
Layout<T> layout(const Problem& p, std::size_t lanes) {
  const int small = narrow_small_operand(p);
  const int big = small == kA ? kB : kA;
  Layout<T> l;
  const std::vector<int> k_modes = modes_of(p, big, Role::k);
  const std::vector<int> big_free = modes_of(p, big, free_role(big));
  const std::vector<int> small_free = modes_of(p, small, free_role(small));
  // The k modes after the large operand's last free one make a block,
  // widened outward to at least kBlockValues values; the others number the blocks.
  std::size_t split = k_modes.size();
  {
    const std::vector<int>& order = p.order[static_cast<std::size_t>(big)];
    const int last_free = big_free.empty() ? -1 : big_free.back();
    const auto after = last_free < 0 ? order.begin() : std::find(order.begin(), order.end(), last_free);
    std::size_t inner = 0, values = 1;
    for (auto it = after; it != order.end(); ++it) {
      if (p.role[static_cast<std::size_t>(*it)] == Role::k) ++inner;
    }
    split = k_modes.size() - inner;
    for (std::size_t x = split; x < k_modes.size(); ++x) values *= p.extent[static_cast<std::size_t>(k_modes[x])];
    while (split > 0 && values < kBlockValues) values *= p.extent[static_cast<std::size_t>(k_modes[--split])];
  }
  const std::vector<int> outer_k(k_modes.begin(), k_modes.begin() + static_cast<std::ptrdiff_t>(split));
  const std::vector<int> inner_k(k_modes.begin() + static_cast<std::ptrdiff_t>(split), k_modes.end());
  l.big_k = offsets(p, big, inner_k);
  l.big_block = offsets(p, big, outer_k);
  l.big_m = offsets(p, big, big_free);
  l.c_m = offsets(p, kC, big_free);
  l.c_n = offsets(p, kC, small_free);
  l.n = l.c_n.size();
  l.panel_width = round_up(l.n, lanes);
  return l;
}

}  // namespace
}  // namespace tenex::detail::cpu::contraction
#endif  // TENEX_NARROW_KERNEL_CPP_ONCE

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tenex/backend/cpu/narrow_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include "tenex/backend/cpu/simd_vector_inl.hpp"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::contraction::HWY_NAMESPACE {
using cpu::HWY_NAMESPACE::kVectorRegisters;
using cpu::HWY_NAMESPACE::Vec;
// Internal linkage: each kernel file compiles itself per target into the same namespaces.
namespace {

// Rows [m0, m0 + R) (the last ones repeat the last row where fewer are left), NV vectors of
// the panel's row from vector v0, over block `block` of K: the sums so far come from `sums`
// (none for the first block; a row's panel_width values per row) and go back there, or, after
// the last block, to c.
template <class T, std::size_t R, std::size_t NV>
void rows_task(const Layout<T>& l, const T* big, const T* panel, std::size_t m0, std::size_t v0, std::size_t block,
               T* sums, T alpha, T beta, T* c) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  const std::size_t m = l.big_m.size(), kk = l.big_k.size();
  const T* row[R];
  for (std::size_t r = 0; r < R; ++r) row[r] = big + l.big_block[block] + l.big_m[std::min(m0 + r, m - 1)];
  panel += block * kk * l.panel_width + v0 * W;
  typename X::V acc[R][NV];
  T* const sum = sums ? sums + m0 * l.panel_width + v0 * W : nullptr;  // null: one block
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = block == 0 ? X::zero() : X::load(sum + r * l.panel_width + v * W);
  }
  const std::ptrdiff_t* koff = l.big_k.data();
  for (std::size_t k = 0; k < kk; ++k) {
    const std::ptrdiff_t off = koff[k];
    const T* pr = panel + k * l.panel_width;
    typename X::V s[NV];
    for (std::size_t v = 0; v < NV; ++v) s[v] = X::load(pr + v * W);
    for (std::size_t r = 0; r < R; ++r) {
      const typename X::V x = X::set1(row[r][off]);
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = X::fma(x, s[v], acc[r][v]);
    }
  }
  if (block + 1 < l.big_block.size()) {
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t v = 0; v < NV; ++v) X::store(sum + r * l.panel_width + v * W, acc[r][v]);
    }
    return;
  }
  HWY_ALIGN T values[NV * W];
  const std::size_t first = v0 * W, last = std::min(l.n, (v0 + NV) * W);
  for (std::size_t r = 0; r < R && m0 + r < m; ++r) {
    for (std::size_t v = 0; v < NV; ++v) X::store(values + v * W, acc[r][v]);
    T* out = c + l.c_m[m0 + r];
    for (std::size_t n = first; n < last; ++n) store_value(out[l.c_n[n]], values[n - first], alpha, beta);
  }
}

// Tasks of R rows; a task runs the panel's vectors in groups of up to G (the sums of R rows by
// G vectors, a vector of the panel's row per group and a broadcast fit the registers).
template <class T, std::size_t R, std::size_t G>
void run_rows(const Layout<T>& l, const T* big, const T* panel, T* sums, T alpha, T beta, T* c) {
  const std::size_t m = l.big_m.size(), vectors = l.panel_width / Vec<T>::width;
  const std::size_t tasks = (m + R - 1) / R;
  const double flops = 2.0 * static_cast<double>(R * l.big_k.size() * l.n);
  for_blocks(tasks, l.big_block.size(), flops, [&](std::size_t t, std::size_t block) {
    for (std::size_t v0 = 0; v0 < vectors; v0 += G) {
      switch (std::min(G, vectors - v0)) {
        case 1: rows_task<T, R, 1>(l, big, panel, t * R, v0, block, sums, alpha, beta, c); break;
        case 2: rows_task<T, R, 2>(l, big, panel, t * R, v0, block, sums, alpha, beta, c); break;
        case 3: rows_task<T, R, 3>(l, big, panel, t * R, v0, block, sums, alpha, beta, c); break;
        default: rows_task<T, R, 4>(l, big, panel, t * R, v0, block, sums, alpha, beta, c); break;
      }
    }
  });
}

template <class T>
std::size_t run(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  const int small = narrow_small_operand(p);
  const int big = small == kA ? kB : kA;
  const T* big_data = big == kA ? a : b;
  const T* small_data = small == kA ? a : b;
  Layout<T> l = layout<T>(p, Vec<T>::width);
  const std::vector<int> k_modes = modes_of(p, big, Role::k);
  const std::vector<int> small_free = modes_of(p, small, free_role(small));
  // The panel: the small operand's values in the large one's k order, a row of
  // panel_width per k (zero past n).
  const Offsets small_k = offsets(p, small, k_modes), small_n = offsets(p, small, small_free);
  const std::size_t kk = small_k.size();
  Scratch<T> panel(kk * l.panel_width);
  T* pp = panel.get();
  for (std::size_t k = 0; k < kk; ++k) {
    T* row = pp + k * l.panel_width;
    for (std::size_t n = 0; n < l.n; ++n) row[n] = small_data[small_k[k] + small_n[n]];
    for (std::size_t n = l.n; n < l.panel_width; ++n) row[n] = T(0);
  }
  // The sums between blocks: a panel row's worth per row, for whole tasks of at most 12 rows.
  Scratch<T> sum_block(l.big_block.size() > 1 ? (l.big_m.size() + 12) * l.panel_width : 0);
  T* sums = sum_block.get();
  // Rows per task from the registers: R rows by G vectors of sums, G vectors of the panel and
  // a broadcast (AVX-512 and NEON: 32 registers; AVX2 and SSE4: 16).
  const std::size_t vectors = l.panel_width / Vec<T>::width;
  if constexpr (kVectorRegisters >= 32) {
    switch (vectors) {
      case 1: run_rows<T, 12, 1>(l, big_data, pp, sums, alpha, beta, c); break;
      case 2: run_rows<T, 12, 2>(l, big_data, pp, sums, alpha, beta, c); break;
      case 3: run_rows<T, 8, 3>(l, big_data, pp, sums, alpha, beta, c); break;
      default: run_rows<T, 6, 4>(l, big_data, pp, sums, alpha, beta, c); break;
    }
  } else {
    if (vectors == 1) {
      run_rows<T, 12, 1>(l, big_data, pp, sums, alpha, beta, c);
    } else {
      run_rows<T, 6, 2>(l, big_data, pp, sums, alpha, beta, c);
    }
  }
  return 1;
}


std::size_t narrow_float(const Problem& p, float alpha, const float* a, const float* b, float beta, float* c) {
  return run<float>(p, alpha, a, b, beta, c);
}
std::size_t narrow_double(const Problem& p, double alpha, const double* a, const double* b, double beta, double* c) {
  return run<double>(p, alpha, a, b, beta, c);
}

}  // namespace
}  // namespace tenex::detail::cpu::contraction::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tenex::detail::cpu::contraction {

HWY_EXPORT(narrow_float);
HWY_EXPORT(narrow_double);

int narrow_small_operand(const Problem& p) {
  if (p.complex) return -1;  // real arithmetic only
  bool has_k = false;
  for (Role r : p.role) {
    if (r == Role::batch) return -1;
    has_k = has_k || r == Role::k;
  }
  if (!has_k || (p.element_size != sizeof(float) && p.element_size != sizeof(double))) return -1;
  const std::size_t ma = free_size(p, kA), nb = free_size(p, kB);
  const int small = ma <= nb ? kA : kB;
  const std::size_t n = std::min(ma, nb);
  if (n > kNarrowMost) return -1;
  // The large operand's stride-1 mode must be a k mode.
  const int big = small == kA ? kB : kA;
  if (!last_is_k(p, big)) return -1;
  return small;
}

std::size_t narrow_panel_elements(const Problem& p) {
  const int small = narrow_small_operand(p);
  const std::size_t n = free_size(p, small);
  const std::size_t width = p.element_size == sizeof(float) ? simd_lanes<float>() : simd_lanes<double>();
  return k_size(p) * round_up(n, width);
}

template <class T>
std::size_t run_narrow(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  if constexpr (std::is_same_v<T, float>) {
    return TENEX_SIMD_DISPATCH(narrow_float)(p, alpha, a, b, beta, c);
  } else {
    return TENEX_SIMD_DISPATCH(narrow_double)(p, alpha, a, b, beta, c);
  }
}

template std::size_t run_narrow<float>(const Problem&, float, const float*, const float*, float, float*);
template std::size_t run_narrow<double>(const Problem&, double, const double*, const double*, double, double*);

}  // namespace tenex::detail::cpu::contraction
#endif  // HWY_ONCE
