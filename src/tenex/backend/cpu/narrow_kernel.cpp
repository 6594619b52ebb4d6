// The narrow kernel (narrow_kernel.hpp): c[M, N] = sum over K of big[M, K] small[K, N] for
// N <= kNarrowMost, on AVX-512, the large operand read as it lies.
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tenex/backend/cpu/narrow_kernel.hpp"
#include "tenex/backend/cpu/scratch.hpp"

namespace tenex::detail::cpu::contraction {
namespace {

using Offsets = std::vector<std::ptrdiff_t>;

// The offsets into operand `op` of every index of `modes` (the first mode slowest).
Offsets offsets(const Problem& p, int op, const std::vector<int>& modes) {
  Offsets out{0};
  for (int d : modes) {
    const auto u = static_cast<std::size_t>(d);
    const std::ptrdiff_t stride = p.stride[static_cast<std::size_t>(op)][u];
    Offsets next;
    next.reserve(out.size() * p.extent[u]);
    for (std::ptrdiff_t base : out) {
      for (std::size_t x = 0; x < p.extent[u]; ++x) next.push_back(base + static_cast<std::ptrdiff_t>(x) * stride);
    }
    out = std::move(next);
  }
  return out;
}

// The modes of `op` that play `role`, in op's order.
std::vector<int> modes_of(const Problem& p, int op, Role role) {
  std::vector<int> out;
  for (int d : p.order[static_cast<std::size_t>(op)]) {
    if (p.role[static_cast<std::size_t>(d)] == role) out.push_back(d);
  }
  return out;
}

Role free_role(int op) { return op == kA ? Role::m : Role::n; }

std::size_t free_size(const Problem& p, int op) {
  std::size_t n = 1;
  for (int d : modes_of(p, op, free_role(op))) n *= p.extent[static_cast<std::size_t>(d)];
  return n;
}

// AVX-512 vectors of T.
template <class T>
struct Vec;

template <>
struct Vec<double> {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr std::size_t width = 8;
  __attribute__((target("avx512f"), always_inline)) static inline V zero() { return _mm512_setzero_pd(); }
  __attribute__((target("avx512f"), always_inline)) static inline V set1(double x) { return _mm512_set1_pd(x); }
  __attribute__((target("avx512f"), always_inline)) static inline V load(const double* x) { return _mm512_loadu_pd(x); }
  __attribute__((target("avx512f"), always_inline)) static inline V load(Mask m, const double* x) {
    return _mm512_maskz_loadu_pd(m, x);
  }
  __attribute__((target("avx512f"), always_inline)) static inline V fma(V x, V y, V z) {
    return _mm512_fmadd_pd(x, y, z);
  }
  __attribute__((target("avx512f"), always_inline)) static inline void store(double* to, V x) {
    _mm512_storeu_pd(to, x);
  }
};

template <>
struct Vec<float> {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr std::size_t width = 16;
  __attribute__((target("avx512f"), always_inline)) static inline V zero() { return _mm512_setzero_ps(); }
  __attribute__((target("avx512f"), always_inline)) static inline V set1(float x) { return _mm512_set1_ps(x); }
  __attribute__((target("avx512f"), always_inline)) static inline V load(const float* x) { return _mm512_loadu_ps(x); }
  __attribute__((target("avx512f"), always_inline)) static inline V load(Mask m, const float* x) {
    return _mm512_maskz_loadu_ps(m, x);
  }
  __attribute__((target("avx512f"), always_inline)) static inline V fma(V x, V y, V z) {
    return _mm512_fmadd_ps(x, y, z);
  }
  __attribute__((target("avx512f"), always_inline)) static inline void store(float* to, V x) {
    _mm512_storeu_ps(to, x);
  }
};

template <class T>
struct Layout {
  Offsets big_k, big_m, c_m;  // rows: every free mode of big; lanes: the outer ones
  Offsets c_n;                // the small operand's free values in c
  std::size_t n = 0;          // free values of the small operand
  std::size_t panel_width = 0;
  // Lanes: the large operand's stride-1 mode.
  std::size_t lanes = 0;
  std::ptrdiff_t c_lane = 0;
};

template <class T>
void store_value(T& out, T value, T alpha, T beta) {
  out = beta == T(0) ? alpha * value : alpha * value + beta * out;
}

// Rows [m0, m0 + R) (the last ones repeat the last row where fewer are left), NV vectors of
// the panel's row.
template <class T, std::size_t R, std::size_t NV>
__attribute__((target("avx512f"))) void rows_task(const Layout<T>& l, const T* big, const T* panel, std::size_t m0,
                                                  T alpha, T beta, T* c) {
  using X = Vec<T>;
  const std::size_t m = l.big_m.size(), kk = l.big_k.size();
  const T* row[R];
  for (std::size_t r = 0; r < R; ++r) row[r] = big + l.big_m[std::min(m0 + r, m - 1)];
  typename X::V acc[R][NV];
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t v = 0; v < NV; ++v) acc[r][v] = X::zero();
  }
  const std::ptrdiff_t* koff = l.big_k.data();
  for (std::size_t k = 0; k < kk; ++k) {
    const std::ptrdiff_t off = koff[k];
    const T* pr = panel + k * l.panel_width;
    typename X::V s[NV];
    for (std::size_t v = 0; v < NV; ++v) s[v] = X::load(pr + v * X::width);
    for (std::size_t r = 0; r < R; ++r) {
      const typename X::V x = X::set1(row[r][off]);
      for (std::size_t v = 0; v < NV; ++v) acc[r][v] = X::fma(x, s[v], acc[r][v]);
    }
  }
  alignas(64) T values[NV * X::width];
  for (std::size_t r = 0; r < R && m0 + r < m; ++r) {
    for (std::size_t v = 0; v < NV; ++v) X::store(values + v * X::width, acc[r][v]);
    T* out = c + l.c_m[m0 + r];
    for (std::size_t n = 0; n < l.n; ++n) store_value(out[l.c_n[n]], values[n], alpha, beta);
  }
}

