// CPU dense linear algebra kernels (backend/cpu/linalg) on complex matrices: every result is
// checked through the identities that define it (L L^H = A, A V = V diag(w) with V^H V = I,
// Q R = A, U diag(s) Vt = A, ...), with the reference arithmetic in std::complex<double> and
// tolerances scaled by the real type's epsilon and n; eigenvalues and singular values must be
// real (imaginary part exactly 0).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
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
    linalg_matrices::from, linalg_matrices::multiply, linalg_matrices::norm, linalg_matrices::to;

namespace {

#define TENEX_TEST_TUPLE_OF(T) \
  , std::tuple<T> {}
using ComplexScalars = decltype(std::tuple_cat(std::tuple<> {} TENEX_FOR_EACH_COMPLEX_SCALAR(TENEX_TEST_TUPLE_OF)));
#undef TENEX_TEST_TUPLE_OF

using Complex = std::complex<double>;
using Matrix = std::vector<Complex>;  // row-major

template <class T>
using Real = tenex::real_type_t<T>;

template <class T>
double eps() {
  return static_cast<double>(std::numeric_limits<Real<T>>::epsilon());
}

// A backward-error budget: c * max(n, 1) * eps, as for the real kernels.
template <class T>
double tol(std::size_t n) {
  return 30.0 * static_cast<double>(std::max<std::size_t>(n, 1)) * eps<T>();
}

template <class T>
std::string letter() {
  return std::is_same_v<T, std::complex<float>> ? "c" : "z";
}

// Column j scaled by d[j].
template <class V>
Matrix scale_columns(Matrix x, std::size_t rows, std::size_t cols, const std::vector<V>& d) {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) x[i * cols + j] *= Complex(d[j]);
  return x;
}

// (M + M^H) / 2: Hermitian, with an exactly real diagonal.
Matrix random_hermitian(std::size_t n, unsigned seed) {
  const Matrix m = linalg_matrices::random_matrix<Complex>(n, n, seed);
  Matrix h(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) h[i * n + j] = 0.5 * (m[i * n + j] + std::conj(m[j * n + i]));
  for (std::size_t i = 0; i < n; ++i) h[i * n + i] = h[i * n + i].real();
  return h;
}

// M M^H / n + shift I, made exactly Hermitian: eigenvalues in [shift, shift + ~8].
Matrix random_hpd(std::size_t n, unsigned seed, double shift = 1.0) {
  const Matrix m = linalg_matrices::random_matrix<Complex>(n, n, seed);
  Matrix s = multiply(m, adjoint(m, n, n), n, n, n);
  for (Complex& x : s) x /= static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) s[i * n + i] = s[i * n + i].real() + shift;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < i; ++j) s[j * n + i] = std::conj(s[i * n + j]);
  return s;
}

// Values that must be real: imaginary parts exactly zero.
template <class T>
bool all_real(const std::vector<T>& values) {
  return std::all_of(values.begin(), values.end(), [](const T& x) { return x.imag() == 0; });
}

template <class T>
std::vector<double> real_parts(const std::vector<T>& values) {
  std::vector<double> out;
  for (const T& x : values) out.push_back(x.real());
  return out;
}

// The phase convention of linalg.hpp: the entry of largest magnitude (first on ties) of each
// column is real and positive.
template <class T>
bool columns_have_real_positive_peak(const std::vector<T>& x, std::size_t rows, std::size_t cols) {
  for (std::size_t j = 0; j < cols; ++j) {
    Real<T> largest = 0;
    T value = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      if (std::abs(x[i * cols + j]) > largest) {
        largest = std::abs(x[i * cols + j]);
        value = x[i * cols + j];
      }
    }
    if (value.imag() != 0 || !(value.real() > 0)) return false;
  }
  return true;
}

// ---- one checker per decomposition: runs it on `a` (given in complex<double>, rounded to
// T) and checks every defining identity.

