// The complex bindings of linalg_complex.hpp: LAPACKE's c and z routines and cblas's
// complex gemm and herk, one specialization per precision.
#include "tenex/backend/cpu/linalg_complex.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <complex>
#include <type_traits>

namespace tenex::detail::cpu::complex_lapack {

static_assert(std::is_same_v<lapack_int, int>, "linalg_complex.hpp declares LAPACKE's sizes as int");

namespace {

// std::complex<R> and C's R _Complex have the same layout (two R, real part first).
lapack_complex_float* c(std::complex<float>* p) { return reinterpret_cast<lapack_complex_float*>(p); }
const lapack_complex_float* c(const std::complex<float>* p) { return reinterpret_cast<const lapack_complex_float*>(p); }
lapack_complex_double* c(std::complex<double>* p) { return reinterpret_cast<lapack_complex_double*>(p); }
const lapack_complex_double* c(const std::complex<double>* p) {
  return reinterpret_cast<const lapack_complex_double*>(p);
}

}  // namespace

template <>
int potrf(int n, std::complex<float>* a) {
  return LAPACKE_cpotrf(LAPACK_ROW_MAJOR, 'L', n, c(a), n);
}
template <>
int potrf(int n, std::complex<double>* a) {
  return LAPACKE_zpotrf(LAPACK_ROW_MAJOR, 'L', n, c(a), n);
}

template <>
int syevd(int n, std::complex<float>* a, float* w) {
  return LAPACKE_cheevd(LAPACK_ROW_MAJOR, 'V', 'L', n, c(a), n, w);
}
template <>
int syevd(int n, std::complex<double>* a, double* w) {
  return LAPACKE_zheevd(LAPACK_ROW_MAJOR, 'V', 'L', n, c(a), n, w);
}

template <>
int sygvd(int n, std::complex<float>* a, std::complex<float>* b, float* w) {
  return LAPACKE_chegvd(LAPACK_ROW_MAJOR, 1, 'V', 'L', n, c(a), n, c(b), n, w);
}
template <>
int sygvd(int n, std::complex<double>* a, std::complex<double>* b, double* w) {
  return LAPACKE_zhegvd(LAPACK_ROW_MAJOR, 1, 'V', 'L', n, c(a), n, c(b), n, w);
}

template <>
int geqrf(int m, int n, std::complex<float>* a, int lda, std::complex<float>* tau) {
  return LAPACKE_cgeqrf(LAPACK_ROW_MAJOR, m, n, c(a), lda, c(tau));
}
template <>
int geqrf(int m, int n, std::complex<double>* a, int lda, std::complex<double>* tau) {
  return LAPACKE_zgeqrf(LAPACK_ROW_MAJOR, m, n, c(a), lda, c(tau));
}

template <>
int orgqr(int m, int k, std::complex<float>* a, int lda, const std::complex<float>* tau) {
  return LAPACKE_cungqr(LAPACK_ROW_MAJOR, m, k, k, c(a), lda, c(tau));
}
template <>
int orgqr(int m, int k, std::complex<double>* a, int lda, const std::complex<double>* tau) {
  return LAPACKE_zungqr(LAPACK_ROW_MAJOR, m, k, k, c(a), lda, c(tau));
}

template <>
int gesdd(int m, int n, std::complex<float>* a, float* s, std::complex<float>* u, int ldu, std::complex<float>* vt) {
  return LAPACKE_cgesdd(LAPACK_ROW_MAJOR, 'S', m, n, c(a), n, s, c(u), ldu, c(vt), n);
}
template <>
int gesdd(int m, int n, std::complex<double>* a, double* s, std::complex<double>* u, int ldu,
          std::complex<double>* vt) {
  return LAPACKE_zgesdd(LAPACK_ROW_MAJOR, 'S', m, n, c(a), n, s, c(u), ldu, c(vt), n);
}

template <>
int gesvd(int m, int n, std::complex<float>* a, float* s, std::complex<float>* u, int ldu, std::complex<float>* vt,
          float* superb) {
  return LAPACKE_cgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, c(a), n, s, c(u), ldu, c(vt), n, superb);
}
template <>
int gesvd(int m, int n, std::complex<double>* a, double* s, std::complex<double>* u, int ldu, std::complex<double>* vt,
          double* superb) {
  return LAPACKE_zgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, c(a), n, s, c(u), ldu, c(vt), n, superb);
}

