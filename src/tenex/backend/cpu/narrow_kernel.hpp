// The narrow kernel: a contraction one of whose operands has few free values (at most
// kNarrowMost), computed without a GEMM and without permuting the large operand.
//
// c[M, N] = sum over K of big[M, K] small[K, N], with N (the small operand's free values) at
// most kNarrowMost and the large operand's stride-1 mode a k mode: the small operand is
// packed once into a [K][N] panel (N padded to whole vectors of the SIMD target), and the large one is
// read as it lies, a few rows of M at once, each value broadcast against the panel's row in
// fused multiply-adds. K runs in blocks (the large operand's k modes after its last free
// one), each swept over every row, so that the large operand streams through memory; the
// sums of a row go to a buffer between blocks.
//
// OpenBLAS serves some such shapes poorly (qngje,egkrj->qnkr, N = 21: 1.6 ms against 2.5 ms
// for dgemm of the same m, n, k on one core here), and a GEMM form of them needs a
// permutation of the large operand whenever its modes interleave. Offered on every CPU (the
// kernel is compiled for each SIMD target, simd.hpp), without batch modes, and always timed,
// never chosen by the model. Large operands whose stride-1 mode is a free one are left to the GEMM plans:
// vectors along that mode, tried, ran 2-6x slower than them (a strided read per k).
#pragma once

#include <cstddef>

#include "tenex/backend/cpu/contraction_problem.hpp"

namespace tenex::detail::cpu::contraction {

// Free values of the small operand the kernel takes at most.
constexpr std::size_t kNarrowMost = 32;

// Which operand is the small one (kA or kB), or -1 where the problem does not fit the kernel:
// batch modes, no k mode, the small side's free values more than kNarrowMost, the large
// operand's stride-1 mode a free one.
int narrow_small_operand(const Problem& p);

// Elements of the packed panel (scratch the kernel takes).
std::size_t narrow_panel_elements(const Problem& p);

// c = alpha * a b + beta * c over the problem (narrow_small_operand(p) >= 0). Returns the
// kernel calls (1).
template <class T>
std::size_t run_narrow(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c);

}  // namespace tenex::detail::cpu::contraction
