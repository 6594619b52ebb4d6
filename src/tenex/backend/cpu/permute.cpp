// Permutation and reduction kernels of the CPU backend.
//
// Every permutation is one strided scaled copy, out[x] = alpha * in[x] + beta * out[x], over a
// multi-index x. Its modes are first simplified (extent-1 modes dropped, modes contiguous in
// both arrays merged). The copy then runs row by row when the output's fastest mode is also
// the input's fastest, and otherwise as a transpose of those two modes in small square tiles,
// so that reads and writes both touch whole cache lines while a tile sits in L1. The rows'
// scaled copies and the tiles' in-register transposes are written over Google Highway's
// portable vectors: this file compiles itself once per SIMD target (hwy/foreach_target.h), and
// the kernels run the target simd.hpp picks.
#ifndef TENEX_PERMUTE_CPP_ONCE
#define TENEX_PERMUTE_CPP_ONCE
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/simd.hpp"
#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {
namespace {

struct Dim {
  std::size_t extent;
  std::ptrdiff_t in;   // element stride in the input
  std::ptrdiff_t out;  // element stride in the output
};

// Below this many elements a kernel runs on one thread (tuning.hpp).
constexpr std::size_t kParallelMin = tuning::kPermuteParallelMin;
// Side of the tiles of the transpose path: a tile of doubles is 8 KiB, so its input lines
// and output lines stay in L1 while it is copied.
constexpr std::size_t kTile = 32;
// Modes of extent 2 or more in one array: at most 64, or it would not fit in memory.
constexpr std::size_t kMaxDims = 64;
// Bytes a contiguous row copy prefetches ahead of its reads.
constexpr std::size_t kPrefetchAhead = 1024;
// Rows longer than this are cut into pieces when there are too few rows to share out.
constexpr std::size_t kRowPiece = 4096;

std::size_t product(const Extents& extents) {
  std::size_t n = 1;
  for (std::size_t e : extents) n *= e;
  return n;
}

Strides row_major_strides(const Extents& extents) {
  Strides strides(extents.size());
  std::ptrdiff_t s = 1;
  for (std::size_t d = extents.size(); d-- > 0;) {
    strides[d] = s;
    s *= static_cast<std::ptrdiff_t>(extents[d]);
  }
  return strides;
}

bool run_parallel(bool allowed, std::size_t work) {
  return allowed && work >= kParallelMin && omp_get_max_threads() > 1 && !omp_in_parallel();
}

// Drops extent-1 modes, orders the others by decreasing output stride and merges neighbours
// that are contiguous in both arrays. Returns false when an extent is zero (nothing to copy).
bool simplify(std::vector<Dim>& dims) {
  for (const Dim& d : dims) {
    if (d.extent == 0) return false;
  }
  std::erase_if(dims, [](const Dim& d) { return d.extent == 1; });
  if (dims.size() > kMaxDims) throw std::invalid_argument("strided copy: more than 64 modes of extent > 1");
  std::stable_sort(dims.begin(), dims.end(), [](const Dim& x, const Dim& y) { return x.out > y.out; });
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    const auto e = static_cast<std::ptrdiff_t>(d.extent);
    if (!merged.empty() && merged.back().out == d.out * e && merged.back().in == d.in * e) {
      merged.back() = {merged.back().extent * d.extent, d.in, d.out};
    } else {
      merged.push_back(d);
    }
  }
  dims = std::move(merged);
  return true;
}

// A multi-index over `dims` in row-major order that tracks its input and output offsets.
// It does not allocate, so that it can run inside parallel regions.
class Odometer {
 public:
  Odometer(const std::vector<Dim>& dims, std::size_t linear) : dims_(dims) {
    for (std::size_t d = dims.size(); d-- > 0;) {
      index_[d] = linear % dims[d].extent;
      linear /= dims[d].extent;
      in_ += static_cast<std::ptrdiff_t>(index_[d]) * dims[d].in;
      out_ += static_cast<std::ptrdiff_t>(index_[d]) * dims[d].out;
    }
  }
  void next() {
    for (std::size_t d = dims_.size(); d-- > 0;) {
      in_ += dims_[d].in;
      out_ += dims_[d].out;
      if (++index_[d] < dims_[d].extent) return;
      in_ -= static_cast<std::ptrdiff_t>(dims_[d].extent) * dims_[d].in;
      out_ -= static_cast<std::ptrdiff_t>(dims_[d].extent) * dims_[d].out;
      index_[d] = 0;
    }
  }
  std::ptrdiff_t in() const { return in_; }
  std::ptrdiff_t out() const { return out_; }

 private:
  const std::vector<Dim>& dims_;
  std::array<std::size_t, kMaxDims> index_{};
  std::ptrdiff_t in_ = 0;
  std::ptrdiff_t out_ = 0;
};

