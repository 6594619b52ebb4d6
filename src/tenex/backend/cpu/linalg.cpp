// Dense decompositions through LAPACKE (row-major) and matrix powers through cblas, written
// once over T: the complex types reach LAPACK's c and z routines through the overloads of
// linalg_complex.hpp. The conventions (lower triangle read, sign and phase fixing, flop
// formulas) are in linalg.hpp.
#include "tenex/backend/cpu/linalg.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tenex/backend/cpu/linalg_complex.hpp"
#include "tenex/backend/matrix_checks.hpp"
#include "tenex/backend/scalar_entries.hpp"
#include "tenex/error.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {

namespace {

// ---- precision dispatch: one overload per scalar, so the kernels below are written once.

lapack_int potrf(lapack_int n, float* a) { return LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'L', n, a, n); }
lapack_int potrf(lapack_int n, double* a) { return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, a, n); }

lapack_int syevd(lapack_int n, float* a, float* w) { return LAPACKE_ssyevd(LAPACK_ROW_MAJOR, 'V', 'L', n, a, n, w); }
lapack_int syevd(lapack_int n, double* a, double* w) { return LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', n, a, n, w); }

lapack_int sygvd(lapack_int n, float* a, float* b, float* w) {
  return LAPACKE_ssygvd(LAPACK_ROW_MAJOR, 1, 'V', 'L', n, a, n, b, n, w);
}
lapack_int sygvd(lapack_int n, double* a, double* b, double* w) {
  return LAPACKE_dsygvd(LAPACK_ROW_MAJOR, 1, 'V', 'L', n, a, n, b, n, w);
}

lapack_int geqrf(lapack_int m, lapack_int n, float* a, lapack_int lda, float* tau) {
  return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, m, n, a, lda, tau);
}
lapack_int geqrf(lapack_int m, lapack_int n, double* a, lapack_int lda, double* tau) {
  return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, lda, tau);
}

lapack_int orgqr(lapack_int m, lapack_int k, float* a, lapack_int lda, const float* tau) {
  return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, m, k, k, a, lda, tau);
}
lapack_int orgqr(lapack_int m, lapack_int k, double* a, lapack_int lda, const double* tau) {
  return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, k, k, a, lda, tau);
}

lapack_int gesdd(lapack_int m, lapack_int n, float* a, float* s, float* u, lapack_int ldu, float* vt) {
  return LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', m, n, a, n, s, u, ldu, vt, n);
}
lapack_int gesdd(lapack_int m, lapack_int n, double* a, double* s, double* u, lapack_int ldu, double* vt) {
  return LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, n, a, n, s, u, ldu, vt, n);
}

lapack_int gesvd(lapack_int m, lapack_int n, float* a, float* s, float* u, lapack_int ldu, float* vt, float* superb) {
  return LAPACKE_sgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, a, n, s, u, ldu, vt, n, superb);
}
lapack_int gesvd(lapack_int m, lapack_int n, double* a, double* s, double* u, lapack_int ldu, double* vt,
                 double* superb) {
  return LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, a, n, s, u, ldu, vt, n, superb);
}

void gemm(lapack_int n, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}
void gemm(lapack_int n, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
}

// Matrix functions work column-major on row-major buffers: a row-major A is a column-major
// A^T, so LAPACKE has nothing to transpose (see inverse and solve).
lapack_int getrf_cm(lapack_int n, float* a, lapack_int* ipiv) {
  return LAPACKE_sgetrf(LAPACK_COL_MAJOR, n, n, a, n, ipiv);
}
lapack_int getrf_cm(lapack_int n, double* a, lapack_int* ipiv) {
  return LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, a, n, ipiv);
}
lapack_int getri_cm(lapack_int n, float* a, const lapack_int* ipiv) {
  return LAPACKE_sgetri(LAPACK_COL_MAJOR, n, a, n, ipiv);
}
lapack_int getri_cm(lapack_int n, double* a, const lapack_int* ipiv) {
  return LAPACKE_dgetri(LAPACK_COL_MAJOR, n, a, n, ipiv);
}
lapack_int getrs_cm(char trans, lapack_int n, lapack_int nrhs, const float* a, const lapack_int* ipiv, float* b) {
  return LAPACKE_sgetrs(LAPACK_COL_MAJOR, trans, n, nrhs, a, n, ipiv, b, n);
}
lapack_int getrs_cm(char trans, lapack_int n, lapack_int nrhs, const double* a, const lapack_int* ipiv, double* b) {
  return LAPACKE_dgetrs(LAPACK_COL_MAJOR, trans, n, nrhs, a, n, ipiv, b, n);
}
lapack_int gecon_cm(lapack_int n, const float* lu, float anorm, float* rcond) {
  return LAPACKE_sgecon(LAPACK_COL_MAJOR, '1', n, lu, n, anorm, rcond);
}
lapack_int gecon_cm(lapack_int n, const double* lu, double anorm, double* rcond) {
  return LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', n, lu, n, anorm, rcond);
}
lapack_int potrf_cm(lapack_int n, float* a) { return LAPACKE_spotrf(LAPACK_COL_MAJOR, 'U', n, a, n); }
lapack_int potrf_cm(lapack_int n, double* a) { return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', n, a, n); }
lapack_int potrs_cm(lapack_int n, lapack_int nrhs, const float* a, float* b) {
  return LAPACKE_spotrs(LAPACK_COL_MAJOR, 'U', n, nrhs, a, n, b, n);
}
lapack_int potrs_cm(lapack_int n, lapack_int nrhs, const double* a, double* b) {
  return LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'U', n, nrhs, a, n, b, n);
}
lapack_int pocon_cm(lapack_int n, const float* a, float anorm, float* rcond) {
  return LAPACKE_spocon(LAPACK_COL_MAJOR, 'U', n, a, n, anorm, rcond);
}
lapack_int pocon_cm(lapack_int n, const double* a, double anorm, double* rcond) {
  return LAPACKE_dpocon(LAPACK_COL_MAJOR, 'U', n, a, n, anorm, rcond);
}
lapack_int syevd_cm(lapack_int n, float* a, float* w) { return LAPACKE_ssyevd(LAPACK_COL_MAJOR, 'V', 'U', n, a, n, w); }
lapack_int syevd_cm(lapack_int n, double* a, double* w) {
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', n, a, n, w);
}
// c (column-major, upper triangle) = u u^T.
void syrk_cm(lapack_int n, const float* u, float* c) {
  cblas_ssyrk(CblasColMajor, CblasUpper, CblasNoTrans, n, n, 1.0f, u, n, 0.0f, c, n);
}
void syrk_cm(lapack_int n, const double* u, double* c) {
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, n, n, 1.0, u, n, 0.0, c, n);
}

