// Linear algebra of complex matrices through the expression API: cholesky, Hermitian
// eigen_solve (standard and generalized), qr, svd, inverse, solve and pow in complex<float>
// and complex<double>. Every result is checked through the identity that defines it (L L^H = A,
// H V = V diag(w) with V^H V = I, Q R = A, U diag(s) Vt = A, ...) with naive loops in
// std::complex<double>, tolerances scaled by the real type's epsilon and n. Eigenvalues and
// singular values go to real tensors (std::make_pair and tenex::tie with targets of two element
// types); both factors of a call decompose once. Each case runs with the passes on and off and
// at one and two threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/dumped_graphs.hpp"
#include "support/environment_scope.hpp"
#include "support/linalg_matrices.hpp"
#include "support/scalars.hpp"

namespace {

using linalg_matrices::adjoint, linalg_matrices::column_orthogonality_error, linalg_matrices::distance,
    linalg_matrices::multiply, linalg_matrices::norm;
using tenex::Shape;
using tenex::Tensor;

using Z = std::complex<double>;
using Matrix = std::vector<Z>;  // row-major, the reference side

template <class T>
using Real = tenex::real_type_t<T>;

template <class T>
double eps() {
  return static_cast<double>(std::numeric_limits<Real<T>>::epsilon());
}

// A backward-error budget: c * n * eps.
template <class T>
double tol(std::size_t n) {
  return 50.0 * static_cast<double>(std::max<std::size_t>(n, 1)) * eps<T>();
}

// The settings a result must not depend on.
struct Setting {
  const char* passes;
  const char* threads;
};
const Setting kSettings[] = {{"all", "2"}, {"none", "1"}, {"all", "1"}, {"none", "2"}};

template <class F>
void for_each_setting(F&& check) {
  for (const Setting& s : kSettings) {
    CAPTURE(s.passes);
    CAPTURE(s.threads);
    EnvironmentScope passes("TENEX_PASSES", s.passes);
    EnvironmentScope threads("OMP_NUM_THREADS", s.threads);
    check();
  }
}

template <class T>
Matrix wide(const Tensor<T>& t) {
  const std::vector<T> v = t.to_vector();
  return Matrix(v.begin(), v.end());
}

template <class R>
std::vector<double> wide_real(const Tensor<R>& t) {
  const std::vector<R> v = t.to_vector();
  return std::vector<double>(v.begin(), v.end());
}

template <class T>
Tensor<T> tensor(const Matrix& a, std::size_t m, std::size_t n) {
  std::vector<T> v;
  v.reserve(a.size());
  for (const Z& z : a) v.push_back(T(static_cast<Real<T>>(z.real()), static_cast<Real<T>>(z.imag())));
  return Tensor<T>(Shape{m, n}, std::move(v));
}

Matrix random_matrix(std::size_t m, std::size_t n, unsigned seed) {
  return linalg_matrices::random_matrix<Z>(m, n, seed);
}

// (B + B^H) / 2, exactly Hermitian (real diagonal).
Matrix hermitian_part(const Matrix& b, std::size_t n) {
  Matrix a(n * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) a[i * n + j] = 0.5 * (b[i * n + j] + std::conj(b[j * n + i]));
    a[i * n + i] = Z(a[i * n + i].real(), 0.0);
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < i; ++j) a[j * n + i] = std::conj(a[i * n + j]);
  }
  return a;
}

Matrix random_hermitian(std::size_t n, unsigned seed) { return hermitian_part(random_matrix(n, n, seed), n); }

// B B^H + n I: Hermitian positive definite, well conditioned.
Matrix random_hpd(std::size_t n, unsigned seed) {
  const Matrix b = random_matrix(n, n, seed);
  Matrix a = hermitian_part(multiply(b, adjoint(b, n, n), n, n, n), n);
  for (std::size_t i = 0; i < n; ++i) a[i * n + i] += static_cast<double>(n);
  return a;
}

// x (rows x cols) with column j scaled by d[j].
Matrix scale_columns(Matrix x, std::size_t rows, std::size_t cols, const std::vector<double>& d) {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) x[i * cols + j] *= d[j];
  return x;
}

Matrix identity(std::size_t n) { return linalg_matrices::identity<Z>(n); }