template <class T>
double copy_flops(std::size_t n, T alpha, T beta) {
  return static_cast<double>(n) * ((alpha != T(1) ? 1.0 : 0.0) + (beta != T(0) ? 2.0 : 0.0));
}

}  // namespace
}  // namespace tenex::detail::cpu
#endif  // TENEX_PERMUTE_CPP_ONCE

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tenex/backend/cpu/permute.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
void copy_row(const T* __restrict in, std::ptrdiff_t si, T* __restrict out, std::ptrdiff_t so, std::size_t n, T alpha,
              T beta) {
  if (si == 1 && so == 1) {
    const hn::ScalableTag<T> d;
    const std::size_t lanes = hn::Lanes(d);
    const auto va = hn::Set(d, alpha);
    std::size_t x = 0;
    if (beta == T(0)) {
      // Reads run ahead of the copy by a few cache lines: rows are short and a pack reads
      // many of them from memory, where the hardware prefetchers start late on each.
      for (std::size_t p = 0; p < n; p += 64 / sizeof(T)) __builtin_prefetch(in + p + kPrefetchAhead / sizeof(T));
      for (; x + lanes <= n; x += lanes) hn::StoreU(hn::Mul(va, hn::LoadU(d, in + x)), d, out + x);
      for (; x < n; ++x) out[x] = alpha * in[x];
    } else {
      const auto vb = hn::Set(d, beta);
      for (; x + lanes <= n; x += lanes) {
        hn::StoreU(hn::Add(hn::Mul(va, hn::LoadU(d, in + x)), hn::Mul(vb, hn::LoadU(d, out + x))), d, out + x);
      }
      for (; x < n; ++x) out[x] = alpha * in[x] + beta * out[x];
    }
    return;
  }
  if (beta == T(0)) {
    for (std::size_t x = 0; x < n; ++x) out[x * so] = alpha * in[x * si];
  } else {
    for (std::size_t x = 0; x < n; ++x) out[x * so] = alpha * in[x * si] + beta * out[x * so];
  }
}

#if HWY_TARGET != HWY_SCALAR
// Square blocks of B x B values turned in registers (x[r][c] becomes x[c][r]), built from
// Highway's interleaves (within 128-bit blocks) and half concatenations: 4 x 4 floats in
// 128-bit vectors, 4 x 4 doubles in 256-bit ones (x86 from AVX2 on), 2 x 2 doubles in 128-bit.
template <class D>
HWY_INLINE void turn4x4(D d, hn::Vec<D> (&x)[4]) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    const auto t0 = hn::InterleaveLower(d, x[0], x[1]), t1 = hn::InterleaveLower(d, x[2], x[3]);
    const auto t2 = hn::InterleaveUpper(d, x[0], x[1]), t3 = hn::InterleaveUpper(d, x[2], x[3]);
    x[0] = hn::ConcatLowerLower(d, t1, t0);
    x[1] = hn::ConcatUpperUpper(d, t1, t0);
    x[2] = hn::ConcatLowerLower(d, t3, t2);
    x[3] = hn::ConcatUpperUpper(d, t3, t2);
  } else {
    const auto t0 = hn::InterleaveLower(d, x[0], x[1]), t1 = hn::InterleaveUpper(d, x[0], x[1]);
    const auto t2 = hn::InterleaveLower(d, x[2], x[3]), t3 = hn::InterleaveUpper(d, x[2], x[3]);
    x[0] = hn::ConcatLowerLower(d, t2, t0);
    x[1] = hn::ConcatLowerLower(d, t3, t1);
    x[2] = hn::ConcatUpperUpper(d, t2, t0);
    x[3] = hn::ConcatUpperUpper(d, t3, t1);
  }
}
template <class D>
HWY_INLINE void turn2x2(D d, hn::Vec<D> (&x)[2]) {
  const auto t0 = hn::InterleaveLower(d, x[0], x[1]);
  x[1] = hn::InterleaveUpper(d, x[0], x[1]);
  x[0] = t0;
}
template <class D, std::size_t B>
HWY_INLINE void turn(D d, hn::Vec<D> (&x)[B]) {
  if constexpr (B == 4) {
    turn4x4(d, x);
  } else {
    turn2x2(d, x);
  }
}