template <class T>
void check_cholesky(const Matrix& a_exact, std::size_t n) {
  const std::vector<T> a = to<T>(a_exact);
  const std::vector<T> a_before = a;
  std::vector<T> l(n * n, T(7, 7));  // garbage, to see that the upper triangle is written
  const cpu::KernelCount count = cpu::cholesky(a.data(), n, l.data());
  CHECK(a == a_before);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(l[i * n + i].imag() == 0);
    CHECK(l[i * n + i].real() > 0);
    for (std::size_t j = i + 1; j < n; ++j) CHECK(l[i * n + j] == T(0));
  }
  const Matrix lx = from(l), ax = from(a);
  CHECK(distance(multiply(lx, adjoint(lx, n, n), n, n, n), ax) <= tol<T>(n) * norm(ax));
  CHECK(count.calls == (n == 0 ? 0u : 1u));
}

template <class T>
std::vector<T> check_eigen(const Matrix& a_exact, std::size_t n) {
  const std::vector<T> a = to<T>(a_exact);
  const std::vector<T> a_before = a;
  std::vector<T> v(n * n), w(n, T(7, 7));
  const cpu::KernelCount count = cpu::eigen_symmetric(a.data(), n, v.data(), w.data());
  CHECK(a == a_before);
  CHECK(all_real(w));
  const std::vector<double> wr = real_parts(w);
  CHECK(std::is_sorted(wr.begin(), wr.end()));
  const Matrix vx = from(v), ax = from(a);
  CHECK(distance(multiply(ax, vx, n, n, n), scale_columns(vx, n, n, wr)) <= tol<T>(n) * norm(ax));
  CHECK(column_orthogonality_error(vx, n, n) <= tol<T>(n));
  CHECK(columns_have_real_positive_peak(v, n, n));
  CHECK(count.calls == (n == 0 ? 0u : 1u));
  return w;
}

template <class T>
std::vector<T> check_generalized(const Matrix& a_exact, const Matrix& b_exact, std::size_t n) {
  const std::vector<T> a = to<T>(a_exact), b = to<T>(b_exact);
  const std::vector<T> a_before = a, b_before = b;
  std::vector<T> v(n * n), w(n, T(7, 7));
  const cpu::KernelCount count = cpu::eigen_generalized(a.data(), b.data(), n, v.data(), w.data());
  CHECK(a == a_before);
  CHECK(b == b_before);
  CHECK(all_real(w));
  const std::vector<double> wr = real_parts(w);
  CHECK(std::is_sorted(wr.begin(), wr.end()));
  const Matrix vx = from(v), ax = from(a), bx = from(b);
  double largest = 0;
  for (double x : wr) largest = std::max(largest, std::abs(x));
  const double scale = (norm(ax) + norm(bx) * largest) * norm(vx);
  const Matrix bv = multiply(bx, vx, n, n, n);
  CHECK(distance(multiply(ax, vx, n, n, n), scale_columns(bv, n, n, wr)) <= 10 * tol<T>(n) * scale);
  CHECK(distance(multiply(adjoint(vx, n, n), bv, n, n, n), linalg_matrices::identity<Complex>(n)) <= 10 * tol<T>(n));
  CHECK(columns_have_real_positive_peak(v, n, n));
  CHECK(count.calls == (n == 0 ? 0u : 1u));
  return w;
}

template <class T>
void check_qr(const Matrix& a_exact, std::size_t m, std::size_t n) {
  const std::size_t k = std::min(m, n);
  const std::vector<T> a = to<T>(a_exact);
  const std::vector<T> a_before = a;
  std::vector<T> q(m * k, T(7, 7)), r(k * n, T(7, 7));
  const cpu::KernelCount count = cpu::qr(a.data(), m, n, q.data(), r.data());
  CHECK(a == a_before);
  for (std::size_t i = 0; i < k; ++i) {
    CHECK(r[i * n + i].imag() == 0);
    CHECK(r[i * n + i].real() >= 0);
    for (std::size_t j = 0; j < i; ++j) CHECK(r[i * n + j] == T(0));
  }
  const Matrix qx = from(q), rx = from(r), ax = from(a);
  CHECK(distance(multiply(qx, rx, m, k, n), ax) <= tol<T>(std::max(m, n)) * norm(ax));
  CHECK(column_orthogonality_error(qx, m, k) <= tol<T>(std::max(m, n)));
  CHECK(count.calls == (k == 0 ? 0u : 2u));
}