using complex_lapack::gecon_cm, complex_lapack::gemm, complex_lapack::geqrf, complex_lapack::gesdd,
    complex_lapack::gesvd, complex_lapack::getrf_cm, complex_lapack::getri_cm, complex_lapack::getrs_cm,
    complex_lapack::orgqr, complex_lapack::pocon_cm, complex_lapack::potrf, complex_lapack::potrf_cm,
    complex_lapack::potrs_cm, complex_lapack::syevd, complex_lapack::syevd_cm, complex_lapack::sygvd,
    complex_lapack::syrk_cm;

// conjugate, is_finite_entry, is_nan_entry, widen, largest_part and scale_entry:
// backend/scalar_entries.hpp.
template <class T>
std::string routine_name(const char* suffix, const char* complex_suffix = nullptr) {
  return tenex::detail::lapack_routine_name<T>(suffix, complex_suffix);
}

// A unit factor that makes x real and non-negative: the sign for reals, exactly -1 or 1 for
// a complex number on the real axis, conj(x) / |x| otherwise.
template <class T>
T unit_phase(T x) {
  if constexpr (is_complex_v<T>) {
    if (x.imag() == 0) return x.real() < 0 ? T(-1) : T(1);
    return std::conj(x) / std::abs(x);
  } else {
    return x < T(0) ? T(-1) : T(1);
  }
}

// ---- argument preparation.

// LAPACKE takes 32-bit sizes, and it multiplies them (lda * n) when it transposes.
lapack_int to_lapack_int(std::size_t extent, const char* operation) {
  if (extent > static_cast<std::size_t>(INT_MAX)) {
    throw BackendError("tenex: " + std::string(operation) + ": extent " + std::to_string(extent) +
                       " exceeds the 32-bit LAPACK interface (at most " + std::to_string(INT_MAX) +
                       "); split the problem or use a smaller matrix");
  }
  return static_cast<lapack_int>(extent);
}

// LAPACKE rejects a NaN with a negative info, which our wrapper would report as a tenex
// bug, and an infinity turns LAPACK's results into NaN silently; both are the user's
// data, so they get a NumericalError that says where. The check rides along the copy
// into the workspace that LAPACK needs anyway, so the input is read once; only when it
// fails is the input searched again for the position.
//
// The test is on the bits so that the loop vectorizes (a floating-point compare
// reduction does not without -ffast-math) and the copy runs at memcpy speed: adding one
// to the exponent field carries into the sign bit exactly when the field is all ones,
// i.e. for NaN and infinity. A complex entry is checked as its two parts.
template <class T>
bool copy_checked(const T* from, std::size_t count, T* to) {
  if constexpr (is_complex_v<T>) {
    using R = real_type_t<T>;
    return copy_checked(reinterpret_cast<const R*>(from), 2 * count, reinterpret_cast<R*>(to));
  } else {
    using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    static_assert(sizeof(Bits) == sizeof(T) && std::numeric_limits<T>::is_iec559);
    constexpr int mantissa_bits = std::numeric_limits<T>::digits - 1;
    constexpr Bits exponent_one = Bits(1) << mantissa_bits;
    constexpr Bits exponent_mask = (~Bits(0) >> 1) & ~(exponent_one - 1);
    constexpr Bits sign_bit = Bits(1) << (sizeof(T) * 8 - 1);
    Bits seen = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const T x = from[i];
      to[i] = x;
      seen |= (std::bit_cast<Bits>(x) & exponent_mask) + exponent_one;
    }
    return (seen & sign_bit) == 0;
  }
}

// Copies the lower triangle of a into out and zeroes the upper one: what LAPACK reads
// of a symmetric input (the upper triangle is never looked at, not even for NaN), with
// Cholesky's zero upper triangle already in place. Returns whether the lower was finite.
template <class T>
bool copy_lower_checked(const T* a, std::size_t n, T* out) {
  bool finite = true;
  for (std::size_t i = 0; i < n; ++i) {
    finite &= copy_checked(a + i * n, i + 1, out + i * n);
    std::fill(out + i * n + i + 1, out + (i + 1) * n, T(0));
  }
  return finite;
}

