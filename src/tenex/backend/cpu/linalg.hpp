// Dense linear algebra on row-major matrices through LAPACKE. Private to the CPU backend.
//
// Every routine takes a row-major n x n (or m x n) matrix that it does not modify, and
// writes row-major results. Every LAPACK status goes through one checking wrapper: a
// failure throws tenex::NumericalError naming the routine and its info value.
//
// Conventions shared by every routine (a CUDA backend must follow them so that backends
// agree element by element wherever the factorization is unique up to signs):
// - Symmetric inputs (cholesky, both eigen solvers) are read from the LOWER triangle only.
// - Outputs must not overlap inputs.
// - Signs: LAPACK leaves the sign of each eigenvector / singular pair / Householder column
//   free. We fix it: every eigenvector and every left singular vector has its entry of
//   largest magnitude (the first such, on ties) positive; R of QR has a non-negative
//   diagonal. A singular pair and a QR column/row pair are flipped together, so the
//   factorization stays exact.
// - An input with a NaN or infinity (in the part that is read) throws NumericalError
//   before LAPACK sees it.
// - Flop counts (KernelCount::flops) are the usual textbook leading terms, k = min(m, n):
//     potrf n^3/3;  syevd with vectors 9n^3 (Golub & Van Loan, symmetric QR with vectors);
//     sygvd (itype 1, vectors) potrf + sygst + syevd + back-substitution = 34n^3/3;
//     geqrf 2mnk - 2k^3/3, orgqr (m x k from k reflectors) 2mk^2 - 2k^3/3;
//     gesdd/gesvd (thin U, Vt) 14 M N^2 + 8 N^3 with M = max(m,n), N = min(m,n)
//     (Golub & Van Loan, "U1, Sigma, V"), counted again when gesvd runs as a fallback;
//     matrix power 2n^3 per gemm.
#pragma once

#include <cstddef>

#include "tenex/backend/cpu/kernels.hpp"

namespace tenex::detail::cpu {

/// l = lower Cholesky factor of a (n x n), a = l l^T; upper triangle of l set to zero.
template <class T>
KernelCount cholesky(const T* a, std::size_t n, T* l);

/// Symmetric eigenproblem (syevd): values ascending (n), vectors (n x n) with the
/// eigenvectors as columns: a v_j = w_j v_j for column j.
template <class T>
KernelCount eigen_symmetric(const T* a, std::size_t n, T* vectors, T* values);

/// Generalized a v = w b v with b SPD (sygvd, itype 1): values ascending, vectors as
/// columns normalised so that V^T b V = I.
template <class T>
KernelCount eigen_generalized(const T* a, const T* b, std::size_t n, T* vectors, T* values);

/// Reduced QR of a (m x n), k = min(m, n): q (m x k) with orthonormal columns, r (k x n)
/// upper triangular (geqrf + orgqr).
template <class T>
KernelCount qr(const T* a, std::size_t m, std::size_t n, T* q, T* r);

/// Thin SVD of a (m x n), k = min(m, n): u (m x k), s (k, descending, non-negative),
/// vt (k x n). gesdd, falling back to gesvd when gesdd does not converge.
template <class T>
KernelCount svd(const T* a, std::size_t m, std::size_t n, T* u, T* s, T* vt);

/// out = a^p (n x n) by repeated squaring; p = 0 gives the identity.
template <class T>
KernelCount matrix_power(const T* a, std::size_t n, unsigned p, T* out);

/// The one check every LAPACK status goes through. `routine` is the LAPACK name with its
/// precision letter ("dpotrf", "ssygvd"); n is the order of the problem (sygvd and syevd
/// encode it in info). info == 0 returns; info < 0 (an illegal argument: a tenex bug)
/// throws InternalError, except LAPACKE's out-of-memory codes, which throw BackendError;
/// info > 0 throws NumericalError saying what the routine reported, e.g.
///   "dpotrf failed (info = 3): the leading minor of order 3 is not positive definite ..."
/// A cuSOLVER backend can pass its devInfo here to get the same messages.
void check_lapack_info(const char* routine, long long info, std::size_t n);

}  // namespace tenex::detail::cpu
