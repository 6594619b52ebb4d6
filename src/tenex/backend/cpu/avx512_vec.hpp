// AVX-512 vectors of float and double for the kernels that do their own arithmetic
// (narrow_kernel.cpp, gett_kernel.cpp). Each function carries the avx512f target, so that
// the library builds for any x86-64; callers check avx512_available() before they run one.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace tenex::detail::cpu::contraction {

// Whether the CPU runs AVX-512F code.
inline bool avx512_available() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

template <class T>
struct Vec;

#define TENEX_AVX512 __attribute__((target("avx512f"), always_inline)) static inline

template <>
struct Vec<double> {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr std::size_t width = 8;
  TENEX_AVX512 V zero() { return _mm512_setzero_pd(); }
  TENEX_AVX512 V set1(double x) { return _mm512_set1_pd(x); }
  TENEX_AVX512 V load(const double* x) { return _mm512_loadu_pd(x); }
  TENEX_AVX512 V load(Mask m, const double* x) { return _mm512_maskz_loadu_pd(m, x); }
  TENEX_AVX512 V fma(V x, V y, V z) { return _mm512_fmadd_pd(x, y, z); }
  TENEX_AVX512 V mul(V x, V y) { return _mm512_mul_pd(x, y); }
  TENEX_AVX512 void store(double* to, V x) { _mm512_storeu_pd(to, x); }
  TENEX_AVX512 void store(Mask m, double* to, V x) { _mm512_mask_storeu_pd(to, m, x); }
  // A store past the caches (`to` 64-byte aligned).
  TENEX_AVX512 void stream(double* to, V x) { _mm512_stream_pd(to, x); }
  // base[index[lane]] in the lanes of m, zero in the others (index holds `width` values).
  TENEX_AVX512 V gather(Mask m, const double* base, const std::ptrdiff_t* index) {
    return _mm512_mask_i64gather_pd(_mm512_setzero_pd(), m, _mm512_loadu_si512(index), base, 8);
  }
  // Lanes of the two-source permute: index[l] < width picks x[index[l]], else y[index[l] - width].
  using Index = std::int64_t;
  TENEX_AVX512 V permute2(V x, __m512i index, V y) { return _mm512_permutex2var_pd(x, index, y); }
};

template <>
struct Vec<float> {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr std::size_t width = 16;
  TENEX_AVX512 V zero() { return _mm512_setzero_ps(); }
  TENEX_AVX512 V set1(float x) { return _mm512_set1_ps(x); }
  TENEX_AVX512 V load(const float* x) { return _mm512_loadu_ps(x); }
  TENEX_AVX512 V load(Mask m, const float* x) { return _mm512_maskz_loadu_ps(m, x); }
  TENEX_AVX512 V fma(V x, V y, V z) { return _mm512_fmadd_ps(x, y, z); }
  TENEX_AVX512 V mul(V x, V y) { return _mm512_mul_ps(x, y); }
  TENEX_AVX512 void store(float* to, V x) { _mm512_storeu_ps(to, x); }
  TENEX_AVX512 void store(Mask m, float* to, V x) { _mm512_mask_storeu_ps(to, m, x); }
  TENEX_AVX512 void stream(float* to, V x) { _mm512_stream_ps(to, x); }
  TENEX_AVX512 V gather(Mask m, const float* base, const std::ptrdiff_t* index) {
    const __m256 low =
        _mm512_mask_i64gather_ps(_mm256_setzero_ps(), static_cast<__mmask8>(m), _mm512_loadu_si512(index), base, 4);
    const __m256 high = _mm512_mask_i64gather_ps(_mm256_setzero_ps(), static_cast<__mmask8>(m >> 8),
                                                 _mm512_loadu_si512(index + 8), base, 4);
    // The masked inserts: the unmasked ones start from an undefined vector, which GCC 12
    // reports as maybe uninitialised.
    const __m512d zero = _mm512_setzero_pd();
    const __m512d half = _mm512_mask_insertf64x4(zero, 0xFF, zero, _mm256_castps_pd(low), 0);
    return _mm512_castpd_ps(_mm512_mask_insertf64x4(half, 0xFF, half, _mm256_castps_pd(high), 1));
  }
  using Index = std::int32_t;
  TENEX_AVX512 V permute2(V x, __m512i index, V y) { return _mm512_permutex2var_ps(x, index, y); }
};

// The lane indices of the two-source permutes that turn a square of vectors (transpose() below):
// at the stage that pairs rows i and i + b (i without bit b), row i takes the lanes without
// bit b from both rows (low), row i + b those with it (high). Stage s has b = W >> (s + 1).
template <class Index, std::size_t W>
struct TurnIndex {
  Index low[8][W] = {}, high[8][W] = {};
  constexpr TurnIndex() {
    for (std::size_t s = 0, b = W / 2; b > 0; ++s, b /= 2) {
      for (std::size_t l = 0; l < W; ++l) {
        const bool bit = (l & b) != 0;
        low[s][l] = static_cast<Index>(bit ? W + l - b : l);
        high[s][l] = static_cast<Index>(bit ? W + l : l + b);
      }
    }
  }
};

// x[i][l] becomes x[l][i] (a square of Vec<T>::width vectors): the off-diagonal halves
// swapped, then the quarters within each half, and so on.
template <class T>
__attribute__((target("avx512f"), always_inline)) inline void transpose(typename Vec<T>::V (&x)[Vec<T>::width]) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  static constexpr TurnIndex<typename X::Index, W> turn{};
  std::size_t s = 0;
#pragma GCC unroll 8
  for (std::size_t b = W / 2; b > 0; b /= 2, ++s) {
    const __m512i low = _mm512_loadu_si512(turn.low[s]), high = _mm512_loadu_si512(turn.high[s]);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < W; ++i) {
      if ((i & b) != 0) continue;
      const typename X::V lo = X::permute2(x[i], low, x[i + b]);
      x[i + b] = X::permute2(x[i], high, x[i + b]);
      x[i] = lo;
    }
  }
}

#undef TENEX_AVX512

// Lanes [first, first + count) of a vector of T (first + count <= Vec<T>::width).
template <class T>
typename Vec<T>::Mask lanes(std::size_t count, std::size_t first = 0) {
  using Mask = typename Vec<T>::Mask;
  return static_cast<Mask>(((std::uint32_t{1} << count) - 1) << first);
}

}  // namespace tenex::detail::cpu::contraction
