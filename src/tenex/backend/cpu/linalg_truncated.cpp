// Truncated SVD and symmetric (Hermitian) eigensolver: the kernels behind svd and eigen_solve
// with a tenex::Truncation. The conventions (row-major, lower triangle read, signs fixed) are
// linalg.hpp's; the rank rule and the choice of LAPACK routine are described in linalg.hpp.
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "tenex/backend/cpu/linalg.hpp"
#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/backend/scalar_entries.hpp"
#include "tenex/error.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {

namespace {

static_assert(std::is_same_v<lapack_int, int>, "the bindings below take LAPACKE's sizes as int");

// std::complex<R> and C's R _Complex have the same layout (two R, real part first).
lapack_complex_float* c(std::complex<float>* p) { return reinterpret_cast<lapack_complex_float*>(p); }
lapack_complex_double* c(std::complex<double>* p) { return reinterpret_cast<lapack_complex_double*>(p); }
const lapack_complex_float* c(const std::complex<float>* p) { return reinterpret_cast<const lapack_complex_float*>(p); }
const lapack_complex_double* c(const std::complex<double>* p) {
  return reinterpret_cast<const lapack_complex_double*>(p);
}

// ---- the LAPACK steps, one overload per precision (row-major; 'L': the lower triangle).

// The singular triplets il..iu (1-based, by descending value) of a (m x n; destroyed):
// u (m x (iu-il+1)), vt ((iu-il+1) x n).
int gesvdx(int m, int n, float* a, int il, int iu, int* found, float* s, float* u, float* vt, int* superb) {
  return LAPACKE_sgesvdx(LAPACK_ROW_MAJOR, 'V', 'V', 'I', m, n, a, n, 0, 0, il, iu, found, s, u, iu - il + 1, vt, n,
                         superb);
}
int gesvdx(int m, int n, double* a, int il, int iu, int* found, double* s, double* u, double* vt, int* superb) {
  return LAPACKE_dgesvdx(LAPACK_ROW_MAJOR, 'V', 'V', 'I', m, n, a, n, 0, 0, il, iu, found, s, u, iu - il + 1, vt, n,
                         superb);
}
int gesvdx(int m, int n, std::complex<float>* a, int il, int iu, int* found, float* s, std::complex<float>* u,
           std::complex<float>* vt, int* superb) {
  return LAPACKE_cgesvdx(LAPACK_ROW_MAJOR, 'V', 'V', 'I', m, n, c(a), n, 0, 0, il, iu, found, s, c(u), iu - il + 1,
                         c(vt), n, superb);
}
int gesvdx(int m, int n, std::complex<double>* a, int il, int iu, int* found, double* s, std::complex<double>* u,
           std::complex<double>* vt, int* superb) {
  return LAPACKE_zgesvdx(LAPACK_ROW_MAJOR, 'V', 'V', 'I', m, n, c(a), n, 0, 0, il, iu, found, s, c(u), iu - il + 1,
                         c(vt), n, superb);
}

// Reduction of the symmetric (Hermitian) a to tridiagonal d, e (a then holds the reflectors).
int sytrd(int n, float* a, float* d, float* e, float* tau) {
  return LAPACKE_ssytrd(LAPACK_ROW_MAJOR, 'L', n, a, n, d, e, tau);
}
int sytrd(int n, double* a, double* d, double* e, double* tau) {
  return LAPACKE_dsytrd(LAPACK_ROW_MAJOR, 'L', n, a, n, d, e, tau);
}
int sytrd(int n, std::complex<float>* a, float* d, float* e, std::complex<float>* tau) {
  return LAPACKE_chetrd(LAPACK_ROW_MAJOR, 'L', n, c(a), n, d, e, c(tau));
}
int sytrd(int n, std::complex<double>* a, double* d, double* e, std::complex<double>* tau) {
  return LAPACKE_zhetrd(LAPACK_ROW_MAJOR, 'L', n, c(a), n, d, e, c(tau));
}

// Every eigenpair of the real tridiagonal (d, e) by MRRR: w ascending, z (n x n) the vectors.
int stemr(int n, float* d, float* e, float* w, float* z) {
  int found = 0;
  lapack_logical tryrac = 1;
  std::vector<int> support(2 * static_cast<std::size_t>(n));
  return LAPACKE_sstemr(LAPACK_ROW_MAJOR, 'V', 'A', n, d, e, 0, 0, 0, 0, &found, w, z, n, n, support.data(), &tryrac);
}
int stemr(int n, double* d, double* e, double* w, double* z) {
  int found = 0;
  lapack_logical tryrac = 1;
  std::vector<int> support(2 * static_cast<std::size_t>(n));
  return LAPACKE_dstemr(LAPACK_ROW_MAJOR, 'V', 'A', n, d, e, 0, 0, 0, 0, &found, w, z, n, n, support.data(), &tryrac);
}

// cols (n x k) = Q cols, Q the orthogonal (unitary) factor of sytrd.
int ormtr(int n, int k, const float* a, const float* tau, float* cols) {
  return LAPACKE_sormtr(LAPACK_ROW_MAJOR, 'L', 'L', 'N', n, k, a, n, tau, cols, k);
}
int ormtr(int n, int k, const double* a, const double* tau, double* cols) {
  return LAPACKE_dormtr(LAPACK_ROW_MAJOR, 'L', 'L', 'N', n, k, a, n, tau, cols, k);
}
int ormtr(int n, int k, const std::complex<float>* a, const std::complex<float>* tau, std::complex<float>* cols) {
  return LAPACKE_cunmtr(LAPACK_ROW_MAJOR, 'L', 'L', 'N', n, k, c(a), n, c(tau), c(cols), k);
}
int ormtr(int n, int k, const std::complex<double>* a, const std::complex<double>* tau, std::complex<double>* cols) {
  return LAPACKE_zunmtr(LAPACK_ROW_MAJOR, 'L', 'L', 'N', n, k, c(a), n, c(tau), c(cols), k);
}

// Cholesky factor of b in its lower triangle (b = L L^H).
int potrf(int n, float* b) { return LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'L', n, b, n); }
int potrf(int n, double* b) { return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, b, n); }
int potrf(int n, std::complex<float>* b) { return LAPACKE_cpotrf(LAPACK_ROW_MAJOR, 'L', n, c(b), n); }
int potrf(int n, std::complex<double>* b) { return LAPACKE_zpotrf(LAPACK_ROW_MAJOR, 'L', n, c(b), n); }

