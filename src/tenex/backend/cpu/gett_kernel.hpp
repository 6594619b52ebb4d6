// The GETT kernel: a contraction computed without a BLAS call and without a permutation of
// either operand through memory (GETT, arXiv 1607.00145: the GEMM's packing reads the
// tensors' own strides).
//
// c[M, N] = sum over K of panel[M, K] strip[K, N]. The panel operand is packed once into
// panels of R rows ([K][R] each, R <= 12 on SIMD targets of 32 vector registers, 6 on those
// of 16; gathered a k at a time). The strip operand is packed a block at a time (N in blocks
// of up to 256 values and 1 MB, K in blocks of up to 256 on skinny shapes, 1024 on others)
// from its own strides into strips of two vectors of the SIMD target ([k][16] doubles on
// AVX-512, [k][8] on AVX2), in cache: a contiguous run of its memory at a time, or, where
// its runs are of one or two values, a vector at a time by gathers. Each strip is multiplied
// by the panels (R x 2 vector sums, the panel's values broadcast).
//
// Two kinds of shape take it:
// - skinny: one operand with at most kGettMost free values in panels, the other in strips,
//   numbered in its own memory order (nyvbl,bsnwyp->svlpw: M = 12, N = 1584, K = 1620, where
//   every GEMM plan permutes the large operand or calls the BLAS on rows of 8), but for c's
//   stride-1 mode, numbered next to the innermost where a block would not reach it
//   (efbad,cf->abcde), so that a block fills whole lines of c. Past one
//   block of K, a block of N keeps its sums in a buffer across the blocks of K, then writes
//   them to c at its strides. Where K is short and c's stride-1 mode is the strip operand's
//   but not its innermost, whose values lie apart in c (dbea,ec->abcd, ecbfa,fd->abcde,
//   efbad,cf->abcde), a vector of sums would go to c a lane at a time. Instead a block is
//   whole rows (the values of the modes numbered after that mode, up to 1 KB), its sums go
//   to a buffer, and tiles of a vector of rows by a vector of a row's values are turned in
//   the registers, so that each store writes a vector of c. Where that mode and a row's
//   modes are dense in c, a block is that mode's extent of rows, and each panel row's tiles
//   go to a staging row in c's order, written to c in order (whole lines past the caches
//   where c is only written and large). Where a row lies together in the strip operand, the
//   kernel reads it there, unpacked, the next row prefetched (ecbfa,fd->abcde in float: 0.46
//   of one sgemm's speed packed by GEMM plans, 1.09 so; efbad,cf->abcde: 0.64, 1.16).
// - any other: the operand holding c's stride-1 mode in strips, numbered in c's order; the
//   sums go from the registers straight to c, each vector's lanes in the runs they make in c
//   (masked stores), the first block of K scaling c by beta and the later ones adding to it.
//   c's modes may interleave the operands' (iramc,dprc->admpi, aecf,fbed->abcd), which a
//   GEMM can only write through a buffer or in tiles. Not where a block of N would not read
//   the strip operand in runs, unless the caches hold it (4 MB). Where c is only written and
//   larger than 32 MB, whole lines of it are stored past the caches (efga,gdbc->abcdef, K =
//   23: twice the speed of one GEMM, which goes over c three times). Where c's runs of the
//   strip operand's values are shorter than a strip (c's modes interleave the operands' from
//   its innermost on), K is short, and c is only written and larger than 32 MB, the sums of a
//   box of c's modes go to a buffer instead, then to c in c's order, whole lines past the
//   caches (iramc,dprc->admpi, runs of 7: 7.4 ms direct, 2.9 ms in boxes; dgemm 3.6 ms).
//
// Offered on every CPU (the kernel is compiled for each SIMD target, simd.hpp; the timings
// above are of its AVX-512 target), without batch modes; the model ranks it against the GEMM
// plans where the machine probe measured both rates, else it is only timed.
#pragma once

#include <cstddef>

#include "tenex/backend/cpu/contraction_problem.hpp"

namespace tenex::detail::cpu::contraction {

// Free values of a skinny shape's panel operand at most.
constexpr std::size_t kGettMost = 32;

// Which operand goes in panels (kA or kB), or -1 where the problem does not fit the kernel:
// batch modes, no k mode, a type other than float or double, or writes or reads that would
// scatter (see above).
int gett_panel_operand(const Problem& p);

// Whether the sums go to c in boxes of its modes (see above), with `threads` threads.
bool gett_boxed(const Problem& p, std::size_t threads);
// Elements of scratch the kernel takes (the panels, and each thread's block of the strip
// operand and sums), for `threads` threads.
std::size_t gett_scratch_elements(const Problem& p, std::size_t threads);

// c = alpha * a b + beta * c over the problem (gett_panel_operand(p) >= 0). Returns the
// kernel calls (1).
template <class T>
std::size_t run_gett(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c);

}  // namespace tenex::detail::cpu::contraction
