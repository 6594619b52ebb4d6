// Dense linear algebra on row-major matrices through LAPACKE. Private to the CPU backend.
//
// Every routine takes a row-major n x n (or m x n) matrix that it does not modify, and
// writes row-major results. Every LAPACK status goes through one checking wrapper: a
// failure throws tenex::NumericalError naming the routine and its info value.
#pragma once

#include <cstddef>

#include "tenex/backend/cpu/kernels.hpp"

namespace tenex::detail::cpu {

/// l = lower Cholesky factor of a (n x n), a = l l^T; upper triangle of l set to zero.
template <class T> KernelCount cholesky(const T* a, std::size_t n, T* l);

/// Symmetric eigenproblem (syevd): values ascending (n), vectors (n x n) with the
/// eigenvectors as columns: a v_j = w_j v_j for column j.
template <class T> KernelCount eigen_symmetric(const T* a, std::size_t n, T* vectors, T* values);

/// Generalized a v = w b v with b SPD (sygvd, itype 1): values ascending, vectors as
/// columns normalised so that V^T b V = I.
template <class T>
KernelCount eigen_generalized(const T* a, const T* b, std::size_t n, T* vectors, T* values);

/// Reduced QR of a (m x n), k = min(m, n): q (m x k) with orthonormal columns, r (k x n)
/// upper triangular (geqrf + orgqr).
template <class T> KernelCount qr(const T* a, std::size_t m, std::size_t n, T* q, T* r);

/// Thin SVD of a (m x n), k = min(m, n): u (m x k), s (k, descending, non-negative),
/// vt (k x n). gesdd, falling back to gesvd when gesdd does not converge.
template <class T> KernelCount svd(const T* a, std::size_t m, std::size_t n, T* u, T* s, T* vt);

/// out = a^p (n x n) by repeated squaring; p = 0 gives the identity.
template <class T> KernelCount matrix_power(const T* a, std::size_t n, unsigned p, T* out);

}  // namespace tenex::detail::cpu
