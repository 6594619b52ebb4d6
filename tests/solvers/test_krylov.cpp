// Krylov solvers on operators written as statements: tenex::eigsh against the dense
// eigen_solve of the same operator (values, A v = w v, orthonormal vectors), for k = 1..3 at
// both ends, real and complex, with starting vectors that hold no weight on the wanted vectors
// (an invariant subspace); tenex::expm_multiply against a dense exponential (through the
// eigenvectors of a Hermitian operator, through a long Taylor series of a general one), for
// real and imaginary t and steps long enough to need several Krylov bases. Also: the matvecs
// run through the plan cache (planned once), and the errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::EigshOptions;
using tenex::Shape;
using tenex::Tensor;
using Complex = std::complex<double>;

template <class T>
constexpr bool is_float = std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>;

template <class T>
Tensor<T> random(const Shape& shape, std::uint64_t seed) {
  Tensor<T> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

/// A Hermitian n x n matrix (real: symmetric).
template <class T>
Tensor<T> hermitian(std::size_t n, std::uint64_t seed) {
  Tensor<T> m = random<T>(Shape({n, n}), seed);
  Tensor<T> h;
  h("i,j") = m("i,j") + tenex::conj(m("j,i"));
  return h;
}

template <class T>
std::vector<double> dense_eigenvalues(const Tensor<T>& h) {
  Tensor<T> v;
  Tensor<tenex::real_type_t<T>> w;
  std::make_pair(v("i,k"), w("k")) = tenex::eigen_solve(h("i,j"));
  std::vector<double> out;
  for (std::size_t i = 0; i < w.size(); ++i) out.push_back(static_cast<double>(w.data()[i]));
  return out;
}

template <class T>
double residual(const Tensor<T>& h, const Tensor<T>& v, double w) {
  Tensor<T> hv;
  hv("i") = h("i,j") * v("j");
  double r = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    r = std::max(r, static_cast<double>(std::abs(hv.data()[i] - static_cast<tenex::real_type_t<T>>(w) * v.data()[i])));
  }
  return r;
}

template <class T>
double norm(const Tensor<T>& v) {
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    s += static_cast<double>(std::norm(Complex(std::real(v.data()[i]), std::imag(v.data()[i]))));
  return std::sqrt(s);
}

template <class T>
Complex inner(const Tensor<T>& a, const Tensor<T>& b) {
  Complex s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s += std::conj(Complex(std::real(a.data()[i]), std::imag(a.data()[i]))) *
         Complex(std::real(b.data()[i]), std::imag(b.data()[i]));
  }
  return s;
}

}  // namespace

TEST_CASE_TEMPLATE("krylov: eigsh finds the k smallest and largest eigenpairs of a matrix operator", T, float, double,
                   std::complex<float>, std::complex<double>) {
  const std::size_t n = 80;
  Tensor<T> h = hermitian<T>(n, 21);
  const std::vector<double> exact = dense_eigenvalues(h);
  const double scale = std::max(std::abs(exact.front()), std::abs(exact.back()));
  const double tol = is_float<T> ? 1e-4 : 1e-9;
  auto op = [&](const Tensor<T>& x, Tensor<T>& y) { y("i") = h("i,j") * x("j"); };
  Tensor<T> x0 = random<T>(Shape({n}), 22);
  for (std::size_t k : {1, 3}) {
    for (auto which : {EigshOptions::smallest, EigshOptions::largest}) {
      CAPTURE(k);
      CAPTURE(which == EigshOptions::smallest);
      EigshOptions options{.k = k, .which = which, .tol = is_float<T> ? 1e-5 : 1e-10};
      const auto [values, vectors] = tenex::eigsh(op, x0, options);
      REQUIRE(values.size() == k);
      REQUIRE(vectors.size() == k);
      for (std::size_t i = 0; i < k; ++i) {
        const double want = which == EigshOptions::smallest ? exact[i] : exact[n - 1 - i];
        CHECK(std::abs(values[i] - want) < tol * scale);
        CHECK(vectors[i].shape() == Shape({n}));
        CHECK(std::abs(norm(vectors[i]) - 1) < tol);
        CHECK(residual(h, vectors[i], values[i]) < 100 * tol * scale);
        for (std::size_t j = 0; j < i; ++j) CHECK(std::abs(inner(vectors[j], vectors[i])) < 100 * tol);
      }
    }
  }
}

