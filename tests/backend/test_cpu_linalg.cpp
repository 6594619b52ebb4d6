// CPU dense linear algebra kernels (backend/cpu/linalg): every result is checked through
// the identities that define it (residuals, orthogonality, triangularity, ordering),
// never against stored numbers, with tolerances scaled by the type's epsilon and n.
// float and double here; the complex types in test_cpu_linalg_complex.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "support/linalg_matrices.hpp"
#include "tenex/backend/cpu/linalg.hpp"
#include "tenex/error.hpp"
#include "tenex/scalar.hpp"

namespace cpu = tenex::detail::cpu;
using linalg_matrices::adjoint, linalg_matrices::column_orthogonality_error, linalg_matrices::distance,
    linalg_matrices::from, linalg_matrices::identity, linalg_matrices::multiply, linalg_matrices::norm,
    linalg_matrices::random_matrix, linalg_matrices::to;

namespace {

#define TENEX_TEST_TUPLE_OF(T) \
  , std::tuple<T> {}
using Scalars = decltype(std::tuple_cat(std::tuple<> {} TENEX_FOR_EACH_REAL_SCALAR(TENEX_TEST_TUPLE_OF)));
#undef TENEX_TEST_TUPLE_OF

// Reference arithmetic is done in double on row-major std::vector<double> (support/linalg_matrices.hpp).
using Matrix = std::vector<double>;

template <class T>
double eps() {
  return static_cast<double>(std::numeric_limits<T>::epsilon());
}

// A backward-error budget: c * max(n, 1) * eps, with c generous enough for LAPACK's
// blocked algorithms and the double-precision reference product.
template <class T>
double tol(std::size_t n) {
  return 30.0 * static_cast<double>(std::max<std::size_t>(n, 1)) * eps<T>();
}

template <class T>
std::string letter() {
  return std::is_same_v<T, float> ? "s" : "d";
}

// Random orthogonal matrix: modified Gram-Schmidt, twice, on a random matrix.
Matrix random_orthogonal(std::size_t n, unsigned seed) {
  Matrix q = random_matrix(n, n, seed);
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t p = 0; p < j; ++p) {
        double d = 0;
        for (std::size_t i = 0; i < n; ++i) d += q[i * n + p] * q[i * n + j];
        for (std::size_t i = 0; i < n; ++i) q[i * n + j] -= d * q[i * n + p];
      }
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) s += q[i * n + j] * q[i * n + j];
      for (std::size_t i = 0; i < n; ++i) q[i * n + j] /= std::sqrt(s);
    }
  }
  return q;
}

Matrix random_symmetric(std::size_t n, unsigned seed) {
  const Matrix a = random_matrix(n, n, seed);
  Matrix s(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) s[i * n + j] = 0.5 * (a[i * n + j] + a[j * n + i]);
  return s;
}

// M M^T / n + shift I: symmetric positive definite, eigenvalues in [shift, shift + ~4].
Matrix random_spd(std::size_t n, unsigned seed, double shift = 1.0) {
  const Matrix m = random_matrix(n, n, seed);
  Matrix s = multiply(m, adjoint(m, n, n), n, n, n);
  for (double& x : s) x /= static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) s[i * n + i] += shift;
  return s;
}

Matrix hilbert(std::size_t m, std::size_t n) {
  Matrix h(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) h[i * n + j] = 1.0 / static_cast<double>(i + j + 1);
  return h;
}

// Q diag(values) Q^T.
Matrix with_spectrum(const std::vector<double>& values, unsigned seed) {
  const std::size_t n = values.size();
  const Matrix q = random_orthogonal(n, seed);
  Matrix qd = q;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) qd[i * n + j] *= values[j];
  return multiply(qd, adjoint(q, n, n), n, n, n);
}

// The sign convention of linalg.hpp: the entry of largest magnitude (first on ties) of
// each column is positive.
bool columns_have_positive_peak(const Matrix& x, std::size_t rows, std::size_t cols) {
  for (std::size_t j = 0; j < cols; ++j) {
    double largest = 0, value = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      if (std::abs(x[i * cols + j]) > largest) {
        largest = std::abs(x[i * cols + j]);
        value = x[i * cols + j];
      }
    }
    if (value < 0) return false;
  }
  return true;
}