// One vector of the lanes (lane0 on, `count` of them) of outer index o, panel columns
// [n0, n0 + NC).
template <class T, std::size_t NC>
__attribute__((target("avx512f"))) void lanes_task(const Layout<T>& l, const T* big, const T* panel, std::size_t o,
                                                   std::size_t lane0, std::size_t n0, T alpha, T beta, T* c) {
  using X = Vec<T>;
  const std::size_t count = std::min(X::width, l.lanes - lane0);
  const auto mask = static_cast<typename X::Mask>((count == X::width) ? ~0ULL : ((1ULL << count) - 1));
  const T* base = big + l.big_m[o] + static_cast<std::ptrdiff_t>(lane0);
  typename X::V acc[NC];
  for (std::size_t j = 0; j < NC; ++j) acc[j] = X::zero();
  const std::size_t kk = l.big_k.size();
  const std::ptrdiff_t* koff = l.big_k.data();
  for (std::size_t k = 0; k < kk; ++k) {
    const typename X::V x = X::load(mask, base + koff[k]);
    const T* pr = panel + k * l.panel_width + n0;
    for (std::size_t j = 0; j < NC; ++j) acc[j] = X::fma(x, X::set1(pr[j]), acc[j]);
  }
  alignas(64) T values[X::width];
  T* out = c + l.c_m[o] + static_cast<std::ptrdiff_t>(lane0) * l.c_lane;
  for (std::size_t j = 0; j < NC && n0 + j < l.n; ++j) {
    X::store(values, acc[j]);
    const std::ptrdiff_t cn = l.c_n[n0 + j];
    for (std::size_t x = 0; x < count; ++x) {
      store_value(out[static_cast<std::ptrdiff_t>(x) * l.c_lane + cn], values[x], alpha, beta);
    }
  }
}

// Runs `task(t)` for t in [0, tasks), shared among the OpenMP threads where it pays.
template <class F>
void for_tasks(std::size_t tasks, double flops_per_task, F task) {
  const bool par = tasks > 1 && omp_get_max_threads() > 1 && !omp_in_parallel() &&
                   flops_per_task * static_cast<double>(tasks) >= 2e6;
#pragma omp parallel for schedule(static) if (par)
  for (std::size_t t = 0; t < tasks; ++t) task(t);
}

template <class T, std::size_t R, std::size_t NV>
void run_rows(const Layout<T>& l, const T* big, const T* panel, T alpha, T beta, T* c) {
  const std::size_t m = l.big_m.size();
  const std::size_t tasks = (m + R - 1) / R;
  const double flops = 2.0 * static_cast<double>(R * l.big_k.size() * l.n);
  for_tasks(tasks, flops, [&](std::size_t t) { rows_task<T, R, NV>(l, big, panel, t * R, alpha, beta, c); });
}