template <>
void gemm(int n, const std::complex<float>* a, const std::complex<float>* b, std::complex<float>* out) {
  const std::complex<float> one(1), zero(0);
  cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, &one, a, n, b, n, &zero, out, n);
}
template <>
void gemm(int n, const std::complex<double>* a, const std::complex<double>* b, std::complex<double>* out) {
  const std::complex<double> one(1), zero(0);
  cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, &one, a, n, b, n, &zero, out, n);
}

template <>
int getrf_cm(int n, std::complex<float>* a, int* ipiv) {
  return LAPACKE_cgetrf(LAPACK_COL_MAJOR, n, n, c(a), n, ipiv);
}
template <>
int getrf_cm(int n, std::complex<double>* a, int* ipiv) {
  return LAPACKE_zgetrf(LAPACK_COL_MAJOR, n, n, c(a), n, ipiv);
}

template <>
int getri_cm(int n, std::complex<float>* a, const int* ipiv) {
  return LAPACKE_cgetri(LAPACK_COL_MAJOR, n, c(a), n, ipiv);
}
template <>
int getri_cm(int n, std::complex<double>* a, const int* ipiv) {
  return LAPACKE_zgetri(LAPACK_COL_MAJOR, n, c(a), n, ipiv);
}

template <>
int getrs_cm(char trans, int n, int nrhs, const std::complex<float>* a, const int* ipiv, std::complex<float>* b) {
  return LAPACKE_cgetrs(LAPACK_COL_MAJOR, trans, n, nrhs, c(a), n, ipiv, c(b), n);
}
template <>
int getrs_cm(char trans, int n, int nrhs, const std::complex<double>* a, const int* ipiv, std::complex<double>* b) {
  return LAPACKE_zgetrs(LAPACK_COL_MAJOR, trans, n, nrhs, c(a), n, ipiv, c(b), n);
}

template <>
int gecon_cm(int n, const std::complex<float>* lu, float anorm, float* rcond) {
  return LAPACKE_cgecon(LAPACK_COL_MAJOR, '1', n, c(lu), n, anorm, rcond);
}
template <>
int gecon_cm(int n, const std::complex<double>* lu, double anorm, double* rcond) {
  return LAPACKE_zgecon(LAPACK_COL_MAJOR, '1', n, c(lu), n, anorm, rcond);
}

template <>
int potrf_cm(int n, std::complex<float>* a) {
  return LAPACKE_cpotrf(LAPACK_COL_MAJOR, 'U', n, c(a), n);
}
template <>
int potrf_cm(int n, std::complex<double>* a) {
  return LAPACKE_zpotrf(LAPACK_COL_MAJOR, 'U', n, c(a), n);
}

template <>
int potrs_cm(int n, int nrhs, const std::complex<float>* a, std::complex<float>* b) {
  return LAPACKE_cpotrs(LAPACK_COL_MAJOR, 'U', n, nrhs, c(a), n, c(b), n);
}
template <>
int potrs_cm(int n, int nrhs, const std::complex<double>* a, std::complex<double>* b) {
  return LAPACKE_zpotrs(LAPACK_COL_MAJOR, 'U', n, nrhs, c(a), n, c(b), n);
}

template <>
int pocon_cm(int n, const std::complex<float>* a, float anorm, float* rcond) {
  return LAPACKE_cpocon(LAPACK_COL_MAJOR, 'U', n, c(a), n, anorm, rcond);
}
template <>
int pocon_cm(int n, const std::complex<double>* a, double anorm, double* rcond) {
  return LAPACKE_zpocon(LAPACK_COL_MAJOR, 'U', n, c(a), n, anorm, rcond);
}

template <>
int syevd_cm(int n, std::complex<float>* a, float* w) {
  return LAPACKE_cheevd(LAPACK_COL_MAJOR, 'V', 'U', n, c(a), n, w);
}
template <>
int syevd_cm(int n, std::complex<double>* a, double* w) {
  return LAPACKE_zheevd(LAPACK_COL_MAJOR, 'V', 'U', n, c(a), n, w);
}

template <>
void syrk_cm(int n, const std::complex<float>* u, std::complex<float>* out) {
  cblas_cherk(CblasColMajor, CblasUpper, CblasNoTrans, n, n, 1.0f, u, n, 0.0f, out, n);
}
template <>
void syrk_cm(int n, const std::complex<double>* u, std::complex<double>* out) {
  cblas_zherk(CblasColMajor, CblasUpper, CblasNoTrans, n, n, 1.0, u, n, 0.0, out, n);
}

}  // namespace tenex::detail::cpu::complex_lapack