template <class T>
std::vector<T> check_svd(const Matrix& a_exact, std::size_t m, std::size_t n) {
  const std::size_t k = std::min(m, n);
  const std::vector<T> a = to<T>(a_exact);
  const std::vector<T> a_before = a;
  std::vector<T> u(m * k, T(7, 7)), s(k, T(7, 7)), vt(k * n, T(7, 7));
  const cpu::KernelCount count = cpu::svd(a.data(), m, n, u.data(), s.data(), vt.data());
  CHECK(a == a_before);
  CHECK(all_real(s));
  const std::vector<double> sr = real_parts(s);
  CHECK(std::is_sorted(sr.rbegin(), sr.rend()));
  CHECK(std::all_of(sr.begin(), sr.end(), [](double x) { return x >= 0; }));
  const Matrix ux = from(u), vtx = from(vt), ax = from(a);
  const std::size_t big = std::max(m, n);
  CHECK(distance(multiply(scale_columns(ux, m, k, sr), vtx, m, k, n), ax) <= tol<T>(big) * norm(ax));
  CHECK(column_orthogonality_error(ux, m, k) <= tol<T>(big));
  CHECK(column_orthogonality_error(adjoint(vtx, k, n), n, k) <= tol<T>(big));
  CHECK(columns_have_real_positive_peak(u, m, k));
  CHECK(count.calls == (k == 0 ? 0u : 1u));
  return s;
}

template <class T>
std::vector<T> with_nan(std::vector<T> a, std::size_t at) {
  a[at] = T(1, std::numeric_limits<Real<T>>::quiet_NaN());
  return a;
}

}  // namespace

// ---------------------------------------------------------------------------- cholesky

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: cholesky satisfies L L^H = A", T, cpu_linalg_complex_cholesky) {
  SUBCASE("n = 0") { check_cholesky<T>({}, 0); }
  SUBCASE("n = 1") { check_cholesky<T>({4.0}, 1); }
  SUBCASE("random HPD") { check_cholesky<T>(random_hpd(30, 1), 30); }
  SUBCASE("reads only the lower triangle") {
    const std::size_t n = 6;
    const std::vector<T> clean = to<T>(random_hpd(n, 2));
    std::vector<T> nan_upper = clean;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) nan_upper[i * n + j] = T(std::numeric_limits<Real<T>>::quiet_NaN());
    std::vector<T> l1(n * n), l2(n * n);
    cpu::cholesky(clean.data(), n, l1.data());
    CHECK_NOTHROW(cpu::cholesky(nan_upper.data(), n, l2.data()));
    CHECK(l1 == l2);
  }
  SUBCASE("not positive definite") {
    const std::vector<T> a = {1, 0, 0, 0, T(0, 1), 2, 0, 0, 0, 0, -1, 0, 0, 0, 0, 4};
    std::vector<T> l(16);
    const std::string routine = letter<T>() + "potrf failed (info = 3)";
    CHECK_THROWS_WITH_AS(cpu::cholesky(a.data(), 4, l.data()), doctest::Contains(routine.c_str()),
                         tenex::NumericalError);
    CHECK_THROWS_WITH_AS(cpu::cholesky(a.data(), 4, l.data()), doctest::Contains("not Hermitian positive definite"),
                         tenex::NumericalError);
  }
  SUBCASE("a diagonal that is not real") {
    std::vector<T> a = to<T>(random_hpd(4, 3));
    a[2 * 4 + 2] += T(0, 0.5);
    std::vector<T> l(16);
    CHECK_THROWS_WITH_AS(cpu::cholesky(a.data(), 4, l.data()),
                         doctest::Contains("is not Hermitian: its diagonal entry (2, 2) has the imaginary part 0.5"),
                         tenex::NumericalError);
  }
  SUBCASE("non-finite input") {
    const std::vector<T> a = with_nan(to<T>(random_hpd(3, 4)), 2 * 3 + 1);
    std::vector<T> l(9);
    CHECK_THROWS_WITH_AS(cpu::cholesky(a.data(), 3, l.data()), doctest::Contains("non-finite entry (nan) at (2, 1)"),
                         tenex::NumericalError);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_cholesky, ComplexScalars);

