// GEMM calls on strided matrices: whether one row-major cblas call can run a matrix geometry,
// and the call itself.
#pragma once

#include <cstddef>

namespace tenex::detail::cpu::contraction {

// C (m x n) += A (m x k) B (k x n), each matrix given by the element strides of its two
// dimensions ("a_m": the stride of A along m, ...).
struct Geometry {
  std::size_t m = 1, n = 1, k = 1;
  std::ptrdiff_t a_m = 1, a_k = 1, b_k = 1, b_n = 1, c_m = 1, c_n = 1;
  // Complex: the elements of a (of b) are read conjugated (the BLAS call's ConjTrans and
  // ConjNoTrans; no pass over the operand).
  bool conj_a = false, conj_b = false;
};

// Seconds OpenBLAS spends packing the operands of the row-major call gemm() makes for `g`
// beyond the plain (untransposed) forms, or infinity when no call runs it. One cblas call runs
// a geometry where each matrix has a unit stride along one dimension (a vector needs none), a
// leading dimension at least its row length, and sizes within int. Its packing speed
// depends on the operand's place in the call and its transpose flag: the first matrix
// transposed packs about three times slower than plain. That matters for skinny products
// (a small m or n), where packing the large operand is most of the work.
double blas_pack_seconds(const Geometry& g, std::size_t element_size);

// GEMM flops per second of one core on this machine (element_size 4: sgemm, 8: dgemm): an
// n x n x n GEMM timed on the calling thread, on one core, the best of tuning::kProbeRuns (the
// machine probe's GEMM part, machine.hpp).
double probe_core_peak(std::size_t element_size, std::size_t n);

// c = alpha a b + beta c on strided matrices (beta == 0: c is not read). Plans only produce
// geometries one cblas call runs; the plain loop behind it is a safety net that keeps this function
// from failing inside a parallel region.
template <class T>
void gemm(const Geometry& g, T alpha, const T* a, const T* b, T beta, T* c);

}  // namespace tenex::detail::cpu::contraction
