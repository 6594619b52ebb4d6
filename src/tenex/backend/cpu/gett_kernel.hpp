// The GETT kernel: a contraction one of whose operands has few free values (at most
// kGettMost), computed without a BLAS call and without a permutation of the large operand
// through memory (GETT, arXiv 1607.00145: the GEMM's packing reads the tensors' own strides).
//
// c[M, N] = sum over K of small[M, K] big[K, N], with M (the small operand's free values) at
// most kGettMost, whatever the large operand's layout. The small operand is packed once into
// panels of R rows ([K][R] each, R <= 12). The large one is packed a block at a time (K in
// blocks of at most 256 values, N in blocks of a few hundred) from its own strides into
// strips of two AVX-512 vectors ([k][16] doubles), in cache; each strip is multiplied by every
// panel (R x 2 vector sums, the panel's values broadcast), the sums of a block of N kept in a
// buffer across the blocks of K, then written to c at its strides. The large operand is read
// once, in its memory order, a contiguous run of its stride-1 mode at a time.
//
// It serves the skinny shapes the narrow kernel does not take, the large operand's stride-1
// mode a free one (nyvbl,bsnwyp->svlpw: M = 12, N = 1584, K = 1620, where every GEMM plan
// permutes the large operand or calls the BLAS on rows of 8). Only offered where the CPU has
// AVX-512 (avx512_available()), without batch modes, and always timed, never chosen by the
// model.
#pragma once

#include <cstddef>

#include "tenex/backend/cpu/contraction_problem.hpp"

namespace tenex::detail::cpu::contraction {

// Free values of the small operand the kernel takes at most.
constexpr std::size_t kGettMost = 32;

// Which operand is the small one (kA or kB), or -1 where the problem does not fit the kernel:
// batch modes, no k mode, the smaller side's free values more than kGettMost, a type other
// than float or double.
int gett_small_operand(const Problem& p);

// Elements of scratch the kernel takes (the small operand's panels, and each thread's block
// of the large operand and sums), for `threads` threads.
std::size_t gett_scratch_elements(const Problem& p, std::size_t threads);

// c = alpha * a b + beta * c over the problem (gett_small_operand(p) >= 0). Returns the
// kernel calls (1).
template <class T>
std::size_t run_gett(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c);

}  // namespace tenex::detail::cpu::contraction