// ------------------------------------------------------------------------------- eigen

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: Hermitian eigen satisfies A V = V diag(w), V^H V = I", T,
                          cpu_linalg_complex_eigen) {
  SUBCASE("n = 0") { check_eigen<T>({}, 0); }
  SUBCASE("n = 1") { check_eigen<T>({-3.0}, 1); }
  SUBCASE("random Hermitian") { check_eigen<T>(random_hermitian(30, 5), 30); }
  SUBCASE("2 x 2 with known spectrum") {
    // [[2, i], [-i, 2]]: eigenvalues 1 and 3.
    const std::vector<T> w = check_eigen<T>({2.0, Complex(0, 1), Complex(0, -1), 2.0}, 2);
    CHECK(std::abs(w[0].real() - 1) <= tol<T>(2));
    CHECK(std::abs(w[1].real() - 3) <= tol<T>(2));
  }
  SUBCASE("diagonal: the phase convention gives unit vectors") {
    const std::vector<T> a = {3, 0, 0, 0, 1, 0, 0, 0, 2};
    std::vector<T> v(9), w(3);
    cpu::eigen_symmetric(a.data(), 3, v.data(), w.data());
    CHECK(w == std::vector<T>{1, 2, 3});
    CHECK(v == std::vector<T>{0, 0, 1, 1, 0, 0, 0, 1, 0});
  }
  SUBCASE("a real symmetric matrix has the eigenvalues of the real kernel") {
    const std::size_t n = 12;
    Matrix a = random_hermitian(n, 6);
    for (Complex& x : a) x = x.real();
    const std::vector<T> w = check_eigen<T>(a, n);
    std::vector<Real<T>> ar(n * n), vr(n * n), wr(n);
    for (std::size_t i = 0; i < n * n; ++i) ar[i] = static_cast<Real<T>>(a[i].real());
    cpu::eigen_symmetric(ar.data(), n, vr.data(), wr.data());
    for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(w[i].real() - wr[i]) <= tol<T>(n) * 4);
  }
  SUBCASE("not Hermitian") {
    std::vector<T> a = to<T>(random_hermitian(4, 7));
    a[0 * 4 + 3] = std::conj(a[3 * 4 + 0]) + T(0, 0.25);
    std::vector<T> v(16), w(4);
    CHECK_THROWS_WITH_AS(cpu::eigen_symmetric(a.data(), 4, v.data(), w.data()),
                         doctest::Contains("eigen_solve: the 4 x 4 matrix is not Hermitian: max |a(i,j) - "
                                           "conj(a(j,i))| = 0.25 at (3, 0)"),
                         tenex::NumericalError);
    std::vector<T> imaginary_diagonal = to<T>(random_hermitian(4, 7));
    imaginary_diagonal[1 * 4 + 1] += T(0, 1);
    CHECK_THROWS_WITH_AS(cpu::eigen_symmetric(imaginary_diagonal.data(), 4, v.data(), w.data()),
                         doctest::Contains("not Hermitian"), tenex::NumericalError);
  }
  SUBCASE("non-finite input") {
    const std::vector<T> a = with_nan(to<T>(random_hermitian(4, 8)), 3 * 4 + 0);
    std::vector<T> v(16), w(4);
    CHECK_THROWS_WITH_AS(cpu::eigen_symmetric(a.data(), 4, v.data(), w.data()),
                         doctest::Contains("eigen_solve: the matrix has a non-finite entry (nan) at (3, 0)"),
                         tenex::NumericalError);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_eigen, ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: generalized eigen satisfies A V = B V diag(w), V^H B V = I", T,
                          cpu_linalg_complex_generalized) {
  SUBCASE("n = 0") { check_generalized<T>({}, {}, 0); }
  SUBCASE("random") { check_generalized<T>(random_hermitian(20, 9), random_hpd(20, 10), 20); }
  SUBCASE("A = 2 B: every eigenvalue is 2") {
    const std::size_t n = 6;
    const Matrix b = random_hpd(n, 11);
    Matrix a = b;
    for (Complex& x : a) x *= 2.0;
    for (const T& x : check_generalized<T>(a, b, n)) CHECK(std::abs(x.real() - 2) <= 10 * tol<T>(n));
  }
  SUBCASE("b not positive definite") {
    const std::vector<T> a = to<T>(random_hermitian(3, 12));
    const std::vector<T> b = {1, 0, 0, 0, -1, 0, 0, 0, 2};
    std::vector<T> v(9), w(3);
    const std::string routine = letter<T>() + "hegvd failed (info = 5)";
    CHECK_THROWS_WITH_AS(cpu::eigen_generalized(a.data(), b.data(), 3, v.data(), w.data()),
                         doctest::Contains(routine.c_str()), tenex::NumericalError);
    CHECK_THROWS_WITH_AS(cpu::eigen_generalized(a.data(), b.data(), 3, v.data(), w.data()),
                         doctest::Contains("of b is not positive definite; the generalized eigensolver needs b "
                                           "Hermitian positive definite"),
                         tenex::NumericalError);
  }
  SUBCASE("b not Hermitian") {
    const std::vector<T> a = to<T>(random_hermitian(3, 13));
    std::vector<T> b = to<T>(random_hpd(3, 14));
    b[1] = std::conj(b[3]) + T(0.5, 0);
    std::vector<T> v(9), w(3);
    CHECK_THROWS_WITH_AS(cpu::eigen_generalized(a.data(), b.data(), 3, v.data(), w.data()),
                         doctest::Contains("the matrix b is not Hermitian"), tenex::NumericalError);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_generalized, ComplexScalars);

// ---------------------------------------------------------------------------- qr, svd

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: qr satisfies Q R = A, Q^H Q = I, R upper with a real diagonal", T,
                          cpu_linalg_complex_qr) {
  SUBCASE("0 x 3") { check_qr<T>({}, 0, 3); }
  SUBCASE("1 x 1") { check_qr<T>({Complex(-2, 1)}, 1, 1); }
  SUBCASE("square") { check_qr<T>(linalg_matrices::random_matrix<Complex>(30, 30, 15), 30, 30); }
  SUBCASE("tall") { check_qr<T>(linalg_matrices::random_matrix<Complex>(40, 17, 16), 40, 17); }
  SUBCASE("wide") { check_qr<T>(linalg_matrices::random_matrix<Complex>(17, 40, 17), 17, 40); }
  SUBCASE("rank deficient (repeated column)") {
    Matrix a = linalg_matrices::random_matrix<Complex>(8, 5, 18);
    for (std::size_t i = 0; i < 8; ++i) a[i * 5 + 3] = a[i * 5 + 1];
    check_qr<T>(a, 8, 5);
  }
  SUBCASE("non-finite input") {
    const std::vector<T> a = with_nan(to<T>(linalg_matrices::random_matrix<Complex>(3, 2, 19)), 5);
    std::vector<T> q(6), r(4);
    CHECK_THROWS_WITH_AS(cpu::qr(a.data(), 3, 2, q.data(), r.data()), doctest::Contains("(nan) at (2, 1)"),
                         tenex::NumericalError);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_qr, ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: svd satisfies U diag(s) Vt = A, s real descending", T,
                          cpu_linalg_complex_svd) {
  SUBCASE("0 x 3") { check_svd<T>({}, 0, 3); }
  SUBCASE("1 x 1") {
    const std::vector<T> s = check_svd<T>({Complex(3, -4)}, 1, 1);
    CHECK(std::abs(s[0].real() - 5) <= tol<T>(1) * 5);
  }
  SUBCASE("square") { check_svd<T>(linalg_matrices::random_matrix<Complex>(30, 30, 20), 30, 30); }
  SUBCASE("tall") { check_svd<T>(linalg_matrices::random_matrix<Complex>(40, 17, 21), 40, 17); }
  SUBCASE("wide") { check_svd<T>(linalg_matrices::random_matrix<Complex>(17, 40, 22), 17, 40); }
  SUBCASE("rank one") {
    const Matrix x = linalg_matrices::random_matrix<Complex>(9, 1, 23),
                 y = linalg_matrices::random_matrix<Complex>(1, 7, 24);
    const std::vector<T> s = check_svd<T>(multiply(x, y, 9, 1, 7), 9, 7);
    CHECK(s[0].real() == doctest::Approx(norm(x) * norm(y)).epsilon(tol<T>(9)));
    for (std::size_t i = 1; i < s.size(); ++i) CHECK(s[i].real() <= tol<T>(9) * s[0].real());
  }
  SUBCASE("singular values are those of the real kernel on a real matrix") {
    Matrix a = linalg_matrices::random_matrix<Complex>(12, 8, 25);
    for (Complex& x : a) x = x.real();
    const std::vector<T> s = check_svd<T>(a, 12, 8);
    std::vector<Real<T>> ar(96), u(96), sr(8), vt(64);
    for (std::size_t i = 0; i < 96; ++i) ar[i] = static_cast<Real<T>>(a[i].real());
    cpu::svd(ar.data(), 12, 8, u.data(), sr.data(), vt.data());
    for (std::size_t i = 0; i < 8; ++i) CHECK(std::abs(s[i].real() - sr[i]) <= tol<T>(12) * sr[0]);
  }
  SUBCASE("non-finite input") {
    const std::vector<T> a = with_nan(to<T>(linalg_matrices::random_matrix<Complex>(2, 3, 26)), 1);
    std::vector<T> u(4), s(2), vt(6);
    CHECK_THROWS_WITH_AS(cpu::svd(a.data(), 2, 3, u.data(), s.data(), vt.data()),
                         doctest::Contains("svd: the matrix has a non-finite entry (nan) at (0, 1)"),
                         tenex::NumericalError);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_svd, ComplexScalars);

// ------------------------------------------------------------------- matrix functions

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: matrix power equals repeated products", T, cpu_linalg_complex_power) {
  const std::size_t n = 7;
  Matrix a_exact = linalg_matrices::random_matrix<Complex>(n, n, 27);
  for (Complex& x : a_exact) x /= static_cast<double>(2 * n);  // every power's norm at most 1
  const std::vector<T> a = to<T>(a_exact);
  const Matrix ax = from(a);
  Matrix expected = linalg_matrices::identity<Complex>(n);
  for (unsigned p = 0; p <= 11; ++p) {
    CAPTURE(p);
    std::vector<T> out(n * n, T(7, 7));
    cpu::matrix_power(a.data(), n, p, out.data());
    if (p == 0) CHECK(out == to<T>(linalg_matrices::identity<Complex>(n)));
    if (p == 1) CHECK(out == a);
    CHECK(distance(from(out), expected) <= tol<T>(n) * (p + 1));
    expected = multiply(expected, ax, n, n, n);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_power, ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: inverse satisfies A inv(A) = I", T, cpu_linalg_complex_inverse) {
  SUBCASE("random") {
    const std::size_t n = 20;
    const std::vector<T> a = to<T>(linalg_matrices::random_matrix<Complex>(n, n, 28));
    const std::vector<T> a_before = a;
    std::vector<T> out(n * n);
    cpu::inverse(a.data(), n, out.data());
    CHECK(a == a_before);
    // cond(a) of a random 20 x 20 matrix is some tens: a budget of 100 x the backward error.
    CHECK(distance(multiply(from(a), from(out), n, n, n), linalg_matrices::identity<Complex>(n)) <= 100 * tol<T>(n));
    CHECK(distance(multiply(from(out), from(a), n, n, n), linalg_matrices::identity<Complex>(n)) <= 100 * tol<T>(n));
  }
  SUBCASE("tiny entries are scaled, not lost") {
    const Real<T> tiny = std::ldexp(Real<T>(1), -100), huge = std::ldexp(Real<T>(1), 100);
    const std::vector<T> a = {T(0, tiny), 0, 0, T(2 * tiny, 0)};
    std::vector<T> out(4);
    cpu::inverse(a.data(), 2, out.data());
    CHECK(std::abs(out[0] - T(0, -huge)) <= 4 * eps<T>() * huge);
    CHECK(std::abs(out[3] - T(huge / 2, 0)) <= 4 * eps<T>() * huge);
    CHECK(out[1] == T(0));
  }
  SUBCASE("singular") {
    Matrix a = linalg_matrices::random_matrix<Complex>(5, 5, 29);
    for (std::size_t i = 0; i < 5; ++i) a[i * 5 + 4] = Complex(0, 2) * a[i * 5 + 1];
    const std::vector<T> at = to<T>(a);
    std::vector<T> out(25);
    CHECK_THROWS_WITH_AS(cpu::inverse(at.data(), 5, out.data()),
                         doctest::Contains("inverse: the 5 x 5 matrix is singular"), tenex::NumericalError);
  }
  SUBCASE("non-finite input") {
    const std::vector<T> a = with_nan(to<T>(linalg_matrices::random_matrix<Complex>(3, 3, 30)), 4);
    std::vector<T> out(9);
    CHECK_THROWS_WITH_AS(cpu::inverse(a.data(), 3, out.data()), doctest::Contains("(nan) at (1, 1)"),
                         tenex::NumericalError);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_inverse, ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: solve satisfies A x = b", T, cpu_linalg_complex_solve) {
  const std::size_t n = 12, outer = 2, inner = 3;
  // b and x laid out as (outer, n, inner): right-hand side (o, q) is b[(o n + i) inner + q].
  const auto residual = [&](const Matrix& a, const std::vector<T>& b, const std::vector<T>& x) {
    double worst = 0;
    for (std::size_t o = 0; o < outer; ++o) {
      for (std::size_t q = 0; q < inner; ++q) {
        Matrix xc(n), bc(n);
        for (std::size_t i = 0; i < n; ++i) {
          xc[i] = Complex(x[(o * n + i) * inner + q]);
          bc[i] = Complex(b[(o * n + i) * inner + q]);
        }
        worst = std::max(worst, distance(multiply(a, xc, n, n, 1), bc) / (norm(a) * norm(xc)));
      }
    }
    return worst;
  };
  const std::vector<T> b = to<T>(linalg_matrices::random_matrix<Complex>(outer * n, inner, 31));
  SUBCASE("general (LU)") {
    const Matrix a = from(to<T>(linalg_matrices::random_matrix<Complex>(n, n, 32)));
    const std::vector<T> at = to<T>(a);
    std::vector<T> x(b.size());
    const cpu::KernelCount count = cpu::solve(at.data(), n, b.data(), outer, inner, x.data());
    CHECK(residual(a, b, x) <= tol<T>(n));
    CHECK(count.calls == 3);
  }
  SUBCASE("Hermitian positive definite (Cholesky)") {
    const Matrix a = from(to<T>(random_hpd(n, 33)));
    const std::vector<T> at = to<T>(a);
    std::vector<T> x(b.size());
    const cpu::KernelCount count = cpu::solve(at.data(), n, b.data(), outer, inner, x.data());
    CHECK(residual(a, b, x) <= tol<T>(n));
    CHECK(count.calls == 3);  // potrf, pocon, potrs
  }
  SUBCASE("Hermitian, not positive definite: LU after Cholesky fails") {
    const Matrix a = from(to<T>(random_hermitian(n, 34)));
    const std::vector<T> at = to<T>(a);
    std::vector<T> x(b.size());
    const cpu::KernelCount count = cpu::solve(at.data(), n, b.data(), outer, inner, x.data());
    CHECK(residual(a, b, x) <= 10 * tol<T>(n));
    CHECK(count.calls == 4);  // potrf, then getrf, gecon, getrs
  }
  SUBCASE("one right-hand side as the last mode") {
    const Matrix a = from(to<T>(linalg_matrices::random_matrix<Complex>(n, n, 35)));
    const std::vector<T> at = to<T>(a), b1 = to<T>(linalg_matrices::random_matrix<Complex>(n, 1, 36));
    std::vector<T> x(n);
    cpu::solve(at.data(), n, b1.data(), 1, 1, x.data());
    CHECK(distance(multiply(a, from(x), n, n, 1), from(b1)) <= tol<T>(n) * norm(a) * norm(from(x)));
  }
  SUBCASE("singular") {
    const std::vector<T> a = {1, T(0, 1), T(0, 1), -1};  // second row = i * first
    std::vector<T> x(2);
    const std::vector<T> b2 = {1, 2};
    CHECK_THROWS_WITH_AS(cpu::solve(a.data(), 2, b2.data(), 1, 1, x.data(), "a"),
                         doctest::Contains("solve: the matrix a is singular"), tenex::NumericalError);
  }
  SUBCASE("non-finite b") {
    const std::vector<T> a = to<T>(random_hpd(n, 37));
    const std::vector<T> bad = with_nan(b, 5);
    std::vector<T> x(b.size());
    CHECK_THROWS_WITH_AS(cpu::solve(a.data(), n, bad.data(), outer, inner, x.data()),
                         doctest::Contains("solve: b has a non-finite entry (nan)"), tenex::NumericalError);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_solve, ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: spd_power of a Hermitian positive definite matrix", T,
                          cpu_linalg_complex_spd_power) {
  const std::size_t n = 10;
  const std::vector<T> a = to<T>(random_hpd(n, 38));
  const Matrix ax = from(a);
  SUBCASE("square root: (a^0.5)^2 = a, a^0.5 Hermitian") {
    std::vector<T> root(n * n);
    cpu::spd_power(a.data(), n, 0.5, root.data());
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) CHECK(root[i * n + j] == std::conj(root[j * n + i]));
    const Matrix rx = from(root);
    CHECK(distance(multiply(rx, rx, n, n, n), ax) <= tol<T>(n) * norm(ax));
  }
  SUBCASE("a^-1 a = I, a^2 = a a") {
    std::vector<T> inverse(n * n), square(n * n);
    cpu::spd_power(a.data(), n, -1.0, inverse.data());
    CHECK(distance(multiply(from(inverse), ax, n, n, n), linalg_matrices::identity<Complex>(n)) <= 10 * tol<T>(n));
    cpu::spd_power(a.data(), n, 2.0, square.data());
    CHECK(distance(from(square), multiply(ax, ax, n, n, n)) <= tol<T>(n) * norm(ax) * norm(ax));
  }
  SUBCASE("not Hermitian") {
    std::vector<T> b = a;
    b[1 * n + 0] += T(0, 0.5);
    std::vector<T> out(n * n);
    CHECK_THROWS_WITH_AS(cpu::spd_power(b.data(), n, 0.5, out.data()),
                         doctest::Contains("pow: the 10 x 10 matrix is not Hermitian"), tenex::NumericalError);
  }
  SUBCASE("indefinite") {
    const std::vector<T> h = {1, T(0, 2), T(0, -2), 1};  // eigenvalues -1 and 3
    std::vector<T> out(4);
    CHECK_THROWS_WITH_AS(cpu::spd_power(h.data(), 2, 0.5, out.data()), doctest::Contains("not positive semidefinite"),
                         tenex::NumericalError);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_spd_power, ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("cpu linalg complex: the Hermitian tolerance is the real type's", T,
                          cpu_linalg_complex_tolerance) {
  CHECK(cpu::symmetry_tolerance<T>(10) == cpu::symmetry_tolerance<Real<T>>(10));
  CHECK(cpu::symmetry_tolerance<T>(1000) == cpu::symmetry_tolerance<Real<T>>(1000));
  const std::vector<T> h = {2, T(1, 1), T(1, -1), 3};
  CHECK_NOTHROW(cpu::require_symmetric(h.data(), 2, cpu::symmetry_tolerance<T>(2), "test"));
  const std::vector<T> symmetric_not_hermitian = {2, T(1, 1), T(1, 1), 3};
  CHECK_THROWS_AS(cpu::require_symmetric(symmetric_not_hermitian.data(), 2, cpu::symmetry_tolerance<T>(2), "test"),
                  tenex::NumericalError);
}
TEST_CASE_TEMPLATE_APPLY(cpu_linalg_complex_tolerance, ComplexScalars);