// The tile's `no` input rows (stride in_o) written as its `ni` output rows (stride out_i),
// times alpha, in blocks of B x B; the edges element by element.
template <class T, std::size_t B>
void transpose_blocks(const T* __restrict in, std::ptrdiff_t in_o, T* __restrict out, std::ptrdiff_t out_i,
                      std::size_t no, std::size_t ni, T alpha) {
  const hn::FixedTag<T, B> d;
  using V = hn::Vec<decltype(d)>;
  const V scale = hn::Set(d, alpha);
  std::size_t o = 0;
  for (; o + B <= no; o += B) {
    const T* r = in + static_cast<std::ptrdiff_t>(o) * in_o;
    std::size_t i = 0;
    for (; i + B <= ni; i += B) {
      V x[B];
      for (std::size_t b = 0; b < B; ++b) x[b] = hn::LoadU(d, r + static_cast<std::ptrdiff_t>(b) * in_o + i);
      turn<decltype(d), B>(d, x);
      T* w = out + static_cast<std::ptrdiff_t>(i) * out_i + static_cast<std::ptrdiff_t>(o);
      for (std::size_t b = 0; b < B; ++b)
        hn::StoreU(hn::Mul(scale, x[b]), d, w + static_cast<std::ptrdiff_t>(b) * out_i);
    }
    for (; i < ni; ++i) {
      T* w = out + static_cast<std::ptrdiff_t>(i) * out_i + static_cast<std::ptrdiff_t>(o);
      for (std::size_t b = 0; b < B; ++b) w[b] = alpha * r[static_cast<std::ptrdiff_t>(b) * in_o + i];
    }
  }
  for (; o < no; ++o) {
    for (std::size_t i = 0; i < ni; ++i) {
      out[static_cast<std::ptrdiff_t>(i) * out_i + static_cast<std::ptrdiff_t>(o)] =
          alpha * in[static_cast<std::ptrdiff_t>(o) * in_o + static_cast<std::ptrdiff_t>(i)];
    }
  }
}

// Whether a vector kernel transposed the tile (beta == 0 only).
template <class T>
bool transpose_tile(const T* in, std::ptrdiff_t in_o, T* out, std::ptrdiff_t out_i, std::size_t no, std::size_t ni,
                    T alpha) {
  if constexpr (sizeof(T) == 4) {
    transpose_blocks<T, 4>(in, in_o, out, out_i, no, ni, alpha);
  } else {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    transpose_blocks<T, 4>(in, in_o, out, out_i, no, ni, alpha);
#else
    transpose_blocks<T, 2>(in, in_o, out, out_i, no, ni, alpha);
#endif
  }
  return true;
}
#else
template <class T>
bool transpose_tile(const T*, std::ptrdiff_t, T*, std::ptrdiff_t, std::size_t, std::size_t, T) {
  return false;
}
#endif

// Two neighbouring values that move together (the parts of a complex number, or a last mode of
// extent 2 that both arrays lay out contiguously), scaled by a real factor.
template <class T>
struct Pair {
  T first, second;
};
template <class T>
Pair<T> operator*(T a, Pair<T> x) {
  return {a * x.first, a * x.second};
}
template <class T>
Pair<T> operator+(Pair<T> x, Pair<T> y) {
  return {x.first + y.first, x.second + y.second};
}

// Strides in values to strides in pairs of values: false, and nothing changed, where a mode that
// moves (extent 2 or more) has an odd stride.
bool halve_strides(std::vector<Dim>& dims) {
  for (const Dim& d : dims) {
    if (d.extent > 1 && (d.in % 2 != 0 || d.out % 2 != 0)) return false;
  }
  for (Dim& d : dims) {
    d.in /= 2;
    d.out /= 2;
  }
  return true;
}

// out = alpha in + beta out along one run of n elements (copy_row's vectors for real values).
template <class E, class T>
void copy_run(const E* in, std::ptrdiff_t si, E* out, std::ptrdiff_t so, std::size_t n, T alpha, T beta) {
  if constexpr (std::is_same_v<E, T>) {
    copy_row(in, si, out, so, n, alpha, beta);
  } else {
    for (std::size_t x = 0; x < n; ++x) {
      const auto i = static_cast<std::ptrdiff_t>(x) * si, o = static_cast<std::ptrdiff_t>(x) * so;
      out[o] = beta == T(0) ? alpha * in[i] : alpha * in[i] + beta * out[o];
    }
  }
}


// One tile of the transpose path: `no` elements along the output's fastest mode (input
// stride in_o, output stride out_o) times `ni` along the input's fastest (in_i, out_i).
// E is the element moved, T the real factors' type (E = T, or E = Pair<T>).
template <class E, class T>
void copy_tile(const E* __restrict in, std::ptrdiff_t in_o, std::ptrdiff_t in_i, E* __restrict out,
               std::ptrdiff_t out_o, std::ptrdiff_t out_i, std::size_t no, std::size_t ni, T alpha, T beta) {
  if (in_i == 1 && out_o == 1) {
    // Read rows of the input into a local tile, then write rows of the output from it: both
    // sides of memory are walked along their unit stride.
    // The input rows of the next tile along o are fetched meanwhile: they are short runs far
    // apart, which the hardware prefetchers do not follow (a prefetch never faults, so the
    // one past the end is harmless).
    if constexpr (std::is_same_v<E, T>) {
      if (beta == T(0)) {
        for (std::size_t o = 0; o < no; ++o) {
          const T* next = in + static_cast<std::ptrdiff_t>(o + kTile) * in_o;
          for (std::size_t i = 0; i < ni; i += 64 / sizeof(T)) __builtin_prefetch(next + i);
        }
        if (transpose_tile(in, in_o, out, out_i, no, ni, alpha)) return;
      }
    }
    E tile[kTile][kTile];
    for (std::size_t o = 0; o < no; ++o) {
      const E* row = in + static_cast<std::ptrdiff_t>(o) * in_o;
      const E* next = row + static_cast<std::ptrdiff_t>(kTile) * in_o;
      for (std::size_t i = 0; i < ni; i += 64 / sizeof(E)) __builtin_prefetch(next + i);
      for (std::size_t i = 0; i < ni; ++i) tile[i][o] = row[i];
    }
    for (std::size_t i = 0; i < ni; ++i) {
      E* row = out + static_cast<std::ptrdiff_t>(i) * out_i;
      if (beta == T(0)) {
        for (std::size_t o = 0; o < no; ++o) row[o] = alpha * tile[i][o];
      } else {
        for (std::size_t o = 0; o < no; ++o) row[o] = alpha * tile[i][o] + beta * row[o];
      }
    }
    return;
  }
  for (std::size_t i = 0; i < ni; ++i) {
    copy_run(in + static_cast<std::ptrdiff_t>(i) * in_i, in_o, out + static_cast<std::ptrdiff_t>(i) * out_i, out_o, no,
             alpha, beta);
  }
}