template <class T, std::size_t NC>
void run_lanes(const Layout<T>& l, const T* big, const T* panel, T alpha, T beta, T* c) {
  const std::size_t vectors = (l.lanes + Vec<T>::width - 1) / Vec<T>::width;
  const std::size_t chunks = (l.panel_width + NC - 1) / NC;
  const std::size_t tasks = l.big_m.size() * vectors * chunks;
  const double flops = 2.0 * static_cast<double>(Vec<T>::width * NC * l.big_k.size());
  for_tasks(tasks, flops, [&](std::size_t t) {
    const std::size_t chunk = t % chunks, rest = t / chunks;
    lanes_task<T, NC>(l, big, panel, rest / vectors, rest % vectors * Vec<T>::width, chunk * NC, alpha, beta, c);
  });
}

std::size_t round_up(std::size_t x, std::size_t step) { return (x + step - 1) / step * step; }

// Columns of the panel for the lanes orientation, and of each chunk of it: multiples of 4, a
// chunk of at most 28 accumulators.
std::size_t lanes_chunk(std::size_t n) {
  const std::size_t padded = round_up(n, 4);
  if (padded <= 28) return padded;
  return round_up((n + 1) / 2, 4);
}

}  // namespace

bool narrow_available() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

int narrow_small_operand(const Problem& p) {
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
  return small;
}

bool narrow_lanes(const Problem& p) {
  const int small = narrow_small_operand(p);
  const int big = small == kA ? kB : kA;
  const int last = p.last(big);
  return last >= 0 && p.role[static_cast<std::size_t>(last)] == free_role(big) &&
         p.stride[static_cast<std::size_t>(big)][static_cast<std::size_t>(last)] == 1;
}

std::size_t narrow_panel_elements(const Problem& p) {
  const int small = narrow_small_operand(p);
  const std::size_t n = free_size(p, small);
  std::size_t k = 1;
  for (std::size_t d = 0; d < p.modes(); ++d) {
    if (p.role[d] == Role::k) k *= p.extent[d];
  }
  const std::size_t width = p.element_size == sizeof(float) ? 16 : 8;
  return k * (narrow_lanes(p) ? round_up(n, 4) : round_up(n, width));
}

template <class T>
std::size_t run_narrow(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  const int small = narrow_small_operand(p);
  const int big = small == kA ? kB : kA;
  const bool lanes = narrow_lanes(p);
  const T* big_data = big == kA ? a : b;
  const T* small_data = small == kA ? a : b;
  Layout<T> l;
  const std::vector<int> k_modes = modes_of(p, big, Role::k);
  std::vector<int> big_free = modes_of(p, big, free_role(big));
  const std::vector<int> small_free = modes_of(p, small, free_role(small));
  if (lanes) {
    const int inner = big_free.back();
    big_free.pop_back();
    l.lanes = p.extent[static_cast<std::size_t>(inner)];
    l.c_lane = p.stride[kC][static_cast<std::size_t>(inner)];
  }
  l.big_k = offsets(p, big, k_modes);
  l.big_m = offsets(p, big, big_free);
  l.c_m = offsets(p, kC, big_free);
  l.c_n = offsets(p, kC, small_free);
  l.n = l.c_n.size();
  l.panel_width = lanes ? round_up(l.n, 4) : round_up(l.n, Vec<T>::width);
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
  if (lanes) {
    switch (lanes_chunk(l.n)) {
      case 4: run_lanes<T, 4>(l, big_data, pp, alpha, beta, c); break;
      case 8: run_lanes<T, 8>(l, big_data, pp, alpha, beta, c); break;
      case 12: run_lanes<T, 12>(l, big_data, pp, alpha, beta, c); break;
      case 16: run_lanes<T, 16>(l, big_data, pp, alpha, beta, c); break;
      case 20: run_lanes<T, 20>(l, big_data, pp, alpha, beta, c); break;
      case 24: run_lanes<T, 24>(l, big_data, pp, alpha, beta, c); break;
      default: run_lanes<T, 28>(l, big_data, pp, alpha, beta, c); break;
    }
  } else {
    switch (l.panel_width / Vec<T>::width) {
      case 1: run_rows<T, 12, 1>(l, big_data, pp, alpha, beta, c); break;
      case 2: run_rows<T, 12, 2>(l, big_data, pp, alpha, beta, c); break;
      case 3: run_rows<T, 8, 3>(l, big_data, pp, alpha, beta, c); break;
      default: run_rows<T, 6, 4>(l, big_data, pp, alpha, beta, c); break;
    }
  }
  return 1;
}

template std::size_t run_narrow<float>(const Problem&, float, const float*, const float*, float, float*);
template std::size_t run_narrow<double>(const Problem&, double, const double*, const double*, double, double*);

}  // namespace tenex::detail::cpu::contraction
