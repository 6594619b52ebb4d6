// The GETT kernel's micro-kernels (gett_kernel.hpp): the sums of a panel's rows times a strip
// kept in the registers (packed, or read where a row lies), and the stores that scale them into
// c (masked runs, whole lines past the caches, tiles turned in the registers). Over Highway's
// portable vectors (simd_vector_inl.hpp); gett_kernel.cpp, which compiles itself once per SIMD
// target (hwy/foreach_target.h), includes this header in each pass: hence Highway's per-target
// guard instead of #pragma once. Only that file includes it.
// NOLINT(llvm-header-guard)
#if defined(TENEX_GETT_MICRO_KERNELS_INL_HPP_) == defined(HWY_TARGET_TOGGLE)
#ifdef TENEX_GETT_MICRO_KERNELS_INL_HPP_
#undef TENEX_GETT_MICRO_KERNELS_INL_HPP_
#else
#define TENEX_GETT_MICRO_KERNELS_INL_HPP_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tenex/backend/cpu/simd_vector_inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::contraction::HWY_NAMESPACE {
using cpu::HWY_NAMESPACE::transpose;
using cpu::HWY_NAMESPACE::Vec;
// Internal linkage: each kernel file compiles itself per target into the same namespaces.
namespace {

// A run of one vector's lanes that lie together in c.
struct Span {
  std::ptrdiff_t to = 0;  // c's offset of the lane `first`, the panel operand's aside
  std::size_t first = 0, length = 0;
};

template <class T>
void copy_run(const T* from, T* to, std::size_t length) {
  using X = Vec<T>;
  if (length >= X::width) {
    X::store(to, X::load(from));
    if (length > X::width) {
      const auto rest = Vec<T>::lanes(length - X::width);
      X::store(rest, to + X::width, X::load(rest, from + X::width));
    }
    return;
  }
  const auto part = Vec<T>::lanes(length);
  X::store(part, to, X::load(part, from));
}

// The sums of R rows and one strip over kc values of K, added to `acc`: `strip` is
// [kc][2 vectors], `panel` [kc][R].
template <class T, std::size_t R>
HWY_INLINE void accumulate(typename Vec<T>::V (&acc)[R][2], const T* strip, const T* panel, std::size_t kc) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  for (std::size_t k = 0; k < kc; ++k) {
    const typename X::V b0 = X::load(strip + k * 2 * W), b1 = X::load(strip + k * 2 * W + W);
    const T* row = panel + k * R;
    for (std::size_t r = 0; r < R; ++r) {
      const typename X::V x = X::set1(row[r]);
      acc[r][0] = X::fma(x, b0, acc[r][0]);
      acc[r][1] = X::fma(x, b1, acc[r][1]);
    }
  }
}

// As accumulate, the sums coming from `sums` (rows `ld` apart) unless `first`, and going
// back there. This kernel and strip_to_c are never inlined: inlined into block_task, GCC kept
// one of the sums on the stack inside the loop over K (yhqam,ea->yehqm: 0.66 ms,
// 0.85 ms so). in_place_kernel always is: out of line, GCC stored all its sums to the stack
// at every k (ecbfa,fd->abcde in float: 18 ms, 31 ms so).
template <class T, std::size_t R>
HWY_NOINLINE void strip_kernel(const T* strip, const T* panel, std::size_t kc, T* sums, std::size_t ld, bool first) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  typename X::V acc[R][2];
  for (std::size_t r = 0; r < R; ++r) {
    acc[r][0] = first ? X::zero() : X::load(sums + r * ld);
    acc[r][1] = first ? X::zero() : X::load(sums + r * ld + W);
  }
  accumulate<T, R>(acc, strip, panel, kc);
  for (std::size_t r = 0; r < R; ++r) {
    X::store(sums + r * ld, acc[r][0]);
    X::store(sums + r * ld + W, acc[r][1]);
  }
}

// As accumulate over all of K, the sums scaled into c: rows `c_rows` (`count` of them, at
// most R), the lanes of vector v by spans[v] (spans[2] ends them).
template <class T, std::size_t R>
HWY_NOINLINE void strip_to_c(const T* strip, const T* panel, std::size_t kk, const std::ptrdiff_t* c_rows,
                             std::size_t count, const Span* const (&spans)[3], T alpha, T beta, T* c, bool stream) {
  using X = Vec<T>;
  typename X::V acc[R][2];
  for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = X::zero();
  accumulate<T, R>(acc, strip, panel, kk);
  const typename X::V va = X::set1(alpha), vb = X::set1(beta);
  for (std::size_t r = 0; r < count; ++r) {
    // Each span's lanes stored where they lie in c: the vector's base moved back by `first`
    // (lanes outside the mask are neither read nor written).
    const auto base = reinterpret_cast<std::uintptr_t>(c + c_rows[r]);
    for (std::size_t v = 0; v < 2; ++v) {
      const typename X::V scaled = X::mul(va, acc[r][v]);
      for (const Span* sp = spans[v]; sp != spans[v + 1]; ++sp) {
        T* to = reinterpret_cast<T*>(
            base + static_cast<std::uintptr_t>(sp->to - static_cast<std::ptrdiff_t>(sp->first)) * sizeof(T));
        if (stream && sp->length == X::width && reinterpret_cast<std::uintptr_t>(to) % (X::width * sizeof(T)) == 0) {
          X::stream(to, scaled);
          continue;
        }
        const auto mask = Vec<T>::lanes(sp->length, sp->first);
        X::store(mask, to, beta == T(0) ? scaled : X::fma(vb, X::load(mask, to), scaled));
      }
    }
  }
}