// The copy over simplified dims, rows of the output's fastest mode.
template <class T>
void copy_rows(const T* in, T* out, std::vector<Dim> dims, T alpha, T beta, bool parallel, bool read_order) {
  const Dim inner = dims.back();
  dims.pop_back();
  // A gather visits the rows in the input's memory order (see strided_gather).
  if (read_order) {
    std::stable_sort(dims.begin(), dims.end(), [](const Dim& x, const Dim& y) { return x.in > y.in; });
  }
  std::size_t outer = 1;
  for (const Dim& d : dims) outer *= d.extent;
  const std::size_t total = outer * inner.extent;
  [[maybe_unused]] const bool par = run_parallel(parallel, total);
  // Too few rows to share among the threads: cut each row into pieces.
  std::size_t piece = inner.extent;
  if (par && outer < 8 * static_cast<std::size_t>(omp_get_max_threads()) && inner.extent > 2 * kRowPiece) {
    piece = kRowPiece;
  }
  const std::size_t pieces = (inner.extent + piece - 1) / piece;
  const std::size_t units = outer * pieces;
#pragma omp parallel if (par)
  {
    const auto threads = static_cast<std::size_t>(omp_get_num_threads());
    const auto me = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t begin = units * me / threads, end = units * (me + 1) / threads;
    if (begin < end) {
      Odometer at(dims, begin / pieces);
      std::size_t p = begin % pieces;
      for (std::size_t u = begin; u < end; ++u) {
        const std::size_t x0 = p * piece, n = std::min(piece, inner.extent - x0);
        const auto x = static_cast<std::ptrdiff_t>(x0);
        copy_row(in + at.in() + x * inner.in, inner.in, out + at.out() + x * inner.out, inner.out, n, alpha, beta);
        if (++p == pieces) {
          p = 0;
          at.next();
        }
      }
    }
  }
}

// The copy over simplified dims when the input's fastest mode (dims[fast]) is not the
// output's: both modes are cut into tiles.
template <class E, class T>
void copy_tiles(const E* in, E* out, std::vector<Dim> dims, std::size_t fast, T alpha, T beta, bool parallel) {
  const Dim o = dims.back();
  const Dim i = dims[fast];
  dims.pop_back();
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(fast));
  // The other modes run in the output's order, except the one nearest in the input, which
  // runs innermost: consecutive tiles then read on where the last one stopped, while the
  // mode nearest in the output (next outward) brings each output line back while it is
  // still in cache (the reversal f,e,d,c,b,a of 23 x 16 x 16 x 23 x 16 x 16 doubles:
  // 137 ms -> 91 ms, a memcpy of the same bytes 23 ms).
  if (!dims.empty()) {
    const auto near =
        std::min_element(dims.begin(), dims.end(), [](const Dim& x, const Dim& y) { return x.in < y.in; });
    std::rotate(near, near + 1, dims.end());
  }
  std::size_t outer = 1;
  for (const Dim& d : dims) outer *= d.extent;
  const std::size_t tiles_o = (o.extent + kTile - 1) / kTile, tiles_i = (i.extent + kTile - 1) / kTile;
  const std::size_t tiles = tiles_o * tiles_i;
  const std::size_t units = outer * tiles;
  [[maybe_unused]] const bool par = run_parallel(parallel, outer * o.extent * i.extent);
#pragma omp parallel if (par)
  {
    const auto threads = static_cast<std::size_t>(omp_get_num_threads());
    const auto me = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t begin = units * me / threads, end = units * (me + 1) / threads;
    if (begin < end) {
      Odometer at(dims, begin / tiles);
      std::size_t t = begin % tiles;
      for (std::size_t u = begin; u < end; ++u) {
        const std::size_t ti = t / tiles_o, to = t % tiles_o;
        const std::size_t i0 = ti * kTile, o0 = to * kTile;
        const std::ptrdiff_t in_off =
            at.in() + static_cast<std::ptrdiff_t>(i0) * i.in + static_cast<std::ptrdiff_t>(o0) * o.in;
        const std::ptrdiff_t out_off =
            at.out() + static_cast<std::ptrdiff_t>(i0) * i.out + static_cast<std::ptrdiff_t>(o0) * o.out;
        copy_tile(in + in_off, o.in, i.in, out + out_off, o.out, i.out, std::min(kTile, o.extent - o0),
                  std::min(kTile, i.extent - i0), alpha, beta);
        if (++t == tiles) {
          t = 0;
          at.next();
        }
      }
    }
  }
}

