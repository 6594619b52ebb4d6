// Loop nests over GEMMs: the modes a plan does not fuse into the GEMM are loops around it,
// over independent GEMMs (modes of c) or accumulating ones (contracted modes).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "tenex/backend/cpu/gemm_call.hpp"

namespace tenex::detail::cpu::contraction {

struct Loop {
  std::size_t extent;
  std::ptrdiff_t a, b, c;  // element strides (0 where the operand lacks the mode)
};

struct Nest {
  Geometry gemm;
  std::vector<Loop> outer;  // modes of c: independent GEMMs
  std::vector<Loop> inner;  // contracted modes not fused into k: accumulate
};

inline std::size_t count(std::span<const Loop> loops) {
  std::size_t n = 1;
  for (const Loop& l : loops) n *= l.extent;
  return n;
}

// Offsets of the linear index `x` of `loops` (row-major).
inline void offsets(std::span<const Loop> loops, std::size_t x, std::ptrdiff_t& a, std::ptrdiff_t& b,
                    std::ptrdiff_t& c) {
  for (std::size_t d = loops.size(); d-- > 0;) {
    const auto i = static_cast<std::ptrdiff_t>(x % loops[d].extent);
    x /= loops[d].extent;
    a += i * loops[d].a;
    b += i * loops[d].b;
    c += i * loops[d].c;
  }
}

// Runs the nest: c = alpha a b + beta c, with beta applied by the first GEMM into each part
// of c (beta == 0: c is not read). Returns the number of GEMM calls.
//
// With `parallel`, the GEMMs are shared among the OpenMP threads as partition_threads says:
// as tasks, each calling a single-threaded GEMM; by cutting the sums, each thread summing into
// its own copy of c; else the GEMMs run one after the other, each threaded by the BLAS.
template <class T>
std::size_t run_nest(const Nest& nest, T alpha, const T* a, const T* b, T beta, T* c, bool parallel);

}  // namespace tenex::detail::cpu::contraction
