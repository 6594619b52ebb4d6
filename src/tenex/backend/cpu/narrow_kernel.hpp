// The narrow kernel: a contraction one of whose operands has few free values (at most
// kNarrowMost), computed without a GEMM and without permuting the large operand.
//
// c[M, N] = sum over K of big[M, K] small[K, N], with N (the small operand's free values) at
// most kNarrowMost: the small operand is packed once into a [K][N] panel (it is small: K x N
// values), the large one is read once, as it lies in memory, and every product is a fused
// multiply-add on AVX-512 vectors. Two orientations, by the large operand's stride-1 mode:
//   - a k mode ("rows"): a few rows of M at once, each value of the large operand broadcast
//     against the panel's row of N (padded to whole vectors);
//   - an M mode ("lanes"): 8 (double) or 16 (float) consecutive values of that mode in one
//     vector, each multiplied by every value of the panel's row.
// OpenBLAS serves such shapes poorly (xqu,umx->mq, N = 14: dgemm of 4339 x 14 x 4366 runs at
// 26 GFLOP/s on one core here, which the kernel's arithmetic can double), and a GEMM form of
// them needs a permutation of the large operand whenever its modes interleave. Only offered
// where the CPU has AVX-512 (narrow_available()), without batch modes.
#pragma once

#include <cstddef>

#include "tenex/backend/cpu/contraction_problem.hpp"

namespace tenex::detail::cpu::contraction {

// Free values of the small operand the kernel takes at most.
constexpr std::size_t kNarrowMost = 32;

// Whether the CPU runs the kernel (AVX-512F).
bool narrow_available();

// Which operand is the small one (kA or kB), or -1 where the problem does not fit the kernel:
// batch modes, no k mode, the small side's free values more than kNarrowMost.
int narrow_small_operand(const Problem& p);

// Whether the large operand's stride-1 mode is a free one (the "lanes" orientation).
bool narrow_lanes(const Problem& p);

// Elements of the packed panel (scratch the kernel takes).
std::size_t narrow_panel_elements(const Problem& p);

// c = alpha * a b + beta * c over the problem (narrow_small_operand(p) >= 0). Returns the
// kernel calls (1).
template <class T>
std::size_t run_narrow(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c);

}  // namespace tenex::detail::cpu::contraction