// The copy over simplified dims whose last is a pair of values contiguous in both arrays, as a
// transpose of pairs; false (nothing done) when the pairs are not where a transpose needs them.
template <class T>
bool copy_pairs(const T* in, T* out, const std::vector<Dim>& dims, T alpha, T beta, bool parallel) {
  std::vector<Dim> pairs(dims.begin(), dims.end() - 1);
  if (!halve_strides(pairs)) return false;
  std::size_t fast = pairs.size() - 1;
  for (std::size_t d = 0; d < pairs.size(); ++d) {
    if (pairs[d].in < pairs[fast].in) fast = d;
  }
  if (fast == pairs.size() - 1 || pairs.back().in <= 2) return false;
  copy_tiles(reinterpret_cast<const Pair<T>*>(in), reinterpret_cast<Pair<T>*>(out), std::move(pairs), fast, alpha, beta,
             parallel);
  return true;
}

template <class T>
void copy_dims(const T* in, T* out, std::vector<Dim> dims, T alpha, T beta, bool parallel, bool read_order = false) {
  if (!simplify(dims)) return;
  if (dims.empty()) {
    out[0] = beta == T(0) ? alpha * in[0] : alpha * in[0] + beta * out[0];
    return;
  }
  std::size_t fast = dims.size() - 1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].in < dims[fast].in) fast = d;
  }
  // Pairs of values that lie together in both arrays (complex numbers as their parts) with
  // the output's fastest mode of pairs not the input's: rows would be two values long, so the
  // pairs are tiled as elements of their own.
  if (fast == dims.size() - 1 && dims.size() >= 3 && dims.back().extent == 2 && dims.back().in == 1 &&
      dims.back().out == 1 && copy_pairs(in, out, dims, alpha, beta, parallel)) {
    return;
  }
  // Rows when the output's fastest mode is also the input's fastest, or when it is nearly
  // so (a short jump in the input still reads whole cache lines across a few rows).
  if (fast == dims.size() - 1 || dims.back().in <= 4) {
    copy_rows(in, out, std::move(dims), alpha, beta, parallel, read_order);
  } else {
    copy_tiles(in, out, std::move(dims), fast, alpha, beta, parallel);
  }
}

// Accumulates over the summed dims for each element of the kept dims (see reduce). E is the
// element summed, T the factor's type (E = T, or E = Pair<T>).
template <class E, class T>
void reduce_elements(const E* in, E* out, std::vector<Dim> kept, std::vector<Dim> summed, T alpha, bool parallel) {
  std::size_t kept_count = 1, summed_count = 1;
  for (const Dim& d : kept) kept_count *= d.extent;
  for (const Dim& d : summed) summed_count *= d.extent;
  [[maybe_unused]] const bool par = run_parallel(parallel, kept_count * summed_count);
  // Summed dims walk the input in memory order, fastest last.
  std::stable_sort(summed.begin(), summed.end(), [](const Dim& x, const Dim& y) { return x.in > y.in; });
  std::ptrdiff_t fastest_kept = -1;
  for (std::size_t d = 0; d < kept.size(); ++d) {
    if (fastest_kept < 0 || kept[d].in < kept[static_cast<std::size_t>(fastest_kept)].in) {
      fastest_kept = static_cast<std::ptrdiff_t>(d);
    }
  }
  const bool lanes =
      fastest_kept >= 0 && (summed.empty() || kept[static_cast<std::size_t>(fastest_kept)].in < summed.back().in);
  if (lanes) {
    // The input's fastest mode is kept: each summed index adds a whole lane of outputs
    // (contiguous reads), so the lane is the inner loop.
    const Dim lane = kept[static_cast<std::size_t>(fastest_kept)];
    kept.erase(kept.begin() + fastest_kept);
    std::size_t units = 1;
    for (const Dim& d : kept) units *= d.extent;
#pragma omp parallel if (par)
    {
      const auto threads = static_cast<std::size_t>(omp_get_num_threads());
      const auto me = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t begin = units * me / threads, end = units * (me + 1) / threads;
      if (begin < end) {
        Odometer at(kept, begin);
        for (std::size_t u = begin; u < end; ++u, at.next()) {
          Odometer s(summed, 0);
          for (std::size_t x = 0; x < summed_count; ++x, s.next()) {
            copy_run(in + at.in() + s.in(), lane.in, out + at.out(), lane.out, lane.extent, alpha,
                     x == 0 ? T(0) : T(1));
          }
        }
      }
    }
    return;
  }
  // The input's fastest mode is summed: each output is one sum with contiguous inner reads.
  const Dim inner = summed.back();
  summed.pop_back();
#pragma omp parallel if (par)
  {
    const auto threads = static_cast<std::size_t>(omp_get_num_threads());
    const auto me = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t begin = kept_count * me / threads, end = kept_count * (me + 1) / threads;
    if (begin < end) {
      std::size_t outer = summed_count / inner.extent;
      Odometer at(kept, begin);
      for (std::size_t u = begin; u < end; ++u, at.next()) {
        E sum{};
        Odometer s(summed, 0);
        for (std::size_t x = 0; x < outer; ++x, s.next()) {
          const E* p = in + at.in() + s.in();
          for (std::size_t y = 0; y < inner.extent; ++y) sum = sum + p[static_cast<std::ptrdiff_t>(y) * inner.in];
        }
        out[at.out()] = alpha * sum;
      }
    }
  }
}

