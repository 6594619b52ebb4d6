// The communication model of docs/distributed.md: bytes one rank sends, on average over the
// ranks, for each kind of statement of the distributed backend, as functions of the process
// grid (pr x pc = P ranks), the block size and the sizes. bench_dist_comm prints them beside
// the counters of mpi_counters.hpp, and tests/dist/test_communication_model.cpp checks a few.
//
// `value` is the bytes of one element (8 for double); an `entry` of a remap or gather is an
// element and its 8-byte offset (sizeof(Entry<T>): 16 for float and double, 24 for
// std::complex<double>).
#pragma once

#include <cstddef>

namespace comm_model {

struct Grid {
  double pr = 1, pc = 1;  // process rows and columns
  double ranks() const { return pr * pc; }
};

/// A remap (one MPI_Alltoallv per round) of a tensor of n elements between two layouts that
/// scatter its elements independently: each rank holds n / P of them, of which (P - 1) / P
/// belong elsewhere.
inline double remap(const Grid& g, double n, double entry = 16) {
  const double p = g.ranks();
  return entry * n * (p - 1) / (p * p);
}

/// p?gemm, C (m x n) = A (m x k) B (k x n), all three in the same block-cyclic grid. PBLAS
/// keeps one of the three matrices in place and moves the other two, panel by panel, picking
/// the variant that moves least (pdgemm_'s estimate, taken here as the least of the three):
///   C stays (k small):  A along the process rows (to pc - 1 others), B down the columns (pr - 1);
///   A stays (n small):  partial sums of C combined along the rows, B down the columns, and B's
///                       rows brought to A's column layout (a fraction (pc - 1) / pc of it);
///   B stays (m small):  the same with the roles of A and B, rows and columns swapped.
inline double gemm(const Grid& g, double m, double n, double k, double value = 8) {
  const double a = m * k, b = k * n, c = m * n;
  const double keep_c = a * (g.pc - 1) + b * (g.pr - 1);
  const double keep_a = c * (g.pc - 1) + b * (g.pr - 1) + b * (g.pc - 1) / g.pc;
  const double keep_b = a * (g.pc - 1) + c * (g.pr - 1) + a * (g.pr - 1) / g.pr;
  const double least = keep_c < keep_a ? (keep_c < keep_b ? keep_c : keep_b) : (keep_a < keep_b ? keep_a : keep_b);
  return value * least / g.ranks();
}

/// p?gemr2d copying a rows x cols block whose first row is `row_offset` into a matrix of its
/// own (same grid, same blocks), as a batched contraction cuts a batch: an element moves when
/// its process row changes, which depends on the offset modulo nb * pr only. Over one period
/// of nb * pr rows, the fraction of rows that move is counted; it is 0 for an offset that is
/// a multiple of nb * pr, (pr - 1) / pr on average over offsets, and 0 on one process row.
inline double gemr2d(const Grid& g, double rows, double cols, std::size_t row_offset, std::size_t block,
                     double value = 8) {
  const auto pr = static_cast<std::size_t>(g.pr);
  const std::size_t period = block * pr, shift = row_offset % period;
  std::size_t moved = 0;
  for (std::size_t q = 0; q < period; ++q) {
    if ((q + shift) / block % pr != q / block % pr) ++moved;
  }
  return value * rows * cols / g.ranks() * static_cast<double>(moved) / static_cast<double>(period);
}

/// An operand replicated on every rank (MPI_Allgatherv of its entries): each rank's n / P
/// entries go to the P - 1 others. A plain Tensor target (gather_all) moves the same.
inline double replicated(const Grid& g, double n, double entry = 16) {
  const double p = g.ranks();
  return entry * n * (p - 1) / p;
}

/// A full reduction (norm2, a sum to a scalar, an inner product of same-layout operands):
/// one MPI_Allreduce of one value, whatever the size of the tensor; a plain Tensor target
/// then receives the scalar as any gathered result does (one entry from its owner).
inline double full_reduction(const Grid& g, bool plain_target = true, double value = 8, double entry = 16) {
  const double p = g.ranks();
  return 2 * value * (p - 1) / p + (plain_target ? replicated(g, 1, entry) : 0);
}

/// p?potrf of an n x n matrix (right-looking, panels of nb columns): each panel of the
/// trailing matrix (n^2 / 2 elements in all) goes along the process rows and, transposed,
/// down the process columns.
inline double potrf(const Grid& g, double n, double value = 8) {
  return value * n * n / 2 * (g.pr + g.pc - 2) / g.ranks();
}

}  // namespace comm_model