// Throws for the first non-finite entry of a (m x n; its lower triangle if lower_only).
template <class T>
[[noreturn]] void throw_non_finite(const T* a, std::size_t m, std::size_t n, bool lower_only, const char* operation,
                                   const char* which) {
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t end = lower_only ? i + 1 : n;
    for (std::size_t j = 0; j < end; ++j) {
      const T x = a[i * n + j];
      if (!is_finite_entry(x)) {
        throw NumericalError("tenex: " + std::string(operation) + ": " + which + " has a non-finite entry (" +
                             (is_nan_entry(x) ? "nan" : "inf") + ") at (" + std::to_string(i) + ", " +
                             std::to_string(j) + "); a decomposition needs finite input");
      }
    }
  }
  throw InternalError("tenex: " + std::string(operation) + ": a non-finite entry was seen in " + which +
                      " but not found again; this is a bug in tenex, please report it");
}

// The sign convention of linalg.hpp: column j of `columns` (rows x k) gets its entry of
// largest magnitude positive (complex: multiplied by the unit phase that makes it real
// positive, and then set to exactly its magnitude); row j of `paired_rows` (k x cols, may be
// null) is multiplied by the conjugate phase, so a product columns * paired_rows is kept.
// Row-wise passes: a column walk of a large row-major matrix would miss cache on every element.
template <class T>
void fix_column_signs(T* columns, std::size_t rows, std::size_t k, T* paired_rows, std::size_t cols) {
  using R = real_type_t<T>;
  std::vector<R> largest(k, R(0));
  std::vector<T> value(k, T(0));
  std::vector<std::size_t> where(k, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    const T* row = columns + i * k;
    for (std::size_t j = 0; j < k; ++j) {
      const R magnitude = std::abs(row[j]);
      if (magnitude > largest[j]) {
        largest[j] = magnitude;
        value[j] = row[j];
        where[j] = i;
      }
    }
  }
  std::vector<T> phase(k);
  bool any = false;
  for (std::size_t j = 0; j < k; ++j) {
    phase[j] = unit_phase(value[j]);
    any = any || phase[j] != T(1);
  }
  if (!any) return;
  for (std::size_t i = 0; i < rows; ++i) {
    T* row = columns + i * k;
    for (std::size_t j = 0; j < k; ++j) row[j] *= phase[j];
  }
  if constexpr (is_complex_v<T>) {
    for (std::size_t j = 0; j < k; ++j) columns[where[j] * k + j] = largest[j];  // real, without the rounding
  }
  if (paired_rows != nullptr) {
    for (std::size_t j = 0; j < k; ++j) {
      if (phase[j] != T(1)) {
        const T factor = conjugate(phase[j]);
        for (std::size_t c = 0; c < cols; ++c) paired_rows[j * cols + c] *= factor;
      }
    }
  }
}

// LAPACK writes eigenvalues and singular values as reals: straight into the kernel's output
// for real T; for complex T into a buffer that store() copies out as complex numbers with
// imaginary part 0.
template <class T>
class RealValues {
 public:
  RealValues(T* out, std::size_t count) : out_(out) {
    if constexpr (is_complex_v<T>) buffer_.resize(count);
  }
  real_type_t<T>* data() {
    if constexpr (is_complex_v<T>) {
      return buffer_.data();
    } else {
      return out_;
    }
  }
  void store() const { std::copy(buffer_.begin(), buffer_.end(), out_); }

 private:
  T* out_;
  std::vector<real_type_t<T>> buffer_;  // empty for real T
};

// Hermitian inputs read from the lower triangle (cholesky): LAPACK takes only the real part
// of the diagonal, so an imaginary part there, which no Hermitian matrix has, would be dropped
// silently; beyond symmetry_tolerance relative to max |a| (lower triangle) it is an error.
template <class T>
void require_real_diagonal(const T* a, std::size_t n, const char* operation) {
  if constexpr (is_complex_v<T>) {
    double scale = 0, largest = 0;
    std::size_t where = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j <= i; ++j) scale = std::max(scale, std::abs(widen(a[i * n + j])));
      const double imaginary = std::abs(static_cast<double>(a[i * n + i].imag()));
      if (imaginary > largest) {
        largest = imaginary;
        where = i;
      }
    }
    const double tolerance = symmetry_tolerance<T>(n);
    if (largest > tolerance * scale) {
      const std::string at = std::to_string(where);
      throw NumericalError("tenex: " + std::string(operation) + ": the " + std::to_string(n) + " x " +
                           std::to_string(n) + " matrix is not Hermitian: its diagonal entry (" + at + ", " + at +
                           ") has the imaginary part " + short_number(largest) + ", " + short_number(largest / scale) +
                           " relative to max |a| = " + short_number(scale) + ", above the tolerance " +
                           short_number(tolerance) + "; " + operation +
                           " needs a Hermitian matrix, whose diagonal is real");
    }
  }
}

// What a positive info means, per routine (suffix without the precision letter; `complex`:
// a c or z routine, whose matrices are Hermitian where the real ones' are symmetric).
std::string explain_info(const std::string& suffix, bool complex, long long info, std::size_t n) {
  const std::string symmetric = complex ? "Hermitian" : "symmetric";
  const auto nn = static_cast<long long>(n);
  const std::string i = std::to_string(info);
  // syevd/sygvd with vectors: divide and conquer failed on rows/columns info/(n+1) .. info%(n+1).
  const auto divide_and_conquer = [&] {
    return "the eigensolver did not converge: it failed to compute an eigenvalue of the submatrix in rows "
           "and columns " +
           std::to_string(info / (nn + 1)) + " through " + std::to_string(info % (nn + 1)) +
           "; the matrix may be badly scaled or contain values near overflow";
  };
  if (suffix == "potrf") {
    return "the leading minor of order " + i + " is not positive definite, so the matrix is not " + symmetric +
           " positive definite; cholesky needs a " + symmetric + " positive definite matrix";
  }
  if (suffix == "syevd" || suffix == "heevd") return divide_and_conquer();
  if (suffix == "sygvd" || suffix == "hegvd") {
    if (info > nn) {
      return "the leading minor of order " + std::to_string(info - nn) +
             " of b is not positive definite; the generalized eigensolver needs b " + symmetric + " positive definite";
    }
    return divide_and_conquer();
  }
  if (suffix == "gesdd") return "the divide-and-conquer SVD (bdsdc) did not converge";
  if (suffix == "gesvd") {
    return "the SVD did not converge: " + i +
           " superdiagonals of an intermediate bidiagonal form did not "
           "converge to zero";
  }
  return "the routine reported a numerical failure";
}

}  // namespace