// The reduction, with a last kept mode of two values that lie together in both arrays (complex
// numbers as their parts) merged into the kept mode just outside it where that is contiguous
// (a lane of whole numbers), or else summed as pairs: lanes or sums two values long would pay an
// index step for every number.
template <class T>
void reduce_dims(const T* in, T* out, std::vector<Dim> kept, std::vector<Dim> summed, T alpha, bool parallel) {
  const auto pair =
      std::find_if(kept.begin(), kept.end(), [](const Dim& d) { return d.extent == 2 && d.in == 1 && d.out == 1; });
  if (pair == kept.end()) {
    reduce_elements(in, out, std::move(kept), std::move(summed), alpha, parallel);
    return;
  }
  std::vector<Dim> kept_pairs = kept, summed_pairs = summed;
  kept_pairs.erase(kept_pairs.begin() + (pair - kept.begin()));
  if (!halve_strides(kept_pairs) || !halve_strides(summed_pairs)) {
    reduce_elements(in, out, std::move(kept), std::move(summed), alpha, parallel);
    return;
  }
  const auto next =
      std::find_if(kept_pairs.begin(), kept_pairs.end(), [](const Dim& d) { return d.in == 1 && d.out == 1; });
  if (next != kept_pairs.end()) {
    // The pair joins the kept mode contiguous in both arrays: one lane of whole numbers.
    kept.erase(pair);
    const auto joined = kept.begin() + (next - kept_pairs.begin());
    *joined = {joined->extent * 2, 1, 1};
    reduce_elements(in, out, std::move(kept), std::move(summed), alpha, parallel);
    return;
  }
  reduce_elements(reinterpret_cast<const Pair<T>*>(in), reinterpret_cast<Pair<T>*>(out), std::move(kept_pairs),
                  std::move(summed_pairs), alpha, parallel);
}

}  // namespace

