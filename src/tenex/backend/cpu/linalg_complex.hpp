// The complex LAPACKE and cblas calls behind linalg.cpp's kernels (c and z routines), defined
// in linalg_complex.cpp. Private to the CPU backend.
//
// Each has the name and arguments of linalg.cpp's real binding of the same step, so that the
// kernels, written once over T, pick the complex routine by overload: potrf -> c/zpotrf,
// syevd -> c/zheevd, sygvd -> c/zhegvd, orgqr -> c/zungqr, syrk_cm -> c/zherk. Eigenvalues,
// singular values, norms and condition numbers are real (R). Sizes are LAPACKE's 32-bit
// lapack_int (checked in linalg_complex.cpp); LAPACKE's own types stay out of headers.
// Suffix _cm: column-major on the row-major buffer (linalg.cpp's matrix functions); the
// others are row-major, upper/lower 'L' of the row-major matrix.
#pragma once

#include <complex>

namespace tenex::detail::cpu::complex_lapack {

template <class R>
int potrf(int n, std::complex<R>* a);
template <class R>
int syevd(int n, std::complex<R>* a, R* w);
template <class R>
int sygvd(int n, std::complex<R>* a, std::complex<R>* b, R* w);
template <class R>
int geqrf(int m, int n, std::complex<R>* a, int lda, std::complex<R>* tau);
template <class R>
int orgqr(int m, int k, std::complex<R>* a, int lda, const std::complex<R>* tau);
template <class R>
int gesdd(int m, int n, std::complex<R>* a, R* s, std::complex<R>* u, int ldu, std::complex<R>* vt);
template <class R>
int gesvd(int m, int n, std::complex<R>* a, R* s, std::complex<R>* u, int ldu, std::complex<R>* vt, R* superb);
/// c = a b, all n x n row-major.
template <class R>
void gemm(int n, const std::complex<R>* a, const std::complex<R>* b, std::complex<R>* c);

template <class R>
int getrf_cm(int n, std::complex<R>* a, int* ipiv);
template <class R>
int getri_cm(int n, std::complex<R>* a, const int* ipiv);
template <class R>
int getrs_cm(char trans, int n, int nrhs, const std::complex<R>* a, const int* ipiv, std::complex<R>* b);
template <class R>
int gecon_cm(int n, const std::complex<R>* lu, R anorm, R* rcond);
template <class R>
int potrf_cm(int n, std::complex<R>* a);
template <class R>
int potrs_cm(int n, int nrhs, const std::complex<R>* a, std::complex<R>* b);
template <class R>
int pocon_cm(int n, const std::complex<R>* a, R anorm, R* rcond);
template <class R>
int syevd_cm(int n, std::complex<R>* a, R* w);
/// c (column-major, upper triangle) = u u^H (herk).
template <class R>
void syrk_cm(int n, const std::complex<R>* u, std::complex<R>* c);

}  // namespace tenex::detail::cpu::complex_lapack