void check_lapack_info(const char* routine, long long info, std::size_t n) {
  if (info == 0) return;
  const std::string name(routine);
  if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR) {
    throw BackendError("tenex: " + name + " failed (info = " + std::to_string(info) +
                       "): LAPACKE could not allocate its workspace; free memory or use a smaller matrix");
  }
  if (info < 0) {
    throw InternalError("tenex: " + name + " failed (info = " + std::to_string(info) + "): argument " +
                        std::to_string(-info) + " had an illegal value; this is a bug in tenex, please report it");
  }
  throw NumericalError("tenex: " + name + " failed (info = " + std::to_string(info) + "): " +
                       explain_info(name.size() > 1 ? name.substr(1) : name,
                                    name.size() > 1 && (name[0] == 'c' || name[0] == 'z'), info, n));
}

template <class T>
KernelCount cholesky(const T* a, std::size_t n, T* l) {
  KernelCount count;
  if (n == 0) return count;
  const lapack_int ln = to_lapack_int(n, "cholesky");
  if (!copy_lower_checked(a, n, l)) throw_non_finite(a, n, n, true, "cholesky", "the matrix");
  require_real_diagonal(a, n, "cholesky");
  check_lapack_info(routine_name<T>("potrf").c_str(), potrf(ln, l), n);
  const double dn = static_cast<double>(n);
  count.flops = dn * dn * dn / 3;
  count.calls = 1;
  return count;
}

template <class T>
KernelCount eigen_symmetric(const T* a, std::size_t n, T* vectors, T* values) {
  KernelCount count;
  if (n == 0) return count;
  const lapack_int ln = to_lapack_int(n, "eigen_solve");
  if (!copy_lower_checked(a, n, vectors)) throw_non_finite(a, n, n, true, "eigen_solve", "the matrix");
  require_symmetric(a, n, symmetry_tolerance<T>(n), "eigen_solve");
  RealValues<T> w(values, n);
  check_lapack_info(routine_name<T>("syevd", "heevd").c_str(), syevd(ln, vectors, w.data()), n);
  w.store();
  fix_column_signs(vectors, n, n, static_cast<T*>(nullptr), 0);
  const double dn = static_cast<double>(n);
  count.flops = 9 * dn * dn * dn;
  count.calls = 1;
  return count;
}

template <class T>
KernelCount eigen_generalized(const T* a, const T* b, std::size_t n, T* vectors, T* values) {
  KernelCount count;
  if (n == 0) return count;
  const lapack_int ln = to_lapack_int(n, "eigen_solve");
  if (!copy_lower_checked(a, n, vectors)) throw_non_finite(a, n, n, true, "eigen_solve", "the matrix a");
  // sygvd overwrites b with its Cholesky factor. Not zero-filled: every element is written.
  const auto b_factor = std::make_unique_for_overwrite<T[]>(n * n);
  if (!copy_lower_checked(b, n, b_factor.get())) throw_non_finite(b, n, n, true, "eigen_solve", "the matrix b");
  require_symmetric(a, n, symmetry_tolerance<T>(n), "eigen_solve", "a");
  require_symmetric(b, n, symmetry_tolerance<T>(n), "eigen_solve", "b");
  RealValues<T> w(values, n);
  check_lapack_info(routine_name<T>("sygvd", "hegvd").c_str(), sygvd(ln, vectors, b_factor.get(), w.data()), n);
  w.store();
  fix_column_signs(vectors, n, n, static_cast<T*>(nullptr), 0);
  const double dn = static_cast<double>(n);
  count.flops = 34 * dn * dn * dn / 3;
  count.calls = 1;
  return count;
}