void copy_dims_float(const float* in, float* out, std::vector<Dim> dims, float alpha, float beta, bool parallel,
                     bool read_order) {
  copy_dims(in, out, std::move(dims), alpha, beta, parallel, read_order);
}
void copy_dims_double(const double* in, double* out, std::vector<Dim> dims, double alpha, double beta, bool parallel,
                      bool read_order) {
  copy_dims(in, out, std::move(dims), alpha, beta, parallel, read_order);
}
void reduce_dims_float(const float* in, float* out, std::vector<Dim> kept, std::vector<Dim> summed, float alpha,
                       bool parallel) {
  reduce_dims(in, out, std::move(kept), std::move(summed), alpha, parallel);
}
void reduce_dims_double(const double* in, double* out, std::vector<Dim> kept, std::vector<Dim> summed, double alpha,
                        bool parallel) {
  reduce_dims(in, out, std::move(kept), std::move(summed), alpha, parallel);
}

}  // namespace tenex::detail::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tenex::detail::cpu {
namespace {

HWY_EXPORT(copy_dims_float);
HWY_EXPORT(copy_dims_double);
HWY_EXPORT(reduce_dims_float);
HWY_EXPORT(reduce_dims_double);

// The copy and the reduction of the target simd.hpp picks.
template <class T>
void copy_dims(const T* in, T* out, std::vector<Dim> dims, T alpha, T beta, bool parallel, bool read_order = false);
template <class T>
void reduce_dims(const T* in, T* out, std::vector<Dim> kept, std::vector<Dim> summed, T alpha, bool parallel);

// Complex elements as pairs of reals: the strides doubled and a last mode of extent 2 (the real
// and imaginary parts, next to each other in both), so that the real kernels move them.
std::vector<Dim> as_pairs(std::vector<Dim> dims) {
  for (Dim& d : dims) {
    d.in *= 2;
    d.out *= 2;
  }
  dims.push_back({2, 1, 1});
  return dims;
}

// out = alpha in + beta out over complex dims, one element at a time: the factors that are not
// real (a rare statement, i a("j,i")).
template <class T>
void copy_dims_complex(const T* in, T* out, const std::vector<Dim>& dims, T alpha, T beta, bool parallel) {
  std::size_t count = 1;
  for (const Dim& d : dims) count *= d.extent;
  [[maybe_unused]] const bool par = parallel && count >= kParallelMin;
#pragma omp parallel for if (par)
  for (std::size_t flat = 0; flat < count; ++flat) {
    std::ptrdiff_t i = 0, o = 0;
    std::size_t rest = flat;
    for (std::size_t d = dims.size(); d-- > 0;) {
      const auto x = static_cast<std::ptrdiff_t>(rest % dims[d].extent);
      rest /= dims[d].extent;
      i += x * dims[d].in;
      o += x * dims[d].out;
    }
    out[o] = beta == T(0) ? alpha * in[i] : alpha * in[i] + beta * out[o];
  }
}

template <class T>
void copy_dims(const T* in, T* out, std::vector<Dim> dims, T alpha, T beta, bool parallel, bool read_order) {
  if constexpr (is_complex_v<T>) {
    using R = real_type_t<T>;
    if (alpha.imag() == 0 && beta.imag() == 0) {
      copy_dims(reinterpret_cast<const R*>(in), reinterpret_cast<R*>(out), as_pairs(std::move(dims)), alpha.real(),
                beta.real(), parallel, read_order);
    } else {
      copy_dims_complex(in, out, dims, alpha, beta, parallel);
    }
  } else if constexpr (std::is_same_v<T, double>) {
    TENEX_SIMD_DISPATCH(copy_dims_double)(in, out, std::move(dims), alpha, beta, parallel, read_order);
  } else {
    TENEX_SIMD_DISPATCH(copy_dims_float)(in, out, std::move(dims), alpha, beta, parallel, read_order);
  }
}
template <class T>
void reduce_dims(const T* in, T* out, std::vector<Dim> kept, std::vector<Dim> summed, T alpha, bool parallel) {
  if constexpr (is_complex_v<T>) {
    // Sums of complex numbers are sums of their parts; a factor that is not real scales the
    // (smaller) result afterwards.
    using R = real_type_t<T>;
    for (Dim& d : summed) {
      d.in *= 2;
      d.out *= 2;
    }
    std::vector<Dim> kept_pairs = as_pairs(kept);
    const R real_alpha = alpha.imag() == 0 ? alpha.real() : R(1);
    reduce_dims(reinterpret_cast<const R*>(in), reinterpret_cast<R*>(out), std::move(kept_pairs), std::move(summed),
                real_alpha, parallel);
    if (alpha.imag() != 0) {
      std::vector<Dim> in_place = kept;
      for (Dim& d : in_place) d.in = d.out;
      copy_dims_complex(out, out, in_place, alpha, T(0), parallel);
    }
  } else if constexpr (std::is_same_v<T, double>) {
    TENEX_SIMD_DISPATCH(reduce_dims_double)(in, out, std::move(kept), std::move(summed), alpha, parallel);
  } else {
    TENEX_SIMD_DISPATCH(reduce_dims_float)(in, out, std::move(kept), std::move(summed), alpha, parallel);
  }
}

}  // namespace

template <class T>
KernelCount strided_copy(const T* in, const Strides& in_strides, T* out, const Strides& out_strides,
                         const Extents& extents, T alpha, T beta, bool parallel) {
  if (in_strides.size() != extents.size() || out_strides.size() != extents.size()) {
    throw std::invalid_argument("strided_copy: " + std::to_string(extents.size()) + " extents but " +
                                std::to_string(in_strides.size()) + " input and " + std::to_string(out_strides.size()) +
                                " output strides");
  }
  std::vector<Dim> dims(extents.size());
  for (std::size_t d = 0; d < extents.size(); ++d) dims[d] = {extents[d], in_strides[d], out_strides[d]};
  copy_dims(in, out, std::move(dims), alpha, beta, parallel);
  return {copy_flops(product(extents), alpha, beta), 1};
}

template <class T>
void strided_gather(const T* in, const Strides& in_strides, T* out, const Strides& out_strides,
                    const Extents& extents) {
  std::vector<Dim> dims(extents.size());
  for (std::size_t d = 0; d < extents.size(); ++d) dims[d] = {extents[d], in_strides.at(d), out_strides.at(d)};
  copy_dims(in, out, std::move(dims), T(1), T(0), false, true);
}

template <class T>
KernelCount permute(const T* in, const Extents& in_extents, const std::vector<std::size_t>& perm, T* out, T alpha) {
  const std::size_t rank = in_extents.size();
  if (perm.size() != rank) {
    throw std::invalid_argument("permute: permutation of length " + std::to_string(perm.size()) +
                                " for a tensor of rank " + std::to_string(rank));
  }
  std::vector<bool> seen(rank, false);
  for (std::size_t p : perm) {
    if (p >= rank || seen[p]) throw std::invalid_argument("permute: the permutation repeats or exceeds a mode");
    seen[p] = true;
  }
  const Strides in_strides = row_major_strides(in_extents);
  Extents out_extents(rank);
  for (std::size_t d = 0; d < rank; ++d) out_extents[d] = in_extents[perm[d]];
  const Strides out_strides = row_major_strides(out_extents);
  std::vector<Dim> dims(rank);
  for (std::size_t d = 0; d < rank; ++d) dims[d] = {out_extents[d], in_strides[perm[d]], out_strides[d]};
  // The identity permutation simplifies to one contiguous row: a scaled copy.
  copy_dims(in, out, std::move(dims), alpha, T(0), true);
  return {copy_flops(product(in_extents), alpha, T(0)), 1};
}