TEST_CASE_TEMPLATE("krylov: eigsh on a tensor-shaped vector with a contraction as the operator", T, double,
                   std::complex<double>) {
  // y(a,b,c) = H(a,b,c,d,e,f) x(d,e,f), H Hermitian as a 24 x 24 matrix: the dense eigen_solve
  // over label groups is the oracle.
  Tensor<T> m = random<T>(Shape({2, 3, 4, 2, 3, 4}), 23);
  Tensor<T> H;
  H("a,b,c,d,e,f") = m("a,b,c,d,e,f") + tenex::conj(m("d,e,f,a,b,c"));
  Tensor<T> V;
  Tensor<tenex::real_type_t<T>> w;
  std::make_pair(V("a,b,c,k"), w("k")) = tenex::eigen_solve(H("a,b,c,d,e,f"), "a,b,c");
  std::size_t products = 0, reused = 0;
  auto op = [&](const Tensor<T>& x, Tensor<T>& y) {
    y("a,b,c") = H("a,b,c,d,e,f") * x("d,e,f");
    (void)y.data();
    ++products;
    if (tenex::last_run_stats().plan_reused) ++reused;
  };
  Tensor<T> x0 = random<T>(Shape({2, 3, 4}), 24);
  const auto [values, vectors] = tenex::eigsh(op, x0, {.k = 2, .which = EigshOptions::smallest});
  CHECK(std::abs(values[0] - static_cast<double>(w.data()[0])) < 1e-9);
  CHECK(std::abs(values[1] - static_cast<double>(w.data()[1])) < 1e-9);
  CHECK(vectors[0].shape() == Shape({2, 3, 4}));
  // The matvec was planned once: every later product reused the plan.
  CHECK(products > 1);
  CHECK(reused == products - 1);
}

TEST_CASE("krylov: eigsh leaves an invariant subspace and works below the Krylov dimension") {
  // diag(1..n) from an eigenvector of the largest value: the Krylov space of x0 is x0 alone.
  const std::size_t n = 40;
  Tensor<double> d(Shape({n}));
  for (std::size_t i = 0; i < n; ++i) d.at(i) = static_cast<double>(i + 1);
  auto op = [&](const Tensor<double>& x, Tensor<double>& y) { y("i") = d("i") * x("i"); };
  Tensor<double> x0(Shape({n}));
  x0.at(n - 1) = 1.0;
  const auto [values, vectors] = tenex::eigsh(op, x0, {.k = 2});
  CHECK(std::abs(values[0] - 1.0) < 1e-9);
  CHECK(std::abs(values[1] - 2.0) < 1e-9);
  CHECK(std::abs(std::abs(vectors[0].at(0)) - 1.0) < 1e-8);
  // Dimension 5 < krylov_dim: exact in one pass.
  Tensor<double> small = hermitian<double>(5, 25);
  auto small_op = [&](const Tensor<double>& x, Tensor<double>& y) { y("i") = small("i,j") * x("j"); };
  const std::vector<double> exact = dense_eigenvalues(small);
  const auto [v5, x5] =
      tenex::eigsh(small_op, random<double>(Shape({5}), 26), {.k = 5, .which = EigshOptions::largest});
  for (std::size_t i = 0; i < 5; ++i) CHECK(std::abs(v5[i] - exact[4 - i]) < 1e-10);
}

TEST_CASE("krylov: eigsh errors: k, the starting vector, y's shape, no convergence; op's own exceptions pass") {
  Tensor<double> h = hermitian<double>(10, 27);
  auto op = [&](const Tensor<double>& x, Tensor<double>& y) { y("i") = h("i,j") * x("j"); };
  Tensor<double> x0 = random<double>(Shape({10}), 28);
  CHECK_THROWS_AS(tenex::eigsh(op, x0, {.k = 0}), tenex::Error);
  CHECK_THROWS_AS(tenex::eigsh(op, x0, {.k = 11}), tenex::Error);
  CHECK_THROWS_AS(tenex::eigsh(op, Tensor<double>(Shape({10})), {}), tenex::Error);
  auto wrong = [&](const Tensor<double>& x, Tensor<double>& y) { y("i,j") = h("i,j") * x("j"); };
  CHECK_THROWS_WITH_AS(tenex::eigsh(wrong, x0, {}), doctest::Contains("x's shape"), tenex::Error);
  auto failing = [](const Tensor<double>&, Tensor<double>&) { throw std::runtime_error("the user's own"); };
  CHECK_THROWS_WITH_AS(tenex::eigsh(failing, x0, {}), "the user's own", std::runtime_error);
  Tensor<double> big = hermitian<double>(200, 29);
  auto big_op = [&](const Tensor<double>& x, Tensor<double>& y) { y("i") = big("i,j") * x("j"); };
  CHECK_THROWS_WITH_AS(
      tenex::eigsh(big_op, random<double>(Shape({200}), 30), {.tol = 1e-14, .max_iter = 1, .krylov_dim = 4}),
      doctest::Contains("no convergence"), tenex::Error);
}