// The lower triangle of a replaced by that of L^-1 a L^-H (the generalized problem made standard).
int sygst(int n, float* a, const float* l) { return LAPACKE_ssygst(LAPACK_ROW_MAJOR, 1, 'L', n, a, n, l, n); }
int sygst(int n, double* a, const double* l) { return LAPACKE_dsygst(LAPACK_ROW_MAJOR, 1, 'L', n, a, n, l, n); }
int sygst(int n, std::complex<float>* a, const std::complex<float>* l) {
  return LAPACKE_chegst(LAPACK_ROW_MAJOR, 1, 'L', n, c(a), n, c(l), n);
}
int sygst(int n, std::complex<double>* a, const std::complex<double>* l) {
  return LAPACKE_zhegst(LAPACK_ROW_MAJOR, 1, 'L', n, c(a), n, c(l), n);
}

// cols (n x k) = L^-H cols: the standard problem's vectors back to the generalized one's.
int trtrs(int n, int k, const float* l, float* cols) {
  return LAPACKE_strtrs(LAPACK_ROW_MAJOR, 'L', 'T', 'N', n, k, l, n, cols, k);
}
int trtrs(int n, int k, const double* l, double* cols) {
  return LAPACKE_dtrtrs(LAPACK_ROW_MAJOR, 'L', 'T', 'N', n, k, l, n, cols, k);
}
int trtrs(int n, int k, const std::complex<float>* l, std::complex<float>* cols) {
  return LAPACKE_ctrtrs(LAPACK_ROW_MAJOR, 'L', 'C', 'N', n, k, c(l), n, c(cols), k);
}
int trtrs(int n, int k, const std::complex<double>* l, std::complex<double>* cols) {
  return LAPACKE_ztrtrs(LAPACK_ROW_MAJOR, 'L', 'C', 'N', n, k, c(l), n, c(cols), k);
}

template <class T>
std::string routine_name(const char* real_suffix, const char* complex_suffix) {
  return tenex::detail::lapack_routine_name<T>(real_suffix, complex_suffix);
}

template <class T>
double magnitude_squared(T x) {
  if constexpr (is_complex_v<T>) {
    return std::norm(std::complex<double>(x));
  } else {
    return static_cast<double>(x) * static_cast<double>(x);
  }
}


// Throws NumericalError for the first non-finite entry of a (m x n; its lower triangle if lower).
template <class T>
void require_finite(const T* a, std::size_t m, std::size_t n, bool lower, const char* operation) {
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t end = lower ? i + 1 : n;
    for (std::size_t j = 0; j < end; ++j) {
      if (tenex::detail::is_finite_entry(a[i * n + j])) continue;
      throw NumericalError("tenex: " + std::string(operation) + ": the matrix has a non-finite entry at (" +
                           std::to_string(i) + ", " + std::to_string(j) + "); a decomposition needs finite input");
    }
  }
}