template <class T>
KernelCount qr(const T* a, std::size_t m, std::size_t n, T* q, T* r) {
  KernelCount count;
  const std::size_t k = std::min(m, n);
  if (k == 0) return count;
  const lapack_int lm = to_lapack_int(m, "qr");
  const lapack_int ln = to_lapack_int(n, "qr");
  const lapack_int lk = static_cast<lapack_int>(k);
  std::vector<T> tau(k);
  // Factor in whichever output has a's shape (q when tall, r when wide), so no extra
  // m x n workspace is needed; then move the other factor out of it.
  if (m >= n) {
    if (!copy_checked(a, m * n, q)) throw_non_finite(a, m, n, false, "qr", "the matrix");
    check_lapack_info(routine_name<T>("geqrf").c_str(), geqrf(lm, ln, q, ln, tau.data()), k);
    for (std::size_t i = 0; i < k; ++i) {
      std::fill(r + i * n, r + i * n + i, T(0));
      std::copy(q + i * n + i, q + (i + 1) * n, r + i * n + i);
    }
  } else {
    if (!copy_checked(a, m * n, r)) throw_non_finite(a, m, n, false, "qr", "the matrix");
    check_lapack_info(routine_name<T>("geqrf").c_str(), geqrf(lm, ln, r, ln, tau.data()), k);
    for (std::size_t i = 0; i < k; ++i) {  // reflectors below the diagonal of r's first k columns
      std::copy(r + i * n, r + i * n + i, q + i * k);
      std::fill(q + i * k + i, q + (i + 1) * k, T(0));
      std::fill(r + i * n, r + i * n + i, T(0));
    }
  }
  check_lapack_info(routine_name<T>("orgqr", "ungqr").c_str(), orgqr(lm, lk, q, lk, tau.data()), k);

  // Real non-negative diagonal of R (linalg.hpp): row i of r times the unit phase that makes
  // r(i,i) so, column i of q times its conjugate. (geqrf's diagonal is real already, as
  // LAPACK's complex reflectors make it, so the phase is a sign in practice.)
  std::vector<T> phase(k);
  bool any = false;
  for (std::size_t i = 0; i < k; ++i) {
    phase[i] = unit_phase(r[i * n + i]);
    any = any || phase[i] != T(1);
  }
  if (any) {
    for (std::size_t i = 0; i < k; ++i) {
      if (phase[i] != T(1)) {
        for (std::size_t j = i; j < n; ++j) r[i * n + j] *= phase[i];
        if constexpr (is_complex_v<T>) r[i * n + i] = std::abs(r[i * n + i]);  // real, without the rounding
      }
    }
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < k; ++j) q[i * k + j] *= conjugate(phase[j]);
    }
  }

  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  count.flops = (2 * dm * dn * dk - 2 * dk * dk * dk / 3) + (2 * dm * dk * dk - 2 * dk * dk * dk / 3);
  count.calls = 2;
  return count;
}

template <class T>
KernelCount svd(const T* a, std::size_t m, std::size_t n, T* u, T* s, T* vt) {
  KernelCount count;
  const std::size_t k = std::min(m, n);
  if (k == 0) return count;
  const lapack_int lm = to_lapack_int(m, "svd");
  const lapack_int ln = to_lapack_int(n, "svd");
  const lapack_int lk = static_cast<lapack_int>(k);
  const double big = static_cast<double>(std::max(m, n)), small = static_cast<double>(k);
  const double flops_per_call = 14 * big * small * small + 8 * small * small * small;

  const auto work = std::make_unique_for_overwrite<T[]>(m * n);  // gesdd destroys its input
  if (!copy_checked(a, m * n, work.get())) throw_non_finite(a, m, n, false, "svd", "the matrix");
  RealValues<T> values(s, k);
  lapack_int info = gesdd(lm, ln, work.get(), values.data(), u, lk, vt);
  count.calls = 1;
  count.flops = flops_per_call;
  if (info > 0) {
    // bdsdc's divide and conquer failed; the QR iteration of gesvd is slower but may
    // still converge. Its own failure is the one reported.
    std::copy(a, a + m * n, work.get());
    std::vector<real_type_t<T>> superb(k > 1 ? k - 1 : 1);
    info = gesvd(lm, ln, work.get(), values.data(), u, lk, vt, superb.data());
    check_lapack_info(routine_name<T>("gesvd").c_str(), info, k);
    count.calls = 2;
    count.flops += flops_per_call;
  } else {
    check_lapack_info(routine_name<T>("gesdd").c_str(), info, k);
  }
  values.store();
  fix_column_signs(u, m, k, vt, n);
  return count;
}

template <class T>
KernelCount matrix_power(const T* a, std::size_t n, unsigned p, T* out) {
  KernelCount count;
  if (n == 0) return count;
  if (p == 0) {
    std::fill(out, out + n * n, T(0));
    for (std::size_t i = 0; i < n; ++i) out[i * n + i] = T(1);
    return count;
  }
  if (p == 1) {
    std::copy(a, a + n * n, out);
    return count;
  }
  const lapack_int ln = to_lapack_int(n, "pow");
  // Left-to-right binary powering: square for every bit after the leading one, and
  // multiply by a where the bit is set. gemm cannot work in place, so the products
  // alternate between out and one temporary, starting in whichever makes the last
  // product land in out; the first product reads a directly, so nothing is copied.
  const int bits = static_cast<int>(std::bit_width(p));
  const int gemms = (bits - 1) + (std::popcount(p) - 1);
  const auto temp = gemms >= 2 ? std::make_unique_for_overwrite<T[]>(n * n) : nullptr;
  T* next = gemms % 2 == 1 ? out : temp.get();
  const T* current = a;
  const auto multiply = [&](const T* right) {
    gemm(ln, current, right, next);
    current = next;
    next = next == out ? temp.get() : out;
  };
  for (int bit = bits - 2; bit >= 0; --bit) {
    multiply(current);
    if ((p >> bit) & 1u) multiply(a);
  }
  const double dn = static_cast<double>(n);
  count.flops = 2 * dn * dn * dn * gemms;
  count.calls = static_cast<std::size_t>(gemms);
  return count;
}

// ---- Matrix functions.

namespace {


struct Asymmetry {
  double largest = 0;  // max |a_ij - a_ji| (complex: |a_ij - conj(a_ji)|, diagonal included)
  std::size_t i = 0, j = 0;
  double scale = 0;  // max |a_ij|
};

// Row-major over i, column walk over the mirror: O(n^2) beside the O(n^3) that follows.
// Complex: the distance from a^H, whose diagonal is real, so the diagonal counts too.
template <class T>
Asymmetry measure_asymmetry(const T* a, std::size_t n) {
  Asymmetry out;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double x = std::abs(widen(a[i * n + j]));
      if (x > out.scale) out.scale = x;
      if (j < i || (is_complex_v<T> && j == i)) {
        const double d = std::abs(widen(a[i * n + j]) - conjugate(widen(a[j * n + i])));
        if (d > out.largest) {
          out.largest = d;
          out.i = i;
          out.j = j;
        }
      }
    }
  }
  return out;
}