// ---- one checker per decomposition: runs it on `a` (given in double, rounded to T)
// and checks every defining identity.

template <class T>
void check_cholesky(const Matrix& a_exact, std::size_t n) {
  const std::vector<T> a = to<T>(a_exact);
  const std::vector<T> a_before = a;
  std::vector<T> l(n * n, T(7));  // garbage, to see that the upper triangle is written
  const cpu::KernelCount count = cpu::cholesky(a.data(), n, l.data());
  CHECK(a == a_before);
  const Matrix lx = from(l), ax = from(a);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(lx[i * n + i] > 0);
    for (std::size_t j = i + 1; j < n; ++j) CHECK(lx[i * n + j] == 0);
  }
  const double residual = distance(multiply(lx, adjoint(lx, n, n), n, n, n), ax);
  CHECK(residual <= tol<T>(n) * norm(ax));
  CHECK(count.calls == (n == 0 ? 0u : 1u));
  CHECK(count.flops == doctest::Approx(std::pow(static_cast<double>(n), 3) / 3));
}

template <class T>
void check_eigen(const Matrix& a_exact, std::size_t n) {
  const std::vector<T> a = to<T>(a_exact);
  const std::vector<T> a_before = a;
  std::vector<T> v(n * n), w(n);
  const cpu::KernelCount count = cpu::eigen_symmetric(a.data(), n, v.data(), w.data());
  CHECK(a == a_before);
  const Matrix vx = from(v), ax = from(a);
  Matrix v_lambda = vx;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) v_lambda[i * n + j] *= static_cast<double>(w[j]);
  CHECK(distance(multiply(ax, vx, n, n, n), v_lambda) <= tol<T>(n) * norm(ax));
  CHECK(column_orthogonality_error(vx, n, n) <= tol<T>(n));
  CHECK(std::is_sorted(w.begin(), w.end()));
  CHECK(columns_have_positive_peak(vx, n, n));
  CHECK(count.calls == (n == 0 ? 0u : 1u));
  CHECK(count.flops == doctest::Approx(9 * std::pow(static_cast<double>(n), 3)));
}

// Returns the eigenvalues for further checks by the caller.
template <class T>
std::vector<T> check_generalized(const Matrix& a_exact, const Matrix& b_exact, std::size_t n) {
  const std::vector<T> a = to<T>(a_exact), b = to<T>(b_exact);
  const std::vector<T> a_before = a, b_before = b;
  std::vector<T> v(n * n), w(n);
  const cpu::KernelCount count = cpu::eigen_generalized(a.data(), b.data(), n, v.data(), w.data());
  CHECK(a == a_before);
  CHECK(b == b_before);
  const Matrix vx = from(v), ax = from(a), bx = from(b);
  Matrix bv_lambda = multiply(bx, vx, n, n, n);
  double largest = 0;
  for (std::size_t j = 0; j < n; ++j) largest = std::max(largest, std::abs(static_cast<double>(w[j])));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) bv_lambda[i * n + j] *= static_cast<double>(w[j]);
  // b is well conditioned in these tests (eigenvalues within [1, 5]), so the budget only
  // grows by a small constant over the standard problem.
  const double scale = (norm(ax) + norm(bx) * largest) * norm(vx);
  CHECK(distance(multiply(ax, vx, n, n, n), bv_lambda) <= 10 * tol<T>(n) * scale);
  const Matrix vtbv = multiply(adjoint(vx, n, n), multiply(bx, vx, n, n, n), n, n, n);
  CHECK(distance(vtbv, identity(n)) <= 10 * tol<T>(n));
  CHECK(std::is_sorted(w.begin(), w.end()));
  CHECK(columns_have_positive_peak(vx, n, n));
  CHECK(count.calls == (n == 0 ? 0u : 1u));
  return w;
}