// Writes the kept rank and the discarded weight, zeroes the dropped values and vectors.
template <class T>
void finish(const TruncatedRank& kept, std::size_t bound, T* columns, std::size_t rows, T* values, T* paired_rows,
            std::size_t cols, T* report) {
  for (std::size_t i = 0; i < rows; ++i) std::fill(columns + i * bound + kept.rank, columns + (i + 1) * bound, T(0));
  std::fill(values + kept.rank, values + bound, T(0));
  if (paired_rows) std::fill(paired_rows + kept.rank * cols, paired_rows + bound * cols, T(0));
  report[0] = T(static_cast<real_type_t<T>>(kept.rank));
  report[1] = T(static_cast<real_type_t<T>>(kept.discarded_weight));
}

}  // namespace

TruncatedRank truncated_rank(const std::vector<double>& squares, double total, std::size_t max_rank, double cutoff) {
  std::size_t rank = max_rank != 0 ? std::min(max_rank, squares.size()) : squares.size();
  double kept = 0;
  for (std::size_t i = 0; i < rank; ++i) kept += squares[i];
  // What lies beyond the values computed (or beyond max_rank) is dropped already.
  double dropped = std::max(0.0, total - kept);
  if (cutoff > 0) {
    while (rank > 1 && dropped + squares[rank - 1] <= cutoff * total) dropped += squares[--rank];
  }
  return {rank, total > 0 ? std::min(1.0, dropped / total) : 0.0};
}

template <class T>
KernelCount svd_truncated(const T* a, std::size_t m, std::size_t n, std::size_t max_rank, double cutoff, T* u, T* s,
                          T* vt, T* report) {
  using R = real_type_t<T>;
  KernelCount count;
  const std::size_t k = std::min(m, n);
  const std::size_t bound = max_rank != 0 ? std::min(max_rank, k) : k;
  report[0] = report[1] = T(0);
  if (k == 0) return count;
  std::vector<double> squares;
  double total = 0;
  const double big = static_cast<double>(std::max(m, n)), small = static_cast<double>(k);
  if (static_cast<double>(bound) <= tuning::kSelectiveSvdShare * small) {
    // Only the wanted triplets (gesvdx, range 'I'): the bidiagonal reduction, then bound
    // vectors instead of k. The cutoff needs the sum of all squares: ||a||_F^2.
    if (m > static_cast<std::size_t>(INT32_MAX) || n > static_cast<std::size_t>(INT32_MAX)) {
      throw BackendError("tenex: svd: extents " + std::to_string(m) + " x " + std::to_string(n) +
                         " exceed the 32-bit LAPACK interface; split the problem or use a smaller matrix");
    }
    require_finite(a, m, n, false, "svd");
    const auto work = std::make_unique_for_overwrite<T[]>(m * n);  // gesvdx destroys its input
    for (std::size_t i = 0; i < m * n; ++i) {
      work[i] = a[i];
      total += magnitude_squared(a[i]);
    }
    std::vector<R> values(k);
    std::vector<int> superb(12 * k);
    int found = 0;
    const int info = gesvdx(static_cast<int>(m), static_cast<int>(n), work.get(), 1, static_cast<int>(bound), &found,
                            values.data(), u, vt, superb.data());
    check_lapack_info(routine_name<T>("gesvdx", "gesvdx").c_str(), info, k);
    if (found != static_cast<int>(bound)) {
      throw NumericalError("tenex: svd: " + routine_name<T>("gesvdx", "gesvdx") + " found " + std::to_string(found) +
                           " of the " + std::to_string(bound) + " singular values asked for");
    }
    for (std::size_t i = 0; i < bound; ++i) {
      s[i] = T(values[i]);
      squares.push_back(static_cast<double>(values[i]) * static_cast<double>(values[i]));
    }
    fix_vector_signs(u, m, bound, vt, n);
    count.calls = 1;
    count.flops = 4 * big * small * small - 4 * small * small * small / 3 + 4 * (big + small) * small * bound;
  } else {
    // Most values are kept: the full divide-and-conquer SVD (gesdd), then the cut.
    std::unique_ptr<T[]> full_u, full_s, full_vt;
    T *uu = u, *ss = s, *vv = vt;
    if (bound < k) {
      full_u = std::make_unique_for_overwrite<T[]>(m * k);
      full_s = std::make_unique_for_overwrite<T[]>(k);
      full_vt = std::make_unique_for_overwrite<T[]>(k * n);
      uu = full_u.get();
      ss = full_s.get();
      vv = full_vt.get();
    }
    count = svd(a, m, n, uu, ss, vv);
    for (std::size_t i = 0; i < k; ++i) {
      const double v = static_cast<double>(std::real(ss[i]));
      total += v * v;
      if (i < bound) squares.push_back(v * v);
    }
    if (bound < k) {
      for (std::size_t i = 0; i < m; ++i) std::copy(uu + i * k, uu + i * k + bound, u + i * bound);
      std::copy(ss, ss + bound, s);
      std::copy(vv, vv + bound * n, vt);
    }
  }
  finish(truncated_rank(squares, total, max_rank, cutoff), bound, u, m, s, vt, n, report);
  return count;
}