// Max row sum of the row-major a: the 1-norm of the column-major buffer (a^T) LAPACK sees.
template <class T>
real_type_t<T> one_norm_of_transpose(const T* a, std::size_t n) {
  real_type_t<T> norm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    real_type_t<T> row = 0;
    for (std::size_t j = 0; j < n; ++j) row += std::abs(a[i * n + j]);
    norm = std::max(norm, row);
  }
  return norm;
}

[[noreturn]] void throw_singular(const char* operation, std::string_view what, std::size_t n, const std::string& why) {
  throw NumericalError("tenex: " + std::string(operation) + ": " + matrix_text(what, n) + " is singular (" + why +
                       "); " + operation + " needs an invertible matrix");
}

// The power of two 2^e at or below max |a|: a / 2^e has its largest entry in [1, 2), exactly
// (a power of two only moves exponents; a power of two on the diagonal becomes 1). LAPACK's
// LU of a matrix of subnormal entries (1e-310 I) overflows (1 / pivot) and hands NaN to gecon,
// and gecon gives a condition number of 0 to an identity scaled below 1e-300 or so; the
// scaled matrix is neither, and its inverse, scaled back, is the inverse of a where that is
// representable. 0 for a zero matrix. Complex: the parts of a count as its entries.
template <class T>
int scale_exponent(const T* a, std::size_t count) {
  if constexpr (is_complex_v<T>) {
    return scale_exponent(reinterpret_cast<const real_type_t<T>*>(a), 2 * count);
  } else {
    T largest = 0;
    for (std::size_t k = 0; k < count; ++k) largest = std::max(largest, std::abs(a[k]));
    int e = 0;
    if (largest > T(0)) std::frexp(largest, &e);  // largest = f 2^e, f in [0.5, 1)
    return largest > T(0) ? e - 1 : 0;
  }
}

template <class T>
void scale_by_power_of_two(T* a, std::size_t count, int e) {
  if (e == 0) return;
  for (std::size_t k = 0; k < count; ++k) a[k] = scale_entry(a[k], e);
}

template <class T>
[[noreturn]] void throw_overflow(const char* operation, std::string_view what, std::size_t n, const char* result_name,
                                 const std::string& detail) {
  const char* type = std::is_same_v<real_type_t<T>, float> ? "float" : "double";
  throw NumericalError("tenex: " + std::string(operation) + ": " + result_name + " of " + matrix_text(what, n) +
                       " overflows: " + detail + ", beyond the largest " + type + " " +
                       short_number(std::numeric_limits<real_type_t<T>>::max()) + "; it cannot be represented in " +
                       type + " (scale the matrix)");
}

// Scales `result` (count entries, the result for a / 2^e; row-major with `columns` columns,
// 0: positions not told) back by 2^-e into the result for a, and throws a NumericalError
// when an entry is beyond the largest T: a's inverse (or the solution) is not representable,
// though a is invertible.
template <class T>
void unscale_checked(T* result, std::size_t count, std::size_t columns, int e, const char* operation,
                     std::string_view what, std::size_t n, const char* result_name) {
  for (std::size_t k = 0; k < count; ++k) {
    const T x = scale_entry(result[k], -e);
    if (!is_finite_entry(x)) {
      const double magnitude = std::log10(largest_part(result[k])) - e * std::log10(2.0);
      std::ostringstream about;
      about << "1e+" << static_cast<long long>(std::floor(magnitude));
      const std::string entry =
          columns == 0 ? "an entry"
                       : "its entry (" + std::to_string(k / columns) + ", " + std::to_string(k % columns) + ")";
      throw_overflow<T>(operation, what, n, result_name, entry + " is about " + about.str());
    }
    result[k] = x;
  }
}

// A zero pivot (getrf's info), LU factors that overflowed (a pivot so small relative to the
// entries below it that LAPACK's 1 / pivot is infinite) or a reciprocal condition number
// below epsilon: singular to working precision.
template <class T>
void check_lu(const char* operation, std::string_view what, std::size_t n, lapack_int info, const T* lu,
              real_type_t<T> anorm) {
  if (info > 0) {
    throw_singular(operation, what, n,
                   routine_name<T>("getrf") + ": the pivot U(" + std::to_string(info) + "," + std::to_string(info) +
                       ") is exactly zero");
  }
  check_lapack_info(routine_name<T>("getrf").c_str(), info, n);
  for (std::size_t k = 0; k < n * n; ++k) {
    if (!is_finite_entry(lu[k])) {
      throw_singular(operation, what, n,
                     "to working precision: its LU factors overflow, a pivot being too small relative to the "
                     "entries below it");
    }
  }
  using R = real_type_t<T>;
  R rcond = 0;
  check_lapack_info(routine_name<T>("gecon").c_str(), gecon_cm(static_cast<lapack_int>(n), lu, anorm, &rcond), n);
  if (!(rcond >= std::numeric_limits<R>::epsilon())) {
    throw_singular(operation, what, n,
                   "to working precision: the reciprocal condition number " + short_number(rcond) +
                       " is below the machine epsilon " + short_number(std::numeric_limits<R>::epsilon()));
  }
}

}  // namespace

template <class T>
double symmetry_tolerance(std::size_t n) {
  return std::max(1024.0, 16.0 * static_cast<double>(n)) * std::numeric_limits<real_type_t<T>>::epsilon();
}

