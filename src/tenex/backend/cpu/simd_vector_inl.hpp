// Vectors of float and double for the kernels that do their own arithmetic (gett_kernel.cpp,
// narrow_kernel.cpp), over Google Highway's portable vectors. A file that compiles itself once
// per SIMD target (hwy/foreach_target.h, simd.hpp) includes this header in each pass: hence
// Highway's per-target guard instead of #pragma once.
// NOLINT(llvm-header-guard)
#if defined(TENEX_SIMD_VECTOR_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef TENEX_SIMD_VECTOR_INL_HPP_
#undef TENEX_SIMD_VECTOR_INL_HPP_
#else
#define TENEX_SIMD_VECTOR_INL_HPP_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Vector registers of the target: tiles of sums kept in registers are sized from it.
constexpr std::size_t kVectorRegisters =
    (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_ARCH_ARM) ? 32 : 16;

template <class T>
struct Vec {
  using D = hn::ScalableTag<T>;
  using V = hn::Vec<D>;
  static constexpr std::size_t width = hn::MaxLanes(D());

  static HWY_INLINE V zero() { return hn::Zero(D()); }
  static HWY_INLINE V set1(T x) { return hn::Set(D(), x); }
  static HWY_INLINE V load(const T* x) { return hn::LoadU(D(), x); }
  static HWY_INLINE V fma(V x, V y, V z) { return hn::MulAdd(x, y, z); }
  static HWY_INLINE V mul(V x, V y) { return hn::Mul(x, y); }
  static HWY_INLINE void store(T* to, V x) { hn::StoreU(x, D(), to); }
  // A store past the caches (`to` aligned to a vector): a plain store where the target has none.
  static HWY_INLINE void stream(T* to, V x) { hn::Stream(x, D(), to); }

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  // Lanes [first, first + count): masked loads and stores of the hardware, which neither read
  // nor write the lanes outside the mask.
  using Mask = hn::Mask<D>;
  static HWY_INLINE Mask lanes(std::size_t count, std::size_t first = 0) {
    const D d;
    return hn::AndNot(hn::FirstN(d, first), hn::FirstN(d, first + count));
  }
  static HWY_INLINE V load(Mask m, const T* x) { return hn::MaskedLoad(m, D(), x); }
  static HWY_INLINE void store(Mask m, T* to, V x) { hn::BlendedStore(x, m, D(), to); }
  static HWY_INLINE V keep(Mask m, V x) { return hn::IfThenElseZero(m, x); }
#else
  // Elsewhere a masked load reads the whole vector (past the end of an array), so the lanes
  // go through a buffer one at a time.
  struct Mask {
    std::size_t first = 0, count = 0;
  };
  static HWY_INLINE Mask lanes(std::size_t count, std::size_t first = 0) { return Mask{first, count}; }
  static HWY_INLINE V load(Mask m, const T* x) {
    if (m.first == 0 && m.count == width) return load(x);
    HWY_ALIGN T values[width] = {};
    for (std::size_t l = m.first; l < m.first + m.count; ++l) values[l] = x[l];
    return hn::Load(D(), values);
  }
  static HWY_INLINE void store(Mask m, T* to, V x) {
    if (m.first == 0 && m.count == width) return store(to, x);
    HWY_ALIGN T values[width];
    hn::Store(x, D(), values);
    for (std::size_t l = m.first; l < m.first + m.count; ++l) to[l] = values[l];
  }
  static HWY_INLINE V keep(Mask m, V x) {
    const D d;
    return hn::IfThenElseZero(hn::AndNot(hn::FirstN(d, m.first), hn::FirstN(d, m.first + m.count)), x);
  }
#endif

  // base[index[lane]] in the lanes of m, zero in the others (index holds `width` values, those
  // outside m valid offsets too, e.g. 0). Offsets of float operands fit 32 bits (the kernels
  // take no larger ones).
  static HWY_INLINE V gather(Mask m, const T* base, const std::ptrdiff_t* index) {
    const D d;
    const hn::RebindToSigned<D> di;
    using I = hn::TFromD<decltype(di)>;
    if constexpr (std::is_same_v<I, std::ptrdiff_t>) {
      return keep(m, hn::GatherIndex(d, base, hn::LoadU(di, index)));
    } else {
      HWY_ALIGN I narrow[width];
      for (std::size_t l = 0; l < width; ++l) narrow[l] = static_cast<I>(index[l]);
      return keep(m, hn::GatherIndex(d, base, hn::Load(di, narrow)));
    }
  }
};

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
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

HWY_INLINE hn::Vec512<double> permute2(hn::Vec512<double> x, __m512i index, hn::Vec512<double> y) {
  return hn::Vec512<double>{_mm512_permutex2var_pd(x.raw, index, y.raw)};
}
HWY_INLINE hn::Vec512<float> permute2(hn::Vec512<float> x, __m512i index, hn::Vec512<float> y) {
  return hn::Vec512<float>{_mm512_permutex2var_ps(x.raw, index, y.raw)};
}

// x[i][l] becomes x[l][i] (a square of Vec<T>::width vectors): the off-diagonal halves
// swapped, then the quarters within each half, and so on, in the registers.
template <class T>
HWY_INLINE void transpose(typename Vec<T>::V (&x)[Vec<T>::width]) {
  constexpr std::size_t W = Vec<T>::width;
  using Index = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;
  static constexpr TurnIndex<Index, W> turn{};
  std::size_t s = 0;
#pragma GCC unroll 8
  for (std::size_t b = W / 2; b > 0; b /= 2, ++s) {
    const __m512i low = _mm512_loadu_si512(turn.low[s]), high = _mm512_loadu_si512(turn.high[s]);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < W; ++i) {
      if ((i & b) != 0) continue;
      const typename Vec<T>::V lo = permute2(x[i], low, x[i + b]);
      x[i + b] = permute2(x[i], high, x[i + b]);
      x[i] = lo;
    }
  }
}
#else
// x[i][l] becomes x[l][i] (a square of Vec<T>::width vectors), through a buffer.
template <class T>
HWY_INLINE void transpose(typename Vec<T>::V (&x)[Vec<T>::width]) {
  constexpr std::size_t W = Vec<T>::width;
  const typename Vec<T>::D d;
  HWY_ALIGN T square[W * W];
  for (std::size_t i = 0; i < W; ++i) hn::Store(x[i], d, square + i * W);
  HWY_ALIGN T turned[W * W];
  for (std::size_t i = 0; i < W; ++i) {
    for (std::size_t l = 0; l < W; ++l) turned[l * W + i] = square[i * W + l];
  }
  for (std::size_t i = 0; i < W; ++i) x[i] = hn::Load(d, turned + i * W);
}
#endif

}  // namespace tenex::detail::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // TENEX_SIMD_VECTOR_INL_HPP_
