// The ScaLAPACK, PBLAS and BLACS entry points the distributed backend calls. Debian's
// libscalapack-openmpi-dev has no C header: these are the Fortran symbols (all arguments by
// pointer, hidden string lengths omitted, which the gfortran ABI allows for length-1
// character arguments) and BLACS's C interface. COMPLEX and COMPLEX*16 arguments are
// std::complex<float> and std::complex<double> (the same layout: two reals).
#pragma once

#include <mpi.h>

#include <complex>

extern "C" {
// BLACS
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);

// Tools
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc, const int* icsrc,
               const int* ictxt, const int* lld, int* info);

// Redistribution of a sub-matrix between two distributions
void psgemr2d_(const int* m, const int* n, const float* a, const int* ia, const int* ja, const int* desca, float* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);
void pdgemr2d_(const int* m, const int* n, const double* a, const int* ia, const int* ja, const int* desca, double* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);

void pcgemr2d_(const int* m, const int* n, const std::complex<float>* a, const int* ia, const int* ja, const int* desca,
               std::complex<float>* b, const int* ib, const int* jb, const int* descb, const int* ictxt);
void pzgemr2d_(const int* m, const int* n, const std::complex<double>* a, const int* ia, const int* ja,
               const int* desca, std::complex<double>* b, const int* ib, const int* jb, const int* descb,
               const int* ictxt);

// PBLAS
void psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
             const float* a, const int* ia, const int* ja, const int* desca, const float* b, const int* ib,
             const int* jb, const int* descb, const float* beta, float* c, const int* ic, const int* jc,
             const int* descc);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
void pcgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const std::complex<float>* alpha, const std::complex<float>* a, const int* ia, const int* ja,
             const int* desca, const std::complex<float>* b, const int* ib, const int* jb, const int* descb,
             const std::complex<float>* beta, std::complex<float>* c, const int* ic, const int* jc, const int* descc);
void pzgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const std::complex<double>* alpha, const std::complex<double>* a, const int* ia, const int* ja,
             const int* desca, const std::complex<double>* b, const int* ib, const int* jb, const int* descb,
             const std::complex<double>* beta, std::complex<double>* c, const int* ic, const int* jc, const int* descc);

// ScaLAPACK
void pspotrf_(const char* uplo, const int* n, float* a, const int* ia, const int* ja, const int* desca, int* info);
void pdpotrf_(const char* uplo, const int* n, double* a, const int* ia, const int* ja, const int* desca, int* info);
void pssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* ia, const int* ja,
              const int* desca, float* w, float* z, const int* iz, const int* jz, const int* descz, float* work,
              const int* lwork, int* iwork, const int* liwork, int* info);
void pdsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* ia, const int* ja,
              const int* desca, double* w, double* z, const int* iz, const int* jz, const int* descz, double* work,
              const int* lwork, int* iwork, const int* liwork, int* info);
void pssyevr_(const char* jobz, const char* range, const char* uplo, const int* n, float* a, const int* ia,
              const int* ja, const int* desca, const float* vl, const float* vu, const int* il, const int* iu, int* m,
              int* nz, float* w, float* z, const int* iz, const int* jz, const int* descz, float* work,
              const int* lwork, int* iwork, const int* liwork, int* info);
void pdsyevr_(const char* jobz, const char* range, const char* uplo, const int* n, double* a, const int* ia,
              const int* ja, const int* desca, const double* vl, const double* vu, const int* il, const int* iu, int* m,
              int* nz, double* w, double* z, const int* iz, const int* jz, const int* descz, double* work,
              const int* lwork, int* iwork, const int* liwork, int* info);
void pssygvx_(const int* ibtype, const char* jobz, const char* range, const char* uplo, const int* n, float* a,
              const int* ia, const int* ja, const int* desca, float* b, const int* ib, const int* jb, const int* descb,
              const float* vl, const float* vu, const int* il, const int* iu, const float* abstol, int* m, int* nz,
              float* w, const float* orfac, float* z, const int* iz, const int* jz, const int* descz, float* work,
              const int* lwork, int* iwork, const int* liwork, int* ifail, int* iclustr, float* gap, int* info);
void pdsygvx_(const int* ibtype, const char* jobz, const char* range, const char* uplo, const int* n, double* a,
              const int* ia, const int* ja, const int* desca, double* b, const int* ib, const int* jb, const int* descb,
              const double* vl, const double* vu, const int* il, const int* iu, const double* abstol, int* m, int* nz,
              double* w, const double* orfac, double* z, const int* iz, const int* jz, const int* descz, double* work,
              const int* lwork, int* iwork, const int* liwork, int* ifail, int* iclustr, double* gap, int* info);
void psgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, float* a, const int* ia, const int* ja,
              const int* desca, float* s, float* u, const int* iu, const int* ju, const int* descu, float* vt,
              const int* ivt, const int* jvt, const int* descvt, float* work, const int* lwork, int* info);
void pdgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, double* a, const int* ia, const int* ja,
              const int* desca, double* s, double* u, const int* iu, const int* ju, const int* descu, double* vt,
              const int* ivt, const int* jvt, const int* descvt, double* work, const int* lwork, int* info);
void psgeqrf_(const int* m, const int* n, float* a, const int* ia, const int* ja, const int* desca, float* tau,
              float* work, const int* lwork, int* info);
void pdgeqrf_(const int* m, const int* n, double* a, const int* ia, const int* ja, const int* desca, double* tau,
              double* work, const int* lwork, int* info);
void psorgqr_(const int* m, const int* n, const int* k, float* a, const int* ia, const int* ja, const int* desca,
              const float* tau, float* work, const int* lwork, int* info);
void pdorgqr_(const int* m, const int* n, const int* k, double* a, const int* ia, const int* ja, const int* desca,
              const double* tau, double* work, const int* lwork, int* info);
// ScaLAPACK, complex: Hermitian drivers (eigenvalues, singular values and the real
// workspace are real), unitary Q.
void pcpotrf_(const char* uplo, const int* n, std::complex<float>* a, const int* ia, const int* ja, const int* desca,
              int* info);
void pzpotrf_(const char* uplo, const int* n, std::complex<double>* a, const int* ia, const int* ja, const int* desca,
              int* info);
void pcheevd_(const char* jobz, const char* uplo, const int* n, std::complex<float>* a, const int* ia, const int* ja,
              const int* desca, float* w, std::complex<float>* z, const int* iz, const int* jz, const int* descz,
              std::complex<float>* work, const int* lwork, float* rwork, const int* lrwork, int* iwork,
              const int* liwork, int* info);
void pzheevd_(const char* jobz, const char* uplo, const int* n, std::complex<double>* a, const int* ia, const int* ja,
              const int* desca, double* w, std::complex<double>* z, const int* iz, const int* jz, const int* descz,
              std::complex<double>* work, const int* lwork, double* rwork, const int* lrwork, int* iwork,
              const int* liwork, int* info);
void pcheevr_(const char* jobz, const char* range, const char* uplo, const int* n, std::complex<float>* a,
              const int* ia, const int* ja, const int* desca, const float* vl, const float* vu, const int* il,
              const int* iu, int* m, int* nz, float* w, std::complex<float>* z, const int* iz, const int* jz,
              const int* descz, std::complex<float>* work, const int* lwork, float* rwork, const int* lrwork,
              int* iwork, const int* liwork, int* info);
void pzheevr_(const char* jobz, const char* range, const char* uplo, const int* n, std::complex<double>* a,
              const int* ia, const int* ja, const int* desca, const double* vl, const double* vu, const int* il,
              const int* iu, int* m, int* nz, double* w, std::complex<double>* z, const int* iz, const int* jz,
              const int* descz, std::complex<double>* work, const int* lwork, double* rwork, const int* lrwork,
              int* iwork, const int* liwork, int* info);
void pchegvx_(const int* ibtype, const char* jobz, const char* range, const char* uplo, const int* n,
              std::complex<float>* a, const int* ia, const int* ja, const int* desca, std::complex<float>* b,
              const int* ib, const int* jb, const int* descb, const float* vl, const float* vu, const int* il,
              const int* iu, const float* abstol, int* m, int* nz, float* w, const float* orfac, std::complex<float>* z,
              const int* iz, const int* jz, const int* descz, std::complex<float>* work, const int* lwork, float* rwork,
              const int* lrwork, int* iwork, const int* liwork, int* ifail, int* iclustr, float* gap, int* info);
void pzhegvx_(const int* ibtype, const char* jobz, const char* range, const char* uplo, const int* n,
              std::complex<double>* a, const int* ia, const int* ja, const int* desca, std::complex<double>* b,
              const int* ib, const int* jb, const int* descb, const double* vl, const double* vu, const int* il,
              const int* iu, const double* abstol, int* m, int* nz, double* w, const double* orfac,
              std::complex<double>* z, const int* iz, const int* jz, const int* descz, std::complex<double>* work,
              const int* lwork, double* rwork, const int* lrwork, int* iwork, const int* liwork, int* ifail,
              int* iclustr, double* gap, int* info);
void pcgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, std::complex<float>* a, const int* ia,
              const int* ja, const int* desca, float* s, std::complex<float>* u, const int* iu, const int* ju,
              const int* descu, std::complex<float>* vt, const int* ivt, const int* jvt, const int* descvt,
              std::complex<float>* work, const int* lwork, float* rwork, int* info);
void pzgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, std::complex<double>* a, const int* ia,
              const int* ja, const int* desca, double* s, std::complex<double>* u, const int* iu, const int* ju,
              const int* descu, std::complex<double>* vt, const int* ivt, const int* jvt, const int* descvt,
              std::complex<double>* work, const int* lwork, double* rwork, int* info);
void pcgeqrf_(const int* m, const int* n, std::complex<float>* a, const int* ia, const int* ja, const int* desca,
              std::complex<float>* tau, std::complex<float>* work, const int* lwork, int* info);
void pzgeqrf_(const int* m, const int* n, std::complex<double>* a, const int* ia, const int* ja, const int* desca,
              std::complex<double>* tau, std::complex<double>* work, const int* lwork, int* info);
void pcungqr_(const int* m, const int* n, const int* k, std::complex<float>* a, const int* ia, const int* ja,
              const int* desca, const std::complex<float>* tau, std::complex<float>* work, const int* lwork, int* info);
void pzungqr_(const int* m, const int* n, const int* k, std::complex<double>* a, const int* ia, const int* ja,
              const int* desca, const std::complex<double>* tau, std::complex<double>* work, const int* lwork,
              int* info);
// ScaLAPACK: LU (inverse, solve). IPIV holds LOCr(n) + MB entries.
void psgetrf_(const int* m, const int* n, float* a, const int* ia, const int* ja, const int* desca, int* ipiv,
              int* info);
void pdgetrf_(const int* m, const int* n, double* a, const int* ia, const int* ja, const int* desca, int* ipiv,
              int* info);
void pcgetrf_(const int* m, const int* n, std::complex<float>* a, const int* ia, const int* ja, const int* desca,
              int* ipiv, int* info);
void pzgetrf_(const int* m, const int* n, std::complex<double>* a, const int* ia, const int* ja, const int* desca,
              int* ipiv, int* info);
void psgetri_(const int* n, float* a, const int* ia, const int* ja, const int* desca, const int* ipiv, float* work,
              const int* lwork, int* iwork, const int* liwork, int* info);
void pdgetri_(const int* n, double* a, const int* ia, const int* ja, const int* desca, const int* ipiv, double* work,
              const int* lwork, int* iwork, const int* liwork, int* info);
void pcgetri_(const int* n, std::complex<float>* a, const int* ia, const int* ja, const int* desca, const int* ipiv,
              std::complex<float>* work, const int* lwork, int* iwork, const int* liwork, int* info);
void pzgetri_(const int* n, std::complex<double>* a, const int* ia, const int* ja, const int* desca, const int* ipiv,
              std::complex<double>* work, const int* lwork, int* iwork, const int* liwork, int* info);
void psgesv_(const int* n, const int* nrhs, float* a, const int* ia, const int* ja, const int* desca, int* ipiv,
             float* b, const int* ib, const int* jb, const int* descb, int* info);
void pdgesv_(const int* n, const int* nrhs, double* a, const int* ia, const int* ja, const int* desca, int* ipiv,
             double* b, const int* ib, const int* jb, const int* descb, int* info);
void pcgesv_(const int* n, const int* nrhs, std::complex<float>* a, const int* ia, const int* ja, const int* desca,
             int* ipiv, std::complex<float>* b, const int* ib, const int* jb, const int* descb, int* info);
void pzgesv_(const int* n, const int* nrhs, std::complex<double>* a, const int* ia, const int* ja, const int* desca,
             int* ipiv, std::complex<double>* b, const int* ib, const int* jb, const int* descb, int* info);
// The reciprocal condition number from the LU factors (complex: a real workspace).
void psgecon_(const char* norm, const int* n, const float* a, const int* ia, const int* ja, const int* desca,
              const float* anorm, float* rcond, float* work, const int* lwork, int* iwork, const int* liwork,
              int* info);
void pdgecon_(const char* norm, const int* n, const double* a, const int* ia, const int* ja, const int* desca,
              const double* anorm, double* rcond, double* work, const int* lwork, int* iwork, const int* liwork,
              int* info);
void pcgecon_(const char* norm, const int* n, const std::complex<float>* a, const int* ia, const int* ja,
              const int* desca, const float* anorm, float* rcond, std::complex<float>* work, const int* lwork,
              float* rwork, const int* lrwork, int* info);
void pzgecon_(const char* norm, const int* n, const std::complex<double>* a, const int* ia, const int* ja,
              const int* desca, const double* anorm, double* rcond, std::complex<double>* work, const int* lwork,
              double* rwork, const int* lrwork, int* info);
float pslamch_(const int* ictxt, const char* cmach);
double pdlamch_(const int* ictxt, const char* cmach);
}