template <class T>
void check_qr(const Matrix& a_exact, std::size_t m, std::size_t n) {
  const std::size_t k = std::min(m, n);
  const std::vector<T> a = to<T>(a_exact);
  const std::vector<T> a_before = a;
  std::vector<T> q(m * k, T(7)), r(k * n, T(7));
  const cpu::KernelCount count = cpu::qr(a.data(), m, n, q.data(), r.data());
  CHECK(a == a_before);
  const Matrix qx = from(q), rx = from(r), ax = from(a);
  for (std::size_t i = 0; i < k; ++i) {
    CHECK(rx[i * n + i] >= 0);
    for (std::size_t j = 0; j < i; ++j) CHECK(rx[i * n + j] == 0);
  }
  CHECK(distance(multiply(qx, rx, m, k, n), ax) <= tol<T>(std::max(m, n)) * norm(ax));
  CHECK(column_orthogonality_error(qx, m, k) <= tol<T>(std::max(m, n)));
  CHECK(count.calls == (k == 0 ? 0u : 2u));
}

template <class T>
std::vector<T> check_svd(const Matrix& a_exact, std::size_t m, std::size_t n) {
  const std::size_t k = std::min(m, n);
  const std::vector<T> a = to<T>(a_exact);
  const std::vector<T> a_before = a;
  std::vector<T> u(m * k, T(7)), s(k, T(7)), vt(k * n, T(7));
  const cpu::KernelCount count = cpu::svd(a.data(), m, n, u.data(), s.data(), vt.data());
  CHECK(a == a_before);
  const Matrix ux = from(u), vtx = from(vt), ax = from(a);
  Matrix us = ux;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < k; ++j) us[i * k + j] *= static_cast<double>(s[j]);
  const std::size_t big = std::max(m, n);
  CHECK(distance(multiply(us, vtx, m, k, n), ax) <= tol<T>(big) * norm(ax));
  CHECK(column_orthogonality_error(ux, m, k) <= tol<T>(big));
  CHECK(column_orthogonality_error(adjoint(vtx, k, n), n, k) <= tol<T>(big));
  CHECK(std::is_sorted(s.rbegin(), s.rend()));
  CHECK(std::all_of(s.begin(), s.end(), [](T x) { return x >= T(0); }));
  CHECK(columns_have_positive_peak(ux, m, k));
  CHECK(count.calls == (k == 0 ? 0u : 1u));
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------- cholesky

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: cholesky satisfies L L^T = A with L lower", T, cpu_linalg_cholesky_identities) {
  SUBCASE("n = 0") { check_cholesky<T>({}, 0); }
  SUBCASE("n = 1") { check_cholesky<T>({4.0}, 1); }
  SUBCASE("random SPD") { check_cholesky<T>(random_spd(40, 1), 40); }
  SUBCASE("ill-conditioned (Hilbert)") {
    // Hilbert of order 5 has condition ~5e5 (fine in float), order 10 ~2e13 (fine in double).
    const std::size_t n = std::is_same_v<T, float> ? 5 : 10;
    check_cholesky<T>(hilbert(n, n), n);
  }
  SUBCASE("repeated eigenvalues") { check_cholesky<T>(with_spectrum({1, 1, 2, 2, 3}, 2), 5); }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_cholesky_identities, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: cholesky reads only the lower triangle", T, cpu_linalg_cholesky_lower) {
  const std::size_t n = 6;
  Matrix a = random_spd(n, 3);
  std::vector<T> with_nan_upper = to<T>(a);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) with_nan_upper[i * n + j] = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> l1(n * n), l2(n * n);
  const std::vector<T> clean = to<T>(a);
  cpu::cholesky(clean.data(), n, l1.data());
  CHECK_NOTHROW(cpu::cholesky(with_nan_upper.data(), n, l2.data()));
  CHECK(l1 == l2);
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_cholesky_lower, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: cholesky of a matrix that is not SPD throws", T, cpu_linalg_cholesky_errors) {
  // Leading minors 1, 2, -2: the third fails.
  const std::vector<T> a = {1, 0, 0, 0, 0, 2, 0, 0, 0, 0, -1, 0, 0, 0, 0, 4};
  std::vector<T> l(16);
  const std::string routine = letter<T>() + "potrf";
  CHECK_THROWS_AS(cpu::cholesky(a.data(), 4, l.data()), tenex::NumericalError);
  CHECK_THROWS_WITH_AS(cpu::cholesky(a.data(), 4, l.data()), doctest::Contains(routine.c_str()), tenex::NumericalError);
  CHECK_THROWS_WITH_AS(cpu::cholesky(a.data(), 4, l.data()), doctest::Contains("info = 3"), tenex::NumericalError);
  CHECK_THROWS_WITH_AS(cpu::cholesky(a.data(), 4, l.data()),
                       doctest::Contains("leading minor of order 3 is not positive definite"), tenex::NumericalError);

  const std::vector<T> negative = {-2};
  CHECK_THROWS_WITH_AS(cpu::cholesky(negative.data(), 1, l.data()), doctest::Contains("info = 1"),
                       tenex::NumericalError);

  std::vector<T> with_nan = to<T>(random_spd(3, 4));
  with_nan[2 * 3 + 1] = std::numeric_limits<T>::quiet_NaN();
  CHECK_THROWS_WITH_AS(cpu::cholesky(with_nan.data(), 3, l.data()),
                       doctest::Contains("non-finite entry (nan) at (2, 1)"), tenex::NumericalError);
  std::vector<T> with_inf = to<T>(random_spd(3, 4));
  with_inf[0] = std::numeric_limits<T>::infinity();
  CHECK_THROWS_WITH_AS(cpu::cholesky(with_inf.data(), 3, l.data()), doctest::Contains("(inf) at (0, 0)"),
                       tenex::NumericalError);
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_cholesky_errors, Scalars);