// A tile of sums turned in the registers: `tall` rows `step` apart from `from`, `wide` values
// each (the rest zero), so that tile[u] holds value u of every row.
template <class T>
HWY_INLINE void turned_tile(const T* from, std::size_t step, std::size_t tall, std::size_t wide,
                            typename Vec<T>::V (&tile)[Vec<T>::width]) {
  using X = Vec<T>;
  const auto in_row = Vec<T>::lanes(wide);
#pragma GCC unroll 16
  for (std::size_t t = 0; t < X::width; ++t) tile[t] = t < tall ? X::load(in_row, from + t * step) : X::zero();
  transpose<T>(tile);
}

// `length` values of `from` (at most a vector), scaled into c at `to`.
template <class T>
HWY_INLINE void store_part(const T* from, std::size_t length, T* to, typename Vec<T>::V va, typename Vec<T>::V vb,
                           bool only_written) {
  using X = Vec<T>;
  const typename X::Mask mask = Vec<T>::lanes(length);
  const typename X::V x = X::mul(va, X::load(mask, from));
  X::store(mask, to, only_written ? x : X::fma(vb, X::load(mask, to), x));
}

// `count` values of `from`, scaled into c at `to` in order: the lines `to` covers whole stored
// past the caches where `stream` (the first and last parts masked).
template <class T>
void store_range(const T* from, std::size_t count, T* to, T alpha, T beta, bool stream) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  const typename X::V va = X::set1(alpha), vb = X::set1(beta);
  // Up to the first 64-byte line of c, then whole vectors, then the rest.
  const std::size_t head = std::min(count, (64 - reinterpret_cast<std::uintptr_t>(to) % 64) % 64 / sizeof(T));
  const bool streamed = stream && beta == T(0) && reinterpret_cast<std::uintptr_t>(to + head) % 64 == 0;
  // The head spans more than a vector where a vector is narrower than a line.
  for (std::size_t h = 0; h < head; h += W) store_part(from + h, std::min(W, head - h), to + h, va, vb, beta == T(0));
  std::size_t j = head;
  if (streamed) {
    for (; j + W <= count; j += W) X::stream(to + j, X::mul(va, X::load(from + j)));
  } else if (beta == T(0)) {
    for (; j + W <= count; j += W) X::store(to + j, X::mul(va, X::load(from + j)));
  } else {
    for (; j + W <= count; j += W) X::store(to + j, X::fma(vb, X::load(to + j), X::mul(va, X::load(from + j))));
  }
  if (j < count) store_part(from + j, count - j, to + j, va, vb, beta == T(0));
}

// The sums of R rows and V vectors of a row of the strip operand read where it lies
// (`strip` + strip_k[k], the first `length` values), into `sums` (rows `ld` apart); where
// `next` is given, every line its first `next_bytes` touch at each k from `fetch_from`, for
// `fetch_count` values of K, is fetched into the caches meanwhile (efbad,cf->abcde in
// float: rows of 104 bytes, which span three lines from most of their starts; with two lines
// fetched a row, 42 ms, with all, 21 ms).
template <class T, std::size_t R, std::size_t V>
HWY_INLINE void in_place_kernel(const T* strip, const std::ptrdiff_t* strip_k, const T* panel, std::size_t kc,
                                std::size_t length, T* sums, std::size_t ld, const T* next, std::size_t next_bytes,
                                std::size_t fetch_from, std::size_t fetch_count) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  const typename X::Mask m0 = Vec<T>::lanes(std::min(W, length)), m1 = Vec<T>::lanes(length > W ? length - W : 0);
  typename X::V acc[R][V];
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t v = 0; v < V; ++v) acc[r][v] = X::zero();
  }
  for (std::size_t k = 0; k < kc; ++k) {
    const T* from = strip + strip_k[k];
    if (next != nullptr && k - fetch_from < fetch_count) {
      const auto ahead = reinterpret_cast<std::uintptr_t>(next + strip_k[k]);
      for (std::uintptr_t line = ahead & ~std::uintptr_t{63}; line < ahead + next_bytes; line += 64)
        hwy::Prefetch(reinterpret_cast<const char*>(line));
    }
    typename X::V b[V];
    b[0] = X::load(m0, from);
    if constexpr (V == 2) b[1] = X::load(m1, from + W);
    const T* row = panel + k * R;
    for (std::size_t r = 0; r < R; ++r) {
      const typename X::V x = X::set1(row[r]);
      for (std::size_t v = 0; v < V; ++v) acc[r][v] = X::fma(x, b[v], acc[r][v]);
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    X::store(m0, sums + r * ld, acc[r][0]);
    if constexpr (V == 2) X::store(m1, sums + r * ld + W, acc[r][1]);
  }
}

}  // namespace
}  // namespace tenex::detail::cpu::contraction::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // TENEX_GETT_MICRO_KERNELS_INL_HPP_