template <class T>
KernelCount reduce(const T* in, const Extents& in_extents, const Modes& in_modes, T* out, const Modes& out_modes,
                   T alpha) {
  if (in_extents.size() != in_modes.size()) {
    throw std::invalid_argument("reduce: " + std::to_string(in_modes.size()) + " modes for " +
                                std::to_string(in_extents.size()) + " extents");
  }
  const Strides in_strides = row_major_strides(in_extents);
  // Distinct ids of the input in order of first appearance; a repeated id is a diagonal,
  // addressed with the sum of the strides of its occurrences.
  Modes ids;
  std::vector<Dim> modes;  // per distinct id: extent, input stride
  bool repeated = false;
  for (std::size_t p = 0; p < in_modes.size(); ++p) {
    auto it = std::find(ids.begin(), ids.end(), in_modes[p]);
    if (it == ids.end()) {
      ids.push_back(in_modes[p]);
      modes.push_back({in_extents[p], in_strides[p], 0});
      continue;
    }
    Dim& d = modes[static_cast<std::size_t>(it - ids.begin())];
    if (d.extent != in_extents[p]) {
      throw std::invalid_argument("reduce: mode " + std::to_string(in_modes[p]) + " repeats with extents " +
                                  std::to_string(d.extent) + " and " + std::to_string(in_extents[p]));
    }
    d.in += in_strides[p];
    repeated = true;
  }
  std::vector<bool> kept(ids.size(), false);
  Extents out_extents;
  for (int id : out_modes) {
    auto it = std::find(ids.begin(), ids.end(), id);
    if (it == ids.end())
      throw std::invalid_argument("reduce: output mode " + std::to_string(id) + " is not an input mode");
    const auto x = static_cast<std::size_t>(it - ids.begin());
    if (kept[x]) throw std::invalid_argument("reduce: output mode " + std::to_string(id) + " repeats");
    kept[x] = true;
    out_extents.push_back(modes[x].extent);
  }
  if (!repeated && out_modes.size() == in_modes.size()) {
    std::vector<std::size_t> perm;
    for (int id : out_modes)
      perm.push_back(static_cast<std::size_t>(std::find(in_modes.begin(), in_modes.end(), id) - in_modes.begin()));
    return permute(in, in_extents, perm, out, alpha);
  }
  const std::size_t out_size = product(out_extents);
  if (out_size == 0) return {0, 0};
  const Strides out_strides = row_major_strides(out_extents);
  std::vector<Dim> kept_dims, summed_dims;
  for (std::size_t d = 0; d < out_modes.size(); ++d) {
    const auto x = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), out_modes[d]) - ids.begin());
    if (modes[x].extent > 1) kept_dims.push_back({modes[x].extent, modes[x].in, out_strides[d]});
  }
  std::size_t summed_count = 1;
  for (std::size_t x = 0; x < ids.size(); ++x) {
    if (kept[x]) continue;
    summed_count *= modes[x].extent;
    if (modes[x].extent > 1) summed_dims.push_back(modes[x]);
  }
  if (summed_count == 0) {
    // An empty sum.
    [[maybe_unused]] const bool par = run_parallel(true, out_size);
#pragma omp parallel for if (par)
    for (std::size_t x = 0; x < out_size; ++x) out[x] = T(0);
    return {0, 1};
  }
  if (summed_dims.empty()) {
    // Only diagonals and extent-1 sums: a strided copy.
    copy_dims(in, out, std::move(kept_dims), alpha, T(0), true);
    return {copy_flops(out_size, alpha, T(0)), 1};
  }
  reduce_dims(in, out, std::move(kept_dims), std::move(summed_dims), alpha, true);
  return {static_cast<double>(out_size) * static_cast<double>(summed_count), 1};
}

#define TENEX_INSTANTIATE_PERMUTE(T)                                                                              \
  template KernelCount strided_copy<T>(const T*, const Strides&, T*, const Strides&, const Extents&, T, T, bool); \
  template void strided_gather<T>(const T*, const Strides&, T*, const Strides&, const Extents&);                  \
  template KernelCount permute<T>(const T*, const Extents&, const std::vector<std::size_t>&, T*, T);              \
  template KernelCount reduce<T>(const T*, const Extents&, const Modes&, T*, const Modes&, T);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_PERMUTE)
#undef TENEX_INSTANTIATE_PERMUTE

}  // namespace tenex::detail::cpu
#endif  // HWY_ONCE