// ------------------------------------------------------------------------------- eigen

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: symmetric eigen satisfies A V = V diag(w)", T, cpu_linalg_eigen_identities) {
  SUBCASE("n = 0") { check_eigen<T>({}, 0); }
  SUBCASE("n = 1") { check_eigen<T>({-3.0}, 1); }
  SUBCASE("random symmetric") { check_eigen<T>(random_symmetric(40, 5), 40); }
  SUBCASE("ill-conditioned (Hilbert)") { check_eigen<T>(hilbert(12, 12), 12); }
  SUBCASE("repeated eigenvalues") {
    const std::size_t n = 5;
    const std::vector<T> a = to<T>(with_spectrum({1, 1, 2, 2, 3}, 6));
    check_eigen<T>(from(a), n);
    std::vector<T> v(n * n), w(n);
    cpu::eigen_symmetric(a.data(), n, v.data(), w.data());
    const std::vector<double> expected = {1, 1, 2, 2, 3};
    for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(w[i] - expected[i]) <= tol<T>(n) * 3);
  }
  SUBCASE("diagonal: the sign convention gives unit vectors") {
    const std::vector<T> a = {3, 0, 0, 0, 1, 0, 0, 0, 2};
    std::vector<T> v(9), w(3);
    cpu::eigen_symmetric(a.data(), 3, v.data(), w.data());
    CHECK(w == std::vector<T>{1, 2, 3});
    CHECK(v == std::vector<T>{0, 0, 1, 1, 0, 0, 0, 1, 0});
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_eigen_identities, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: symmetric eigen rejects non-finite input", T, cpu_linalg_eigen_errors) {
  std::vector<T> a = to<T>(random_symmetric(4, 7));
  a[3 * 4 + 0] = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> v(16), w(4);
  CHECK_THROWS_WITH_AS(cpu::eigen_symmetric(a.data(), 4, v.data(), w.data()), doctest::Contains("eigen_solve"),
                       tenex::NumericalError);
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_eigen_errors, Scalars);

