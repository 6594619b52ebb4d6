// Dense linear algebra on row-major matrices through LAPACKE. Private to the CPU backend.
//
// Every routine takes a row-major n x n (or m x n) matrix that it does not modify, and
// writes row-major results. Every LAPACK status goes through one checking wrapper: a
// failure throws tenex::NumericalError naming the routine and its info value.
//
// T is float, double, std::complex<float> or std::complex<double>. For complex T read
// "symmetric" as Hermitian (a = a^H), "transpose" in a factorization (l l^T, V^T b V, Q^T Q)
// as the conjugate transpose, and "orthogonal" as unitary; LAPACK's c and z routines run
// (heevd, hegvd, ungqr, herk where the real code has syevd, sygvd, orgqr, syrk).
// Eigenvalues and singular values are real: for complex T they are written as complex
// numbers with imaginary part exactly 0.
//
// Conventions shared by every routine (a CUDA backend must follow them so that backends
// agree element by element wherever the factorization is unique up to signs):
// - Symmetric inputs (cholesky, both eigen solvers) are read from the LOWER triangle only.
// - Outputs must not overlap inputs.
// - Signs: LAPACK leaves the sign of each eigenvector / singular pair / Householder column
//   free. We fix it: every eigenvector and every left singular vector has its entry of
//   largest magnitude (the first such, on ties) positive; R of QR has a non-negative
//   diagonal. A singular pair and a QR column/row pair are flipped together, so the
//   factorization stays exact. Complex: the phase is fixed likewise, the column multiplied
//   by the unit factor that makes that entry real and positive (the entry is then stored as
//   exactly its magnitude), the paired row of Vt by its conjugate; R's diagonal is real and
//   non-negative, column i of Q taking the conjugate of row i's factor.
// - Complex Hermitian inputs: the diagonal must be real. cholesky, which reads only the
//   lower triangle, rejects (NumericalError) an imaginary part on the diagonal above
//   symmetry_tolerance relative to max |a|, which LAPACK would drop silently; the other
//   Hermitian-only routines count it in the Hermitian check (require_symmetric).
// - An input with a NaN or infinity (in the part that is read) throws NumericalError
//   before LAPACK sees it.
// - Flop counts (KernelCount::flops) are the usual textbook leading terms, k = min(m, n):
//     potrf n^3/3;  syevd with vectors 9n^3 (Golub & Van Loan, symmetric QR with vectors);
//     sygvd (itype 1, vectors) potrf + sygst + syevd + back-substitution = 34n^3/3;
//     geqrf 2mnk - 2k^3/3, orgqr (m x k from k reflectors) 2mk^2 - 2k^3/3;
//     gesdd/gesvd (thin U, Vt) 14 M N^2 + 8 N^3 with M = max(m,n), N = min(m,n)
//     (Golub & Van Loan, "U1, Sigma, V"), counted again when gesvd runs as a fallback;
//     matrix power 2n^3 per gemm. Complex matrices count the same formulas (operations on
//     complex numbers, as contractions count their products).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"