namespace {

/// exp(t H) x for a Hermitian H through its eigenvectors.
template <class T>
Tensor<T> dense_exponential(const Tensor<T>& h, const Tensor<T>& x, Complex t) {
  Tensor<T> v, c, y;
  Tensor<tenex::real_type_t<T>> w;
  std::make_pair(v("i,k"), w("k")) = tenex::eigen_solve(h("i,j"));
  c("k") = tenex::conj(v("i,k")) * x("i");
  for (std::size_t k = 0; k < c.size(); ++k) {
    const Complex f = std::exp(t * static_cast<double>(w.data()[k]));
    if constexpr (tenex::is_complex_v<T>) {
      c.data()[k] *= T(f);
    } else {
      c.data()[k] *= f.real();
    }
  }
  y("i") = v("i,k") * c("k");
  return y;
}

template <class T>
double difference(const Tensor<T>& a, const Tensor<T>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::abs(a.data()[i] - b.data()[i])));
  return d;
}

}  // namespace

TEST_CASE_TEMPLATE("krylov: expm_multiply of a Hermitian operator matches the dense exponential", T, double,
                   std::complex<double>) {
  const std::size_t n = 60;
  Tensor<T> h = hermitian<T>(n, 31);
  auto op = [&](const Tensor<T>& x, Tensor<T>& y) { y("i") = h("i,j") * x("j"); };
  Tensor<T> x = random<T>(Shape({n}), 32);
  const double size = norm(x);
  for (double t : {0.05, -0.4, 2.0}) {
    CAPTURE(t);
    Tensor<T> got = tenex::expm_multiply(op, x, T(t), 1e-12);
    Tensor<T> want = dense_exponential(h, x, Complex(t));
    CHECK(difference(got, want) < 1e-9 * std::max(size, norm(want)));
  }
  if constexpr (tenex::is_complex_v<T>) {
    // Real time: exp(-i t H) is unitary.
    for (double t : {0.1, 3.0}) {
      Tensor<T> got = tenex::expm_multiply(op, x, T(0.0, -t), 1e-12);
      Tensor<T> want = dense_exponential(h, x, Complex(0, -t));
      CHECK(difference(got, want) < 1e-9 * size);
      CHECK(std::abs(norm(got) - size) < 1e-9 * size);
    }
  }
}

TEST_CASE("krylov: expm_multiply of a general operator matches a long Taylor series; t = 0 is x") {
  const std::size_t n = 30;
  Tensor<double> a = random<double>(Shape({n, n}), 33);
  auto op = [&](const Tensor<double>& x, Tensor<double>& y) { y("i") = a("i,j") * x("j"); };
  Tensor<double> x = random<double>(Shape({n}), 34);
  const double t = 0.3;
  // sum_k (t A)^k x / k!, term by term, until the terms vanish.
  std::vector<double> term = x.to_vector(), sum = term;
  for (int k = 1; k < 200; ++k) {
    std::vector<double> next(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) next[i] += t * a.at(i, j) * term[j] / k;
    }
    term = next;
    for (std::size_t i = 0; i < n; ++i) sum[i] += term[i];
  }
  Tensor<double> got = tenex::expm_multiply(op, x, t);
  double d = 0, s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    d = std::max(d, std::abs(got.data()[i] - sum[i]));
    s = std::max(s, std::abs(sum[i]));
  }
  CHECK(d < 1e-9 * s);
  CHECK(difference(tenex::expm_multiply(op, x, 0.0), x) == 0);
  CHECK_THROWS_AS(tenex::expm_multiply(op, x, t, 0.0), tenex::Error);
  auto wrong = [&](const Tensor<double>&, Tensor<double>& y) { y = Tensor<double>(Shape({n + 1})); };
  CHECK_THROWS_AS(tenex::expm_multiply(wrong, x, t), tenex::Error);
}