// ------------------------------------------------------------------------- generalized

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: generalized eigen satisfies A V = B V diag(w), V^T B V = I", T,
                          cpu_linalg_generalized_identities) {
  SUBCASE("n = 0") { check_generalized<T>({}, {}, 0); }
  SUBCASE("n = 1") {
    const std::vector<T> w = check_generalized<T>({6.0}, {2.0}, 1);
    CHECK(w[0] == doctest::Approx(3.0));
  }
  SUBCASE("random") { check_generalized<T>(random_symmetric(30, 8), random_spd(30, 9), 30); }
  SUBCASE("repeated eigenvalues: A = 2 B") {
    const std::size_t n = 6;
    Matrix b = random_spd(n, 10);
    Matrix a = b;
    for (double& x : a) x *= 2;
    const std::vector<T> w = check_generalized<T>(a, b, n);
    for (T x : w) CHECK(std::abs(x - T(2)) <= 10 * tol<T>(n));
  }
  SUBCASE("repeated eigenvalues of A, B = I") {
    check_generalized<T>(with_spectrum({1, 1, 2, 2, 3}, 11), identity(5), 5);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_generalized_identities, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: generalized eigen with indefinite b throws", T, cpu_linalg_generalized_errors) {
  const std::size_t n = 3;
  const std::vector<T> a = to<T>(random_symmetric(n, 12));
  const std::vector<T> b = {1, 0, 0, 0, -1, 0, 0, 0, 2};  // leading minor of order 2 is negative
  std::vector<T> v(n * n), w(n);
  const std::string routine = letter<T>() + "sygvd";
  CHECK_THROWS_WITH_AS(cpu::eigen_generalized(a.data(), b.data(), n, v.data(), w.data()),
                       doctest::Contains(routine.c_str()), tenex::NumericalError);
  CHECK_THROWS_WITH_AS(cpu::eigen_generalized(a.data(), b.data(), n, v.data(), w.data()), doctest::Contains("info = 5"),
                       tenex::NumericalError);
  CHECK_THROWS_WITH_AS(cpu::eigen_generalized(a.data(), b.data(), n, v.data(), w.data()),
                       doctest::Contains("leading minor of order 2 of b is not positive definite"),
                       tenex::NumericalError);
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_generalized_errors, Scalars);

// ---------------------------------------------------------------------------------- qr

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: qr satisfies Q R = A, Q^T Q = I, R upper", T, cpu_linalg_qr_identities) {
  SUBCASE("0 x 0") { check_qr<T>({}, 0, 0); }
  SUBCASE("3 x 0") { check_qr<T>({}, 3, 0); }
  SUBCASE("0 x 3") { check_qr<T>({}, 0, 3); }
  SUBCASE("1 x 1") { check_qr<T>({-2.0}, 1, 1); }
  SUBCASE("1 x 4") { check_qr<T>(random_matrix(1, 4, 13), 1, 4); }
  SUBCASE("4 x 1") { check_qr<T>(random_matrix(4, 1, 14), 4, 1); }
  SUBCASE("square") { check_qr<T>(random_matrix(40, 40, 15), 40, 40); }
  SUBCASE("tall") { check_qr<T>(random_matrix(60, 25, 16), 60, 25); }
  SUBCASE("wide") { check_qr<T>(random_matrix(25, 60, 17), 25, 60); }
  SUBCASE("ill-conditioned (Hilbert)") { check_qr<T>(hilbert(14, 14), 14, 14); }
  SUBCASE("rank deficient (repeated column)") {
    Matrix a = random_matrix(8, 5, 18);
    for (std::size_t i = 0; i < 8; ++i) a[i * 5 + 3] = a[i * 5 + 1];
    check_qr<T>(a, 8, 5);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_qr_identities, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: qr counts geqrf + orgqr flops", T, cpu_linalg_qr_count) {
  const std::size_t m = 30, n = 20;
  const std::vector<T> a = to<T>(random_matrix(m, n, 19));
  std::vector<T> q(m * n), r(n * n);
  const cpu::KernelCount count = cpu::qr(a.data(), m, n, q.data(), r.data());
  const double dm = m, dn = n;
  CHECK(count.flops ==
        doctest::Approx(2 * dm * dn * dn - 2 * dn * dn * dn / 3 + 2 * dm * dn * dn - 2 * dn * dn * dn / 3));
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_qr_count, Scalars);

// --------------------------------------------------------------------------------- svd

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: svd satisfies U S Vt = A with orthonormal U, Vt", T, cpu_linalg_svd_identities) {
  SUBCASE("0 x 0") { check_svd<T>({}, 0, 0); }
  SUBCASE("3 x 0") { check_svd<T>({}, 3, 0); }
  SUBCASE("0 x 3") { check_svd<T>({}, 0, 3); }
  SUBCASE("1 x 1") {
    const std::vector<T> s = check_svd<T>({-2.0}, 1, 1);
    CHECK(s[0] == T(2));
  }
  SUBCASE("1 x 4") { check_svd<T>(random_matrix(1, 4, 20), 1, 4); }
  SUBCASE("4 x 1") { check_svd<T>(random_matrix(4, 1, 21), 4, 1); }
  SUBCASE("square") { check_svd<T>(random_matrix(40, 40, 22), 40, 40); }
  SUBCASE("tall") { check_svd<T>(random_matrix(60, 25, 23), 60, 25); }
  SUBCASE("wide") { check_svd<T>(random_matrix(25, 60, 24), 25, 60); }
  SUBCASE("ill-conditioned (Hilbert)") { check_svd<T>(hilbert(14, 10), 14, 10); }
  SUBCASE("repeated singular values (orthogonal matrix)") {
    const std::vector<T> s = check_svd<T>(random_orthogonal(12, 25), 12, 12);
    for (T x : s) CHECK(std::abs(x - T(1)) <= tol<T>(12));
  }
  SUBCASE("rank one") {
    const Matrix x = random_matrix(9, 1, 26), y = random_matrix(1, 7, 27);
    const std::vector<T> s = check_svd<T>(multiply(x, y, 9, 1, 7), 9, 7);
    CHECK(s[0] == doctest::Approx(norm(x) * norm(y)).epsilon(tol<T>(9)));
    for (std::size_t i = 1; i < s.size(); ++i) CHECK(s[i] <= tol<T>(9) * s[0]);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_svd_identities, Scalars);

// ------------------------------------------------------------------------------- power

TEST_CASE_TEMPLATE_DEFINE("cpu linalg: matrix power equals repeated products", T, cpu_linalg_power_identities) {
  const std::size_t n = 7;
  // Entries in [-1, 1) / n keep every power's norm at most 1, so an absolute budget fits.
  Matrix a_exact = random_matrix(n, n, 28);
  for (double& x : a_exact) x /= static_cast<double>(n);
  const std::vector<T> a = to<T>(a_exact);
  const Matrix ax = from(a);
  Matrix expected = identity(n);
  for (unsigned p = 0; p <= 13; ++p) {
    CAPTURE(p);
    std::vector<T> out(n * n, T(7));
    const cpu::KernelCount count = cpu::matrix_power(a.data(), n, p, out.data());
    if (p == 0) CHECK(out == to<T>(identity(n)));
    if (p == 1) CHECK(out == a);
    CHECK(distance(from(out), expected) <= tol<T>(n) * (p + 1));
    // Left-to-right binary powering: a squaring per bit after the leading one, and a
    // product by a per further set bit.
    std::size_t gemms = 0;
    if (p > 1) {
      unsigned bits = 0, ones = 0;
      for (unsigned x = p; x != 0; x >>= 1) {
        ++bits;
        ones += x & 1u;
      }
      gemms = (bits - 1) + (ones - 1);
    }
    CHECK(count.calls == gemms);
    CHECK(count.flops == doctest::Approx(2.0 * n * n * n * static_cast<double>(gemms)));
    expected = multiply(expected, ax, n, n, n);
  }
  SUBCASE("n = 0") { CHECK(cpu::matrix_power<T>(nullptr, 0, 5, nullptr).calls == 0); }
  SUBCASE("n = 1") {
    const std::vector<T> two = {2};
    std::vector<T> out(1);
    cpu::matrix_power(two.data(), 1, 10, out.data());
    CHECK(out[0] == T(1024));
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_power_identities, Scalars);

// ----------------------------------------------------------------------- status check

TEST_CASE("cpu linalg: check_lapack_info sorts statuses into exception types") {
  CHECK_NOTHROW(cpu::check_lapack_info("dpotrf", 0, 4));
  CHECK_THROWS_WITH_AS(cpu::check_lapack_info("dpotrf", -4, 4), doctest::Contains("argument 4 had an illegal value"),
                       tenex::InternalError);
  CHECK_THROWS_AS(cpu::check_lapack_info("dgesdd", -1010, 4), tenex::BackendError);
  CHECK_THROWS_WITH_AS(cpu::check_lapack_info("ssyevd", 7, 5),
                       doctest::Contains("ssyevd failed (info = 7): the eigensolver did not converge"),
                       tenex::NumericalError);
  CHECK_THROWS_WITH_AS(cpu::check_lapack_info("dsygvd", 3, 5), doctest::Contains("eigensolver did not converge"),
                       tenex::NumericalError);
  CHECK_THROWS_WITH_AS(cpu::check_lapack_info("dsygvd", 7, 5), doctest::Contains("order 2 of b"),
                       tenex::NumericalError);
  CHECK_THROWS_WITH_AS(cpu::check_lapack_info("sgesvd", 2, 5), doctest::Contains("2 superdiagonals"),
                       tenex::NumericalError);
}