namespace tenex::detail::cpu {

/// l = lower Cholesky factor of a (n x n), a = l l^T (complex: l l^H, real positive diagonal);
/// upper triangle of l set to zero.
template <class T>
KernelCount cholesky(const T* a, std::size_t n, T* l);

/// Symmetric eigenproblem (syevd; complex: Hermitian, heevd): values ascending (n, real),
/// vectors (n x n) with the eigenvectors as columns: a v_j = w_j v_j for column j.
template <class T>
KernelCount eigen_symmetric(const T* a, std::size_t n, T* vectors, T* values);

/// Generalized a v = w b v with b SPD (sygvd, itype 1; complex: a Hermitian, b Hermitian
/// positive definite, hegvd): values ascending, vectors as columns normalised so that
/// V^T b V = I (complex: V^H b V = I).
template <class T>
KernelCount eigen_generalized(const T* a, const T* b, std::size_t n, T* vectors, T* values);

/// Reduced QR of a (m x n), k = min(m, n): q (m x k) with orthonormal columns, r (k x n)
/// upper triangular (geqrf + orgqr; complex: ungqr, r with a real diagonal).
template <class T>
KernelCount qr(const T* a, std::size_t m, std::size_t n, T* q, T* r);

/// Thin SVD of a (m x n), k = min(m, n): u (m x k), s (k, descending, non-negative, real),
/// vt (k x n); a = u diag(s) vt. gesdd, falling back to gesvd when gesdd does not converge.
template <class T>
KernelCount svd(const T* a, std::size_t m, std::size_t n, T* u, T* s, T* vt);

/// out = a^p (n x n) by repeated squaring; p = 0 gives the identity.
template <class T>
KernelCount matrix_power(const T* a, std::size_t n, unsigned p, T* out);

// ---- Matrix functions. `what` names the operand in error messages ("(i,j) {3, 3}"; empty:
// "the n x n matrix"). A singular matrix is one with an exactly zero pivot or whose
// reciprocal condition number (gecon / pocon estimate) is below the machine epsilon, the
// test of LAPACK's expert drivers (gesvx: "singular to working precision").
// Flops: getrf 2n^3/3, getri 4n^3/3, getrs/potrs 2n^2 per right-hand side, potrf n^3/3,
// spd power syevd 9n^3 + syrk n^3.

/// Relative tolerance of the symmetry check of the symmetric-only functions (eigen_solve,
/// pow(a, double)): a is symmetric when max |a_ij - a_ji| <= tol * max |a_ij|, with
/// tol = max(1024, 16 n) * epsilon: room for the rounding of a matrix assembled by products.
/// Complex: the epsilon of the real type, and the check is the Hermitian one (require_symmetric).
template <class T>
double symmetry_tolerance(std::size_t n);

/// Throws NumericalError naming `operation`, the largest asymmetry and where it is, unless
/// a (n x n) is symmetric to `relative_tolerance` (NaN entries are left to the finiteness checks).
/// Complex: Hermitian, max |a_ij - conj(a_ji)| over i >= j (the diagonal's imaginary parts
/// count), "is not Hermitian" in the message.
template <class T>
void require_symmetric(const T* a, std::size_t n, double relative_tolerance, const char* operation,
                       std::string_view what = {});

/// out = a^-1 (n x n) by LU with partial pivoting (getrf, getri). Singular: NumericalError.
template <class T>
KernelCount inverse(const T* a, std::size_t n, T* out, std::string_view what = {});

/// x = a^-1 b, a (n x n); b and x laid out alike as (outer, n, inner) row-major: the solved
/// mode has extent n, every (outer, inner) pair is one right-hand side. a symmetric to
/// working precision (max |a_ij - a_ji| <= n epsilon max |a|; complex: Hermitian) is tried with
/// Cholesky (potrf, potrs) first; otherwise, or when a is not positive definite, LU (getrf, getrs).
/// Singular: NumericalError.
template <class T>
KernelCount solve(const T* a, std::size_t n, const T* b, std::size_t outer, std::size_t inner, T* x,
                  std::string_view what = {});

/// out = a^p = V diag(w^p) V^T for symmetric positive (semi)definite a (n x n), p != 0, read
/// from its lower triangle after the symmetry check (symmetry_tolerance). Eigenvalues within
/// n epsilon max |w| of zero count as zero: for p > 0 those slightly negative are clamped to
/// zero, for p < 0 a zero or negative eigenvalue is a NumericalError, as is, for any p, an
/// eigenvalue below that tolerance. out is exactly symmetric (syrk). Complex: a Hermitian,
/// out = V diag(w^p) V^H exactly Hermitian (herk, with a real diagonal).
template <class T>
KernelCount spd_power(const T* a, std::size_t n, double p, T* out, std::string_view what = {});

// ---- Truncated decompositions (linalg_truncated.cpp): svd and eigen_solve with a
// tenex::Truncation. `bound` = min(max_rank, k) values are written (max_rank 0: k), of which the
// first `rank` are kept; the dropped values and their vectors are zero. report[0] is the kept
// rank, report[1] the discarded weight (as real parts). Rank rule (ITensor's): the smallest
// values whose squares sum to at most cutoff times the sum of all squares are dropped, at most
// max_rank are kept, at least one.
// - svd_truncated: when bound <= tuning::kSelectiveSvdShare * k, gesvdx with range 'I' computes
//   only the wanted triplets, the total being ||a||_F^2; otherwise gesdd and the cut. Flops:
//   gebrd 4MN^2 - 4N^3/3 plus the back-transformation 4(M+N)N bound (gesvdx), svd's otherwise.
// - eigen_truncated: sytrd (hetrd), every pair of the tridiagonal by MRRR (stemr), and only the
//   kept vectors transformed back (ormtr, unmtr); pairs by descending |w|, weighed by w^2.
//   Flops 4n^3/3 + 2n^2 bound.

/// What the rank rule kept.
struct TruncatedRank {
  std::size_t rank = 0;
  double discarded_weight = 0;
};
/// The rank rule on `squares` (the squares of the values computed, descending; at most those
/// max_rank allows are kept) with `total` the sum of all squares (computed or not).
TruncatedRank truncated_rank(const std::vector<double>& squares, double total, std::size_t max_rank, double cutoff);

/// u (m x bound), s (bound), vt (bound x n), report (2).
template <class T>
KernelCount svd_truncated(const T* a, std::size_t m, std::size_t n, std::size_t max_rank, double cutoff, T* u, T* s,
                          T* vt, T* report);
/// a (n x n) symmetric (Hermitian), read from its lower triangle: vectors (n x bound), values
/// (bound), report (2). With b (symmetric positive definite; null: the standard problem) the
/// generalized a v = w b v: potrf, sygst (hegst) to the standard problem, whose kept vectors
/// trtrs takes back (b-orthonormal, as sygvd's).
template <class T>
KernelCount eigen_truncated(const T* a, const T* b, std::size_t n, std::size_t max_rank, double cutoff, T* vectors,
                            T* values, T* report);
/// The sign (phase) convention of this file for vectors computed elsewhere: columns (rows x k)
/// and, when not null, the paired rows (k x cols) of a product columns * paired_rows.
template <class T>
void fix_vector_signs(T* columns, std::size_t rows, std::size_t k, T* paired_rows, std::size_t cols);

/// The one check every LAPACK status goes through. `routine` is the LAPACK name with its
/// precision letter ("dpotrf", "ssygvd"); n is the order of the problem (sygvd and syevd
/// encode it in info). info == 0 returns; info < 0 (an illegal argument: a tenex bug)
/// throws InternalError, except LAPACKE's out-of-memory codes, which throw BackendError;
/// info > 0 throws NumericalError saying what the routine reported, e.g.
///   "dpotrf failed (info = 3): the leading minor of order 3 is not positive definite ..."
/// A cuSOLVER backend can pass its devInfo here to get the same messages.
void check_lapack_info(const char* routine, long long info, std::size_t n);

}  // namespace tenex::detail::cpu