template <class T>
void require_symmetric(const T* a, std::size_t n, double relative_tolerance, const char* operation,
                       std::string_view what) {
  const Asymmetry s = measure_asymmetry(a, n);
  if (s.largest > relative_tolerance * s.scale) {
    const std::string kind = is_complex_v<T> ? "Hermitian" : "symmetric";
    throw NumericalError("tenex: " + std::string(operation) + ": " + matrix_text(what, n) + " is not " + kind +
                         ": max |a(i,j) - " + (is_complex_v<T> ? "conj(a(j,i))" : "a(j,i)") +
                         "| = " + short_number(s.largest) + " at (" + std::to_string(s.i) + ", " + std::to_string(s.j) +
                         "), " + short_number(s.scale > 0 ? s.largest / s.scale : 0.0) +
                         " relative to max |a| = " + short_number(s.scale) + ", above the tolerance " +
                         short_number(relative_tolerance) + "; " + operation + " needs a " + kind + " matrix");
  }
}

template <class T>
KernelCount inverse(const T* a, std::size_t n, T* out, std::string_view what) {
  KernelCount count;
  if (n == 0) return count;
  const lapack_int ln = to_lapack_int(n, "inverse");
  // Column-major LU of the buffer, i.e. of a^T: getri gives (a^T)^-1 column-major, which
  // is a^-1 row-major.
  if (!copy_checked(a, n * n, out)) throw_non_finite(a, n, n, false, "inverse", "the matrix");
  // inverse(a) = inverse(a / 2^e) / 2^e (scale_exponent).
  const int e = scale_exponent(out, n * n);
  scale_by_power_of_two(out, n * n, -e);
  const auto anorm = one_norm_of_transpose(out, n);
  std::vector<lapack_int> ipiv(n);
  const lapack_int info = getrf_cm(ln, out, ipiv.data());
  check_lu("inverse", what, n, info, out, anorm);
  check_lapack_info(routine_name<T>("getri").c_str(), getri_cm(ln, out, ipiv.data()), n);
  unscale_checked(out, n * n, n, e, "inverse", what, n, "the inverse");
  const double dn = static_cast<double>(n);
  count.flops = 2 * dn * dn * dn;  // getrf 2n^3/3 + getri 4n^3/3
  count.calls = 3;
  return count;
}

template <class T>
KernelCount solve(const T* a, std::size_t n, const T* b, std::size_t outer, std::size_t inner, T* x,
                  std::string_view what) {
  KernelCount count;
  const std::size_t nrhs = outer * inner;
  if (n == 0 || nrhs == 0) return count;
  const lapack_int ln = to_lapack_int(n, "solve");
  const lapack_int lrhs = to_lapack_int(nrhs, "solve");
  const auto factor = std::make_unique_for_overwrite<T[]>(n * n);
  if (!copy_checked(a, n * n, factor.get())) throw_non_finite(a, n, n, false, "solve", "the matrix a");
  // (a / 2^e) y = b, x = y / 2^e (scale_exponent).
  const int e = scale_exponent(factor.get(), n * n);
  scale_by_power_of_two(factor.get(), n * n, -e);
  const auto anorm = one_norm_of_transpose(factor.get(), n);
  // The right-hand sides as the columns of a column-major n x nrhs matrix; when the solved
  // mode is the last one (inner == 1), b already is one.
  const auto rhs = std::make_unique_for_overwrite<T[]>(n * nrhs);
  if (inner == 1) {
    if (!copy_checked(b, n * nrhs, rhs.get())) throw_non_finite(b, outer, n, false, "solve", "b");
  } else {
    for (std::size_t o = 0; o < outer; ++o) {
      for (std::size_t i = 0; i < n; ++i) {
        const T* row = b + (o * n + i) * inner;
        for (std::size_t q = 0; q < inner; ++q) rhs[(o * inner + q) * n + i] = row[q];
      }
    }
    for (std::size_t k = 0; k < n * nrhs; ++k) {
      if (!is_finite_entry(rhs[k])) throw_non_finite(b, outer * n, inner, false, "solve", "b");
    }
  }
  const double dn = static_cast<double>(n), dr = static_cast<double>(nrhs);
  const Asymmetry s = measure_asymmetry(a, n);
  bool solved = false;
  using R = real_type_t<T>;
  if (s.largest <= static_cast<double>(n) * std::numeric_limits<R>::epsilon() * s.scale) {
    // Column-major upper = row-major lower: the triangle every symmetric routine reads.
    // Complex: the buffer read column-major is a^T = conj(a) for Hermitian a; conjugated, it
    // is a itself, and potrs solves a x = b.
    if constexpr (is_complex_v<T>) {
      for (std::size_t k = 0; k < n * n; ++k) factor[k] = std::conj(factor[k]);
    }
    const lapack_int info = potrf_cm(ln, factor.get());
    count.calls += 1;
    count.flops += dn * dn * dn / 3;
    if (info == 0) {
      R rcond = 0;
      check_lapack_info(routine_name<T>("pocon").c_str(), pocon_cm(ln, factor.get(), anorm, &rcond), n);
      if (!(rcond >= std::numeric_limits<R>::epsilon())) {
        throw_singular("solve", what, n,
                       "to working precision: the reciprocal condition number " + short_number(rcond) +
                           " is below the machine epsilon " + short_number(std::numeric_limits<R>::epsilon()));
      }
      check_lapack_info(routine_name<T>("potrs").c_str(), potrs_cm(ln, lrhs, factor.get(), rhs.get()), n);
      count.calls += 2;
      count.flops += 2 * dn * dn * dr;
      solved = true;
    } else if (info < 0) {
      check_lapack_info(routine_name<T>("potrf").c_str(), info, n);
    } else {
      std::copy(a, a + n * n, factor.get());  // not positive definite: LU after all
      scale_by_power_of_two(factor.get(), n * n, -e);
    }
  }
  if (!solved) {
    // LU of the buffer (a^T); getrs with 'T' solves (a^T)^T x = a x = b.
    std::vector<lapack_int> ipiv(n);
    const lapack_int info = getrf_cm(ln, factor.get(), ipiv.data());
    check_lu("solve", what, n, info, factor.get(), anorm);
    check_lapack_info(routine_name<T>("getrs").c_str(), getrs_cm('T', ln, lrhs, factor.get(), ipiv.data(), rhs.get()),
                      n);
    count.calls += 3;
    count.flops += 2 * dn * dn * dn / 3 + 2 * dn * dn * dr;
  }
  unscale_checked(rhs.get(), n * nrhs, 0, e, "solve", what, n, "the solution x of a x = b for");
  if (inner == 1) {
    std::copy(rhs.get(), rhs.get() + n * nrhs, x);
  } else {
    for (std::size_t o = 0; o < outer; ++o) {
      for (std::size_t i = 0; i < n; ++i) {
        T* row = x + (o * n + i) * inner;
        for (std::size_t q = 0; q < inner; ++q) row[q] = rhs[(o * inner + q) * n + i];
      }
    }
  }
  return count;
}