// H V = V diag(w) (or H V = S V diag(w)), V^H V = I (or V^H S V = I), w ascending.
void check_eigenpairs(const Matrix& h, const Matrix* s, const Matrix& v, const std::vector<double>& w, std::size_t n,
                      double tolerance) {
  REQUIRE(v.size() == n * n);
  REQUIRE(w.size() == n);
  const Matrix sv = s ? multiply(*s, v, n, n, n) : v;
  const double scale = norm(h) + (s ? norm(*s) : 1.0) * std::abs(w.back()) + std::abs(w.front());
  CHECK(distance(multiply(h, v, n, n, n), scale_columns(sv, n, n, w)) <= tolerance * scale);
  const Matrix gram = multiply(adjoint(v, n, n), sv, n, n, n);
  CHECK(distance(gram, identity(n)) <= tolerance * (s ? norm(*s) : 1.0) * 4.0);
  for (std::size_t j = 0; j + 1 < n; ++j) CHECK(w[j] <= w[j + 1]);
}

// U diag(s) Vt = A, U^H U = I, Vt Vt^H = I, s descending and non-negative.
void check_svd(const Matrix& a, const Matrix& u, const std::vector<double>& s, const Matrix& vt, std::size_t m,
               std::size_t n, double tolerance) {
  const std::size_t k = std::min(m, n);
  REQUIRE(u.size() == m * k);
  REQUIRE(s.size() == k);
  REQUIRE(vt.size() == k * n);
  CHECK(distance(multiply(scale_columns(u, m, k, s), vt, m, k, n), a) <= tolerance * norm(a));
  CHECK(column_orthogonality_error(u, m, k) <= tolerance);
  CHECK(column_orthogonality_error(adjoint(vt, k, n), n, k) <= tolerance);
  for (std::size_t j = 0; j < k; ++j) CHECK(s[j] >= 0.0);
  for (std::size_t j = 0; j + 1 < k; ++j) CHECK(s[j] >= s[j + 1]);
}

// Occurrences of `word` in every graph dumped.
std::size_t occurrences(const std::vector<std::string>& graphs, const std::string& word) {
  std::size_t count = 0;
  for (const std::string& text : graphs) {
    for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + word.size())) ++count;
  }
  return count;
}