template <class T>
KernelCount eigen_truncated(const T* a, const T* b, std::size_t n, std::size_t max_rank, double cutoff, T* vectors,
                            T* values, T* report) {
  using R = real_type_t<T>;
  KernelCount count;
  const std::size_t bound = max_rank != 0 ? std::min(max_rank, n) : n;
  report[0] = report[1] = T(0);
  if (n == 0) return count;
  if (n > static_cast<std::size_t>(INT32_MAX)) {
    throw BackendError("tenex: eigen_solve: extent " + std::to_string(n) +
                       " exceeds the 32-bit LAPACK interface; split the problem or use a smaller matrix");
  }
  require_finite(a, n, n, true, "eigen_solve");
  require_symmetric(a, n, symmetry_tolerance<T>(n), "eigen_solve");
  const int ln = static_cast<int>(n);
  const auto work = std::make_unique_for_overwrite<T[]>(n * n);
  std::copy(a, a + n * n, work.get());
  std::unique_ptr<T[]> factor;
  if (b) {
    // a v = w b v: with b = L L^H, the standard problem of L^-1 a L^-H (lower triangle), whose
    // vectors y give v = L^-H y (b-orthonormal), as sygvd does, but only for the kept pairs.
    require_finite(b, n, n, true, "eigen_solve");
    require_symmetric(b, n, symmetry_tolerance<T>(n), "eigen_solve");
    factor = std::make_unique_for_overwrite<T[]>(n * n);
    std::copy(b, b + n * n, factor.get());
    check_lapack_info(routine_name<T>("potrf", "potrf").c_str(), potrf(ln, factor.get()), n);
    check_lapack_info(routine_name<T>("sygst", "hegst").c_str(), sygst(ln, work.get(), factor.get()), n);
  }
  // Tridiagonal reduction, every eigenvalue and (cheap, O(n^2)) tridiagonal eigenvector by
  // MRRR, then only the kept vectors transformed back: the back-transformation of all n
  // vectors is what the full solver spends most on.
  std::vector<R> d(n), e(n), w(n);
  std::vector<T> tau(n);
  check_lapack_info(routine_name<T>("sytrd", "hetrd").c_str(), sytrd(ln, work.get(), d.data(), e.data(), tau.data()),
                    n);
  std::vector<R> z(n * n);
  check_lapack_info(routine_name<R>("stemr", "stemr").c_str(), stemr(ln, d.data(), e.data(), w.data(), z.data()), n);
  // The kept pairs: descending |w|, the positive one first on a tie (w ascending from stemr).
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::reverse(order.begin(), order.end());
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return std::abs(w[x]) > std::abs(w[y]); });
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < bound; ++j) vectors[i * bound + j] = T(z[i * n + order[j]]);
  }
  check_lapack_info(routine_name<T>("ormtr", "unmtr").c_str(),
                    ormtr(ln, static_cast<int>(bound), work.get(), tau.data(), vectors), n);
  if (factor) {
    check_lapack_info(routine_name<T>("trtrs", "trtrs").c_str(),
                      trtrs(ln, static_cast<int>(bound), factor.get(), vectors), n);
  }
  std::vector<double> squares(bound);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) total += static_cast<double>(w[i]) * static_cast<double>(w[i]);
  for (std::size_t j = 0; j < bound; ++j) {
    values[j] = T(w[order[j]]);
    squares[j] = static_cast<double>(w[order[j]]) * static_cast<double>(w[order[j]]);
  }
  fix_vector_signs(vectors, n, bound, static_cast<T*>(nullptr), 0);
  finish(truncated_rank(squares, total, max_rank, cutoff), bound, vectors, n, values, static_cast<T*>(nullptr), 0,
         report);
  const double dn = static_cast<double>(n);
  count.flops = 4 * dn * dn * dn / 3 + 2 * dn * dn * static_cast<double>(bound);
  count.calls = 3;
  if (factor) {
    count.flops += 4 * dn * dn * dn / 3 + dn * dn * static_cast<double>(bound);  // potrf, sygst, trtrs
    count.calls += 3;
  }
  return count;
}

#define TENEX_INSTANTIATE_TRUNCATED(T)                                                                            \
  template KernelCount svd_truncated<T>(const T*, std::size_t, std::size_t, std::size_t, double, T*, T*, T*, T*); \
  template KernelCount eigen_truncated<T>(const T*, const T*, std::size_t, std::size_t, double, T*, T*, T*);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_TRUNCATED)
#undef TENEX_INSTANTIATE_TRUNCATED

}  // namespace tenex::detail::cpu