template <class T>
KernelCount spd_power(const T* a, std::size_t n, double p, T* out, std::string_view what) {
  KernelCount count;
  if (n == 0) return count;
  const lapack_int ln = to_lapack_int(n, "pow");
  const auto vectors = std::make_unique_for_overwrite<T[]>(n * n);
  // Row-major lower triangle = column-major upper, what syevd_cm reads.
  if (!copy_lower_checked(a, n, vectors.get())) throw_non_finite(a, n, n, true, "pow", "the matrix");
  require_symmetric(a, n, symmetry_tolerance<T>(n), "pow", what);
  // Complex: the column-major buffer is a^T = conj(a), with eigenvectors conj(V); U U^H below
  // is then conj(a^p) = (a^p)^T column-major, i.e. a^p row-major.
  std::vector<real_type_t<T>> w(n);
  check_lapack_info(routine_name<T>("syevd", "heevd").c_str(), syevd_cm(ln, vectors.get(), w.data()), n);
  check_power_eigenvalues(w.data(), n, p, what);
  // a^p = sum_j w_j^p v_j v_j^T = U U^T with column j of U = w_j^(p/2) v_j (complex: U U^H).
  for (std::size_t j = 0; j < n; ++j) {
    const double wj = std::max(0.0, static_cast<double>(w[j]));
    const auto f = static_cast<real_type_t<T>>(wj == 0.0 ? 0.0 : std::pow(wj, p / 2));
    T* column = vectors.get() + j * n;
    for (std::size_t i = 0; i < n; ++i) column[i] *= f;
  }
  syrk_cm(ln, vectors.get(), out);
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = 0; i < j; ++i) out[i * n + j] = conjugate(out[j * n + i]);  // mirror: exactly symmetric
  }
  // Finite input, so an entry beyond the range is an overflow (the power -1.5 of 1e-310 I).
  for (std::size_t k = 0; k < n * n; ++k) {
    if (!is_finite_entry(out[k])) {
      throw_overflow<T>("pow", what, n, ("the power " + short_number(p)).c_str(),
                        "its entry (" + std::to_string(k / n) + ", " + std::to_string(k % n) +
                            ") is out of range (its eigenvalues run from " + short_number(static_cast<double>(w[0])) +
                            " to " + short_number(static_cast<double>(w[n - 1])) + ")");
    }
  }
  const double dn = static_cast<double>(n);
  count.flops = 10 * dn * dn * dn;
  count.calls = 2;
  return count;
}

template <class T>
void fix_vector_signs(T* columns, std::size_t rows, std::size_t k, T* paired_rows, std::size_t cols) {
  fix_column_signs(columns, rows, k, paired_rows, cols);
}
#define TENEX_INSTANTIATE_FIX_VECTOR_SIGNS(T) \
  template void fix_vector_signs<T>(T*, std::size_t, std::size_t, T*, std::size_t);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_FIX_VECTOR_SIGNS)
#undef TENEX_INSTANTIATE_FIX_VECTOR_SIGNS

#define TENEX_INSTANTIATE_LINALG(T)                                                                               \
  template KernelCount cholesky<T>(const T*, std::size_t, T*);                                                    \
  template KernelCount eigen_symmetric<T>(const T*, std::size_t, T*, T*);                                         \
  template KernelCount eigen_generalized<T>(const T*, const T*, std::size_t, T*, T*);                             \
  template KernelCount qr<T>(const T*, std::size_t, std::size_t, T*, T*);                                         \
  template KernelCount svd<T>(const T*, std::size_t, std::size_t, T*, T*, T*);                                    \
  template KernelCount matrix_power<T>(const T*, std::size_t, unsigned, T*);                                      \
  template double symmetry_tolerance<T>(std::size_t);                                                             \
  template void require_symmetric<T>(const T*, std::size_t, double, const char*, std::string_view);               \
  template KernelCount inverse<T>(const T*, std::size_t, T*, std::string_view);                                   \
  template KernelCount solve<T>(const T*, std::size_t, const T*, std::size_t, std::size_t, T*, std::string_view); \
  template KernelCount spd_power<T>(const T*, std::size_t, double, T*, std::string_view);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_LINALG)
#undef TENEX_INSTANTIATE_LINALG

}  // namespace tenex::detail::cpu