template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: cholesky gives L L^H = A, L lower with a real positive diagonal", T,
                          la_complex_cholesky) {
  const std::size_t n = 6;
  const Matrix a = random_hpd(n, 11);
  for_each_setting([&] {
    Tensor<T> a_in = tensor<T>(a, n, n), l;
    l("i,j") = tenex::cholesky(a_in("i,j"));
    const Matrix lm = wide(l);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) CHECK(lm[i * n + j] == Z(0));
      CHECK(lm[i * n + i].imag() == 0.0);
      CHECK(lm[i * n + i].real() > 0.0);
    }
    CHECK(distance(multiply(lm, adjoint(lm, n, n), n, n, n), a) <= tol<T>(n) * norm(a));
  });
}
TEST_CASE_TEMPLATE_APPLY(la_complex_cholesky, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: eigen_solve writes real eigenvalues to a real target", T,
                          la_complex_eigen) {
  using R = Real<T>;
  const std::size_t n = 6;
  const Matrix h = random_hermitian(n, 21);
  for_each_setting([&] {
    Tensor<T> h_in = tensor<T>(h, n, n), v, v2, v3, vt;
    Tensor<R> w, w2, w3, wt, twice;

    // The mixed pair: V complex, w a real tensor.
    std::make_pair(v("i,k"), w("k")) = tenex::eigen_solve(h_in("i,j"));
    check_eigenpairs(h, nullptr, wide(v), wide_real(w), n, tol<T>(n));

    // tenex::tie with targets of two element types, the vectors stored transposed.
    tenex::tie(vt("k,i"), wt("k")) = tenex::eigen_solve(h_in("i,j"));
    Matrix from_vt(n * n);
    const Matrix vtm = wide(vt);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < n; ++k) from_vt[i * n + k] = vtm[k * n + i];
    check_eigenpairs(h, nullptr, from_vt, wide_real(wt), n, tol<T>(n));

    // Structured bindings, statements of their own (the real one in a set of its own), and the
    // real values used inside a real expression.
    {
      auto [vectors, values] = tenex::eigen_solve(h_in("i,j"));
      static_assert(std::is_base_of_v<tenex::Expression<Tensor<R>>, decltype(values)>);
      v2("i,k") = vectors;
      w2("k") = values;
      twice("j") = 2.0 * values;  // an expression of the values keeps the operand's label
    }
    check_eigenpairs(h, nullptr, wide(v2), wide_real(w2), n, tol<T>(n));
    for (std::size_t j = 0; j < n; ++j) CHECK(twice.at(j) == R(2) * w2.at(j));

    // The member form.
    std::make_pair(v3("i,k"), w3("k")) = h_in("i,j").eigen_solve();
    check_eigenpairs(h, nullptr, wide(v3), wide_real(w3), n, tol<T>(n));
  });
}
TEST_CASE_TEMPLATE_APPLY(la_complex_eigen, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: generalized eigen_solve H V = S V diag(w), V^H S V = I", T,
                          la_complex_generalized) {
  using R = Real<T>;
  const std::size_t n = 5;
  const Matrix h = random_hermitian(n, 31), s = random_hpd(n, 32);
  for_each_setting([&] {
    Tensor<T> h_in = tensor<T>(h, n, n), s_in = tensor<T>(s, n, n), v, v2;
    Tensor<R> w, w2;
    std::make_pair(v("m,p"), w("p")) = tenex::eigen_solve(h_in("m,n"), s_in("m,n"));
    check_eigenpairs(h, &s, wide(v), wide_real(w), n, tol<T>(n) * 4.0);
    tenex::tie(v2("m,p"), w2("p")) = h_in("m,n").eigen_solve(s_in("m,n"));
    check_eigenpairs(h, &s, wide(v2), wide_real(w2), n, tol<T>(n) * 4.0);
  });
}
TEST_CASE_TEMPLATE_APPLY(la_complex_generalized, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: both factors of one call decompose once", T, la_complex_once) {
  using R = Real<T>;
  const std::size_t n = 6, m = 7, k = 5;
  const Matrix h = random_hermitian(n, 41), a = random_matrix(m, k, 42);
  Tensor<T> h_in = tensor<T>(h, n, n), a_in = tensor<T>(a, m, k), v, u, vt;
  Tensor<R> w, s;

  // The eigen_solve node and the svd node appear in one graph of all the sets the statements
  // ran (the complex one; the real target's set reads what it computed).
  const auto eigen_graphs =
      tenex_test::dumped_graphs([&] { std::make_pair(v("i,k"), w("k")) = tenex::eigen_solve(h_in("i,j")); });
  INFO(eigen_graphs.size());
  CHECK(occurrences(eigen_graphs, "eigen_solve") == 1);
  check_eigenpairs(h, nullptr, wide(v), wide_real(w), n, tol<T>(n));

  const auto svd_graphs = tenex_test::dumped_graphs([&] {
    auto [uf, sf, vtf] = tenex::svd(a_in("i,j"));
    u("i,q") = uf;
    s("q") = sf;
    vt("q,j") = vtf;
  });
  CHECK(occurrences(svd_graphs, "svd") == 1);
  check_svd(a, wide(u), wide_real(s), wide(vt), m, k, tol<T>(m));

  const auto tie_graphs =
      tenex_test::dumped_graphs([&] { tenex::tie(u("i,q"), s("q"), vt("q,j")) = tenex::svd(a_in("i,j")); });
  CHECK(occurrences(tie_graphs, "svd") == 1);
  check_svd(a, wide(u), wide_real(s), wide(vt), m, k, tol<T>(m));
}
TEST_CASE_TEMPLATE_APPLY(la_complex_once, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: qr gives Q R = A, Q^H Q = I, R upper with a real diagonal", T,
                          la_complex_qr) {
  for (const auto& [m, n] : {std::pair<std::size_t, std::size_t>{7, 4}, {4, 6}}) {
    CAPTURE(m);
    CAPTURE(n);
    const std::size_t k = std::min(m, n);
    const Matrix a = random_matrix(m, n, static_cast<unsigned>(50 + m));
    for_each_setting([&] {
      Tensor<T> a_in = tensor<T>(a, m, n), q, r;
      tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a_in("i,j"));
      const Matrix qm = wide(q), rm = wide(r);
      CHECK(distance(multiply(qm, rm, m, k, n), a) <= tol<T>(m) * norm(a));
      CHECK(column_orthogonality_error(qm, m, k) <= tol<T>(m));
      for (std::size_t i = 0; i < k; ++i) {
        for (std::size_t j = 0; j < i && j < n; ++j) CHECK(rm[i * n + j] == Z(0));
        CHECK(rm[i * n + i].imag() == 0.0);
        CHECK(rm[i * n + i].real() >= 0.0);
      }
    });
  }
}
TEST_CASE_TEMPLATE_APPLY(la_complex_qr, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: svd gives U diag(s) Vt = A with s real and descending", T,
                          la_complex_svd) {
  using R = Real<T>;
  for (const auto& [m, n] : {std::pair<std::size_t, std::size_t>{7, 5}, {4, 6}}) {
    CAPTURE(m);
    CAPTURE(n);
    const Matrix a = random_matrix(m, n, static_cast<unsigned>(60 + m));
    for_each_setting([&] {
      Tensor<T> a_in = tensor<T>(a, m, n), u, vt;
      Tensor<R> s, twice;
      {
        auto [uf, sf, vtf] = tenex::svd(a_in("i,j"));
        static_assert(std::is_base_of_v<tenex::Expression<Tensor<R>>, decltype(sf)>);
        u("i,k") = uf;
        s("k") = sf;
        vt("k,j") = vtf;
        twice("k") = 2.0 * sf;  // the values inside a real expression
      }
      check_svd(a, wide(u), wide_real(s), wide(vt), m, n, tol<T>(std::max(m, n)));
      for (std::size_t j = 0; j < std::min(m, n); ++j) CHECK(twice.at(j) == R(2) * s.at(j));
    });
  }
}
TEST_CASE_TEMPLATE_APPLY(la_complex_svd, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: inverse, solve and pow", T, la_complex_matrix_functions) {
  const std::size_t n = 5;
  const Matrix g = random_matrix(n, n, 71), p = random_hpd(n, 72), b = random_matrix(n, 2, 73);
  Matrix shifted = g;  // a general matrix kept away from singular
  for (std::size_t i = 0; i < n; ++i) shifted[i * n + i] += 3.0;
  for_each_setting([&] {
    Tensor<T> g_in = tensor<T>(shifted, n, n), p_in = tensor<T>(p, n, n), b_in = tensor<T>(b, n, 2);
    Tensor<T> inv, x, y, cube, root, root_squared, inverse_power;

    inv("i,j") = tenex::inverse(g_in("i,j"));
    CHECK(distance(multiply(wide(inv), shifted, n, n, n), identity(n)) <= tol<T>(n) * 10.0);

    // A x = b: LU for the general matrix, Cholesky for the Hermitian positive definite one.
    x("j,r") = tenex::solve(g_in("i,j"), b_in("i,r"));
    CHECK(distance(multiply(shifted, wide(x), n, n, 2), b) <= tol<T>(n) * 10.0 * norm(b));
    y("j,r") = tenex::solve(p_in("i,j"), b_in("i,r"));
    CHECK(distance(multiply(p, wide(y), n, n, 2), b) <= tol<T>(n) * 10.0 * norm(b));

    cube("i,j") = tenex::pow(g_in("i,j"), 3);
    const Matrix expected_cube = multiply(multiply(shifted, shifted, n, n, n), shifted, n, n, n);
    CHECK(distance(wide(cube), expected_cube) <= tol<T>(n) * norm(expected_cube));

    inverse_power("i,j") = tenex::pow(g_in("i,j"), -1);
    CHECK(distance(multiply(wide(inverse_power), shifted, n, n, n), identity(n)) <= tol<T>(n) * 10.0);

    // pow(P, 0.5)^2 = P, the root exactly Hermitian.
    root("i,j") = tenex::pow(p_in("i,j"), 0.5);
    root_squared("i,j") = root("i,k") * root("k,j");
    CHECK(distance(wide(root_squared), p) <= tol<T>(n) * norm(p));
    const Matrix rm = wide(root);
    CHECK(rm == adjoint(rm, n, n));
  });
}
TEST_CASE_TEMPLATE_APPLY(la_complex_matrix_functions, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: a failed mixed statement leaves every target as it was", T,
                          la_complex_failed_statement) {
  using R = Real<T>;
  const std::size_t n = 4;
  const Matrix h = random_hermitian(n, 81);
  Tensor<T> h_in = tensor<T>(h, n, n);
  const Tensor<T> v_before = tensor<T>(random_matrix(n, n, 82), n, n);
  const Tensor<R> w_before(Shape{n}, std::vector<R>{R(1), R(2), R(3), R(4)});
  Tensor<T> v = v_before;
  Tensor<R> w = w_before;

  // The vectors' target names the mode of the eigenpairs "k", the values' "j": a ShapeError at
  // the statement, the vectors (assigned first) undone.
  const std::string message =
      error_of<tenex::ShapeError>([&] { std::make_pair(v("i,k"), w("j")) = tenex::eigen_solve(h_in("i,j")); });
  CHECK(message.find("name the mode of the eigenpairs differently") != std::string::npos);
  // The values first (the real target), then the vectors: the real target is undone.
  const std::string reversed = error_of<tenex::ShapeError>([&] {
    auto [vectors, values] = tenex::eigen_solve(h_in("i,j"));
    std::make_pair(w("j"), v("i,k")) = std::make_pair(values, vectors);
  });
  CHECK(reversed.find("name the mode of the eigenpairs differently") != std::string::npos);
  CHECK(v.to_vector() == v_before.to_vector());
  CHECK(w.to_vector() == w_before.to_vector());

  // A label the svd does not produce for the last target: U and the real S stay as they were.
  Tensor<T> u = v_before, vt = v_before;
  Tensor<R> s = w_before;
  CHECK_THROWS_AS((tenex::tie(u("i,q"), s("q"), vt("q,z")) = tenex::svd(h_in("i,j"))), tenex::ShapeError);
  CHECK(u.to_vector() == v_before.to_vector());
  CHECK(s.to_vector() == w_before.to_vector());
  CHECK(vt.to_vector() == v_before.to_vector());
}
TEST_CASE_TEMPLATE_APPLY(la_complex_failed_statement, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra complex: a non-Hermitian input is a NumericalError on read", T,
                          la_complex_not_hermitian) {
  using R = Real<T>;
  const std::size_t n = 4;
  Matrix bad = random_hpd(n, 91);
  bad[2 * n + 0] += Z(0.0, 0.5);  // (2, 0) no longer the conjugate of (0, 2)
  Matrix bad_diagonal = random_hpd(n, 92);
  bad_diagonal[1 * n + 1] += Z(0.0, 0.5);  // a Hermitian matrix's diagonal is real
  for_each_setting([&] {
    Tensor<T> a = tensor<T>(bad, n, n), d = tensor<T>(bad_diagonal, n, n), good = tensor<T>(random_hpd(n, 93), n, n);
    Tensor<T> v, root, l, l_good;
    Tensor<R> w;
    std::make_pair(v("i,k"), w("k")) = tenex::eigen_solve(a("i,j"));
    const std::string vectors_error = error_of<tenex::NumericalError>([&] { v.wait(); });
    CHECK(vectors_error.find("eigen_solve") != std::string::npos);
    CHECK(vectors_error.find("not Hermitian") != std::string::npos);
    // The real target of the same call fails with the same error, at every read.
    CHECK(error_of<tenex::NumericalError>([&] { w.wait(); }) == vectors_error);
    CHECK(error_of<tenex::NumericalError>([&] { (void)w.at(0); }) == vectors_error);

    root("i,j") = tenex::pow(a("i,j"), 0.5);
    const std::string pow_error = error_of<tenex::NumericalError>([&] { root.wait(); });
    CHECK(pow_error.find("pow") != std::string::npos);
    CHECK(pow_error.find("not Hermitian") != std::string::npos);

    // cholesky reads the lower triangle (its labels choose which); a diagonal with an imaginary
    // part is not Hermitian whichever is read.
    {
      auto lower = d("i,j");
      l("i,j") = tenex::cholesky(lower);
      l_good("i,j") = tenex::cholesky(good("i,j"));  // another statement of the same set
    }
    const std::string cholesky_error = error_of<tenex::NumericalError>([&] { l.wait(); });
    CHECK(cholesky_error.find("cholesky") != std::string::npos);
    CHECK(cholesky_error.find("not Hermitian") != std::string::npos);
    CHECK_NOTHROW(l_good.wait());

    // The inputs are unchanged.
    CHECK(wide(a) == wide(tensor<T>(bad, n, n)));
  });
}
TEST_CASE_TEMPLATE_APPLY(la_complex_not_hermitian, tenex_test::ComplexScalars);
