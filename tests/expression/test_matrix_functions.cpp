// Matrix functions (issue #8): inverse, solve, negative integer powers, fractional powers of
// symmetric positive (semi)definite matrices, and the member forms of the seed design
// (Aij.eigen_solve(), Aij.eigen_solve(Bij), Aij.cholesky()). Results are checked through
// their defining identities, evaluated by plain loops in double (support/dense.hpp):
// A A^-1 = I, A x = b, A^-2 A^2 = I, S^-1/2 S S^-1/2 = I, (S^1/2)^2 = S.
#include <doctest/doctest.h>

#include <type_traits>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/dense.hpp"
#include "support/dumped_graphs.hpp"
#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;
using tenex_test::Dense;
using tenex_test::dense;
using tenex_test::identity;
using tenex_test::product;
using tenex_test::Scalars;
using tenex_test::tensor;
using tenex_test::transpose;

template <class T>
double eps() {
  return static_cast<double>(std::numeric_limits<T>::epsilon());
}

/// The bound of a backward-stable n x n computation on operands of norm `scale`.
template <class T>
double bound(std::size_t n, double scale) {
  return 200.0 * static_cast<double>(n) * eps<T>() * std::max(scale, 1.0);
}

double norm(const Dense& a) {
  double s = 0;
  for (double x : a.v) s += x * x;
  return std::sqrt(s);
}

double max_difference(const Dense& a, const Dense& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  double m = 0;
  for (std::size_t i = 0; i < a.v.size(); ++i) m = std::max(m, std::abs(a.v[i] - b.v[i]));
  return m;
}

#define CHECK_CLOSE(lhs, rhs, tolerance)                                             \
  do {                                                                               \
    const double difference_ = max_difference(lhs, rhs);                             \
    INFO(#lhs " = " #rhs ": max difference ", difference_, ", bound ", (tolerance)); \
    CHECK(difference_ <= (tolerance));                                               \
  } while (false)

/// A vector as an n x 1 matrix.
template <class T>
Dense column(const Tensor<T>& v) {
  REQUIRE(v.rank() == 1);
  Dense d(v.shape().extent(0), 1);
  for (std::size_t i = 0; i < d.rows; ++i) d(i, 0) = static_cast<double>(v.at(i));
  return d;
}

/// Random n x n plus n I: general (not symmetric) and well conditioned.
template <class T>
Tensor<T> general(std::size_t n, std::uint64_t seed) {
  Tensor<T> m(Shape{n, n});
  tenex::fill_random(m, seed);
  Dense d = dense(m);
  for (std::size_t i = 0; i < n; ++i) d(i, i) += static_cast<double>(n);
  return tensor<T>(d);
}

/// M M^T / n + shift I: symmetric positive definite (exactly symmetric in storage).
template <class T>
Tensor<T> spd(std::size_t n, std::uint64_t seed, double shift = 1.0) {
  Tensor<T> m(Shape{n, n});
  tenex::fill_random(m, seed);
  const Dense md = dense(m);
  Dense s = product(md, transpose(md));
  for (double& x : s.v) x /= static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) s(i, i) += shift;
  Dense sym(n, n);  // rounded once, then mirrored: symmetric after the cast to T
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j <= i; ++j) sym(i, j) = sym(j, i) = s(i, j);
  }
  return tensor<T>(sym);
}

template <class T>
Tensor<T> random(const Shape& shape, std::uint64_t seed) {
  Tensor<T> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

template <class T>
std::string read_error(const Tensor<T>& t) {
  try {
    t.wait();
  } catch (const tenex::NumericalError& e) {
    return e.what();
  }
  return "<no NumericalError>";
}

}  // namespace

// ----------------------------------------------------------------------------- inverse

TEST_CASE_TEMPLATE_DEFINE("matrix functions: A inverse(A) = I", T, mf_inverse) {
  const std::size_t n = 7;
  auto a = general<T>(n, 11);
  const Dense ad = dense(a);
  Tensor<T> ai;
  ai("i,j") = tenex::inverse(a("i,j"));
  REQUIRE(ai.shape() == Shape{n, n});
  const Dense aid = dense(ai);
  CHECK_CLOSE(product(ad, aid), identity(n), bound<T>(n, norm(ad) * norm(aid)));
  CHECK_CLOSE(product(aid, ad), identity(n), bound<T>(n, norm(ad) * norm(aid)));

  // Inside an expression: a("i,k") * inverse(a("k,j")) is I.
  Tensor<T> id;
  id("i,j") = a("i,k") * tenex::inverse(a("k,j"));
  CHECK_CLOSE(dense(id), identity(n), bound<T>(n, norm(ad) * norm(aid)));

  // Labelled (j,i) it is the inverse of the same storage, read transposed: stored as (i,j)
  // it is (A^-1)^T.
  Tensor<T> ait;
  ait("i,j") = tenex::inverse(a("j,i"));
  CHECK_CLOSE(dense(ait), transpose(aid), bound<T>(n, norm(aid)));

  // pow(a, -1) is the inverse.
  Tensor<T> pm1;
  pm1("i,j") = tenex::pow(a("i,j"), -1);
  CHECK(pm1.to_vector() == ai.to_vector());

  // Sizes 0 and 1.
  Tensor<T> e0(Shape{0, 0}), r0;
  r0("i,j") = tenex::inverse(e0("i,j"));
  CHECK(r0.shape() == Shape{0, 0});
  Tensor<T> s1(Shape{1, 1}, {T(4)}), r1;
  r1("i,j") = tenex::inverse(s1("i,j"));
  CHECK(r1.at(0, 0) == doctest::Approx(0.25));
}
TEST_CASE_TEMPLATE_APPLY(mf_inverse, Scalars);

// ------------------------------------------------------------------------------- solve

TEST_CASE_TEMPLATE_DEFINE("matrix functions: solve gives A x = b for SPD and general A", T, mf_solve) {
  const std::size_t n = 9, k = 4;
  auto b = random<T>(Shape{n}, 21);
  auto bm = random<T>(Shape{n, k}, 22);
  const Dense bd = column(b), bmd = dense(bm);
  for (const bool symmetric : {false, true}) {
    CAPTURE(symmetric);
    auto a = symmetric ? spd<T>(n, 23) : general<T>(n, 24);
    const Dense ad = dense(a);
    // A vector: a(i,j) x(j) = b(i).
    Tensor<T> x;
    x("j") = tenex::solve(a("i,j"), b("i"));
    REQUIRE(x.shape() == Shape{n});
    const Dense xd = column(x);
    CHECK_CLOSE(product(ad, xd), bd, bound<T>(n, norm(ad) * norm(xd)));
    // A matrix: every column k is a right-hand side.
    Tensor<T> xm;
    xm("j,k") = tenex::solve(a("i,j"), bm("i,k"));
    REQUIRE(xm.shape() == Shape{n, k});
    const Dense xmd = dense(xm);
    CHECK_CLOSE(product(ad, xmd), bmd, bound<T>(n, norm(ad) * norm(xmd)));
    // The solved mode last in b: the same solution, transposed.
    Tensor<T> bt, xt;
    bt("k,i") = bm("i,k");
    xt("k,j") = tenex::solve(a("i,j"), bt("k,i"));
    REQUIRE(xt.shape() == Shape{k, n});
    CHECK_CLOSE(dense(xt), transpose(xmd), bound<T>(n, norm(xmd)));
    // In tenex itself: a("i,j") * solve(a("i,j"), b("i")) - b("i") is zero.
    Tensor<T> r;
    r("i") = a("i,j") * tenex::solve(a("i,j"), b("i")) - b("i");
    CHECK_CLOSE(column(r), Dense(n, 1), bound<T>(n, norm(ad) * norm(xd)));
    // b labelled with a's second label: x = inverse(a) b, labelled with a's first.
    Tensor<T> y, yi;
    y("i") = tenex::solve(a("i,j"), b("j"));
    yi("i") = tenex::inverse(a("i,j")) * b("j");
    CHECK_CLOSE(column(y), xd, bound<T>(n, norm(xd)));
    CHECK_CLOSE(column(yi), xd, bound<T>(n, norm(ad) * norm(xd)));
    // b carrying both of a's labels keeps them: X = A^-1 B.
    auto bs = random<T>(Shape{n, n}, 25);
    Tensor<T> xs;
    xs("i,j") = tenex::solve(a("i,j"), bs("i,j"));
    const Dense xsd = dense(xs);
    CHECK_CLOSE(product(ad, xsd), dense(bs), bound<T>(n, norm(ad) * norm(xsd)));
  }
  // A right-hand side of rank 3, solved along its middle mode.
  auto a = general<T>(n, 26);
  auto b3 = random<T>(Shape{2, n, 3}, 27);
  Tensor<T> x3, col;
  x3("p,j,q") = tenex::solve(a("i,j"), b3("p,i,q"));
  REQUIRE(x3.shape() == Shape{2, n, 3});
  for (std::size_t p = 0; p < 2; ++p) {
    for (std::size_t q = 0; q < 3; ++q) {
      Dense rhs(n, 1), sol(n, 1);
      for (std::size_t i = 0; i < n; ++i) {
        rhs(i, 0) = static_cast<double>(b3.at(p, i, q));
        sol(i, 0) = static_cast<double>(x3.at(p, i, q));
      }
      CHECK_CLOSE(product(dense(a), sol), rhs, bound<T>(n, norm(dense(a)) * norm(sol)));
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(mf_solve, Scalars);

// ------------------------------------------------------------------------------ powers

TEST_CASE_TEMPLATE_DEFINE("matrix functions: pow(A, -2) A^2 = I", T, mf_negative_pow) {
  const std::size_t n = 6;
  auto a = general<T>(n, 31);
  const Dense ad = dense(a);
  Tensor<T> pm2, p2;
  const auto expression = tenex::pow(a("i,j"), -2);
  CHECK(expression.power() == -2.0);
  pm2("i,j") = expression;
  p2("i,j") = tenex::pow(a("i,j"), 2);
  const Dense pm2d = dense(pm2), p2d = dense(p2);
  CHECK_CLOSE(product(pm2d, p2d), identity(n), bound<T>(n, norm(pm2d) * norm(p2d)));
  CHECK_CLOSE(product(p2d, pm2d), identity(n), bound<T>(n, norm(pm2d) * norm(p2d)));
  // pow(a, -3) = inverse(a)^3, and a whole double power is the integer one.
  Tensor<T> pm3, ai, ai3, pm3d;
  pm3("i,j") = tenex::pow(a("i,j"), -3);
  ai("i,j") = tenex::inverse(a("i,j"));
  ai3("i,l") = ai("i,j") * ai("j,k") * ai("k,l");
  CHECK_CLOSE(dense(pm3), dense(ai3), bound<T>(n, std::pow(norm(dense(ai)), 3)));
  pm3d("i,j") = tenex::pow(a("i,j"), -3.0);
  CHECK(pm3d.to_vector() == pm3.to_vector());
  // n = 0 is still the identity.
  Tensor<T> p0;
  p0("i,j") = tenex::pow(a("i,j"), 0);
  CHECK(dense(p0).v == identity(n).v);
}
TEST_CASE_TEMPLATE_APPLY(mf_negative_pow, Scalars);

TEST_CASE_TEMPLATE_DEFINE("matrix functions: fractional powers of SPD matrices", T, mf_spd_pow) {
  const std::size_t n = 8;
  auto s = spd<T>(n, 41);
  const Dense sd = dense(s);
  Tensor<T> half, minus_half, one, quarter;
  const auto lowdin = tenex::pow(s("m,n"), -0.5);
  CHECK(lowdin.power() == -0.5);
  minus_half("m,n") = lowdin;
  half("i,j") = tenex::pow(s("i,j"), 0.5);
  one("i,j") = tenex::pow(s("i,j"), 1.0);
  quarter("i,j") = tenex::pow(s("i,j"), 0.25);
  const Dense hd = dense(half), mhd = dense(minus_half), qd = dense(quarter);
  // S^-1/2 S S^-1/2 = I (Löwdin), (S^1/2)^2 = S, S^1 = S, (S^1/4)^4 = S.
  CHECK_CLOSE(product(product(mhd, sd), mhd), identity(n), bound<T>(n, norm(mhd) * norm(mhd) * norm(sd)));
  CHECK_CLOSE(product(hd, hd), sd, bound<T>(n, norm(hd) * norm(hd)));
  CHECK_CLOSE(product(hd, mhd), identity(n), bound<T>(n, norm(hd) * norm(mhd)));
  CHECK_CLOSE(dense(one), sd, bound<T>(n, norm(sd)));
  CHECK_CLOSE(product(product(qd, qd), product(qd, qd)), sd, bound<T>(n, std::pow(norm(qd), 4)));
  // The results are exactly symmetric.
  CHECK(hd.v == transpose(hd).v);
  CHECK(mhd.v == transpose(mhd).v);
  // The same with the implicit-label rule: the operand a product (i,j) = sum_k m(i,k) m(j,k).
  auto m = general<T>(n, 42);
  Tensor<T> gram, root;
  gram("i,j") = m("i,k") * m("j,k");
  root("i,j") = tenex::pow(m("i,k") * m("j,k"), 0.5);
  const Dense rd = dense(root);
  CHECK_CLOSE(product(rd, rd), dense(gram), bound<T>(n, norm(rd) * norm(rd)));
}
TEST_CASE_TEMPLATE_APPLY(mf_spd_pow, Scalars);

TEST_CASE_TEMPLATE_DEFINE("matrix functions: semidefinite matrices: p > 0 clamps, p < 0 throws", T, mf_psd) {
  // u u^T + v v^T in 4 dimensions: rank 2, eigenvalues 0 (twice, up to rounding) and two > 0.
  const std::size_t n = 4;
  const std::vector<double> u = {1, 2, 0, -1}, v = {0, 1, 1, 1};
  Dense sd(n, n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) sd(i, j) = u[i] * u[j] + v[i] * v[j];
  }
  auto s = tensor<T>(sd);
  Tensor<T> half, minus_half;
  half("i,j") = tenex::pow(s("i,j"), 0.5);
  const Dense hd = dense(half);
  CHECK_CLOSE(product(hd, hd), sd, 1e3 * eps<T>() * norm(sd));
  minus_half("i,j") = tenex::pow(s("i,j"), -0.5);
  const std::string what = read_error(minus_half);
  INFO(what);
  CHECK(what.find("tenex: pow: ") == 0);
  CHECK(what.find("singular") != std::string::npos);
  CHECK(what.find("{4, 4}") != std::string::npos);
  CHECK_THROWS_AS(minus_half.at(0, 0), tenex::NumericalError);

  // Indefinite: no real square root.
  auto indefinite = Tensor<T>(Shape{2, 2}, {T(1), T(2), T(2), T(1)});
  Tensor<T> root;
  root("i,j") = tenex::pow(indefinite("i,j"), 0.5);
  CHECK_THROWS_WITH_AS(root.wait(), doctest::Contains("not positive semidefinite"), tenex::NumericalError);
}
TEST_CASE_TEMPLATE_APPLY(mf_psd, Scalars);

// ------------------------------------------------------------------------ member forms

TEST_CASE_TEMPLATE_DEFINE("matrix functions: the member forms equal the free functions", T, mf_members) {
  const std::size_t n = 5;
  // The same computation twice: equal up to the last bits, which LAPACK's may change when a busy
  // machine puts a set on one thread (docs/performance.md, "Shared machines").
  const double tol = std::is_same_v<tenex::real_type_t<T>, float> ? 1e-5 : 1e-12;
  auto same = [&](const auto& x, const auto& y) { return tenex::allclose(x, y, tol, tol); };
  auto a = spd<T>(n, 51);
  auto b = spd<T>(n, 52);
  Tensor<T> v1, w1, v2, w2, g1, e1, g2, e2, l1, l2, lt1, lt2;
  std::make_pair(v1("i,j"), w1("j")) = a("i,j").eigen_solve();
  std::make_pair(v2("i,j"), w2("j")) = tenex::eigen_solve(a("i,j"));
  CHECK(same(v1, v2));
  CHECK(same(w1, w2));
  std::make_pair(g1("i,j"), e1("j")) = a("i,j").eigen_solve(b("i,j"));
  std::make_pair(g2("i,j"), e2("j")) = tenex::eigen_solve(a("i,j"), b("i,j"));
  CHECK(same(g1, g2));
  CHECK(same(e1, e2));
  l1("i,j") = a("i,j").cholesky();
  l2("i,j") = tenex::cholesky(a("i,j"));
  CHECK(same(l1, l2));
  lt1("j,i") = a("i,j").cholesky();  // stored transposed, as the free function does
  lt2("j,i") = tenex::cholesky(a("i,j"));
  CHECK(same(lt1, lt2));
  // A member form is an ordinary expression: an operand, shared by its factors.
  Tensor<T> x;
  x("i") = a("i,j").cholesky() * w1("j");
  Tensor<T> xr;
  xr("i") = l2("i,j") * w2("j");
  CHECK(same(x, xr));
  auto [vectors, values] = a("i,j").eigen_solve();
  Tensor<T> v3, w3;
  v3("i,j") = vectors;
  w3("j") = values;
  CHECK(same(v3, v2));
  CHECK(same(w3, w2));
}
TEST_CASE_TEMPLATE_APPLY(mf_members, Scalars);

// ------------------------------------------------------------------------------ errors

TEST_CASE_TEMPLATE_DEFINE("matrix functions: a singular matrix is a NumericalError on every read", T, mf_singular) {
  // Rows 0 and 2 equal: exactly singular (a zero pivot).
  Tensor<T> a(Shape{3, 3}, {T(1), T(2), T(3), T(4), T(5), T(6), T(1), T(2), T(3)});
  Tensor<T> b(Shape{3}, {T(1), T(1), T(1)});
  Tensor<T> ai;
  CHECK_NOTHROW(ai("i,j") = tenex::inverse(a("i,j")));  // stored, not thrown from the destructor
  CHECK(ai.shape() == Shape{3, 3});
  for (int read = 0; read < 3; ++read) CHECK_THROWS_AS(ai.wait(), tenex::NumericalError);
  CHECK_THROWS_AS(ai.to_vector(), tenex::NumericalError);
  CHECK_THROWS_AS(ai.at(0, 0), tenex::NumericalError);
  CHECK_THROWS_AS(static_cast<void>(Tensor<T>(ai)), tenex::NumericalError);
  const std::string what = read_error(ai);
  INFO(what);
  CHECK(what.find("tenex: inverse: ") == 0);
  CHECK(what.find("(\"i,j\") {3, 3}") != std::string::npos);
  CHECK(what.find("singular") != std::string::npos);

  Tensor<T> x;
  CHECK_NOTHROW(x("j") = tenex::solve(a("i,j"), b("i")));
  CHECK_THROWS_AS(x.wait(), tenex::NumericalError);
  CHECK_THROWS_AS(x.wait(), tenex::NumericalError);
  const std::string solve_what = read_error(x);
  INFO(solve_what);
  CHECK(solve_what.find("tenex: solve: ") == 0);
  CHECK(solve_what.find("{3, 3}") != std::string::npos);

  Tensor<T> pm;
  pm("i,j") = tenex::pow(a("i,j"), -2);
  CHECK_THROWS_WITH_AS(pm.wait(), doctest::Contains("singular"), tenex::NumericalError);

  // Singular to working precision: a rank-one outer product, whose LU has tiny pivots.
  auto u = random<T>(Shape{6}, 61), v = random<T>(Shape{6}, 62);
  Tensor<T> outer, oi, os;
  outer("i,j") = u("i") * v("j");
  oi("i,j") = tenex::inverse(outer("i,j"));
  CHECK_THROWS_WITH_AS(oi.wait(), doctest::Contains("singular"), tenex::NumericalError);
  // Symmetric positive semidefinite and singular: the Cholesky path fails, LU reports it.
  Tensor<T> uu, ones(Shape{6});
  tenex::fill_random(ones, 63);
  uu("i,j") = u("i") * u("j");
  os("j") = tenex::solve(uu("i,j"), ones("i"));
  CHECK_THROWS_WITH_AS(os.wait(), doctest::Contains("singular"), tenex::NumericalError);

  // The target can be given a new value afterwards.
  ai("i,j") = tenex::inverse(general<T>(3, 64)("i,j"));
  CHECK_NOTHROW(ai.wait());
}
TEST_CASE_TEMPLATE_APPLY(mf_singular, Scalars);

TEST_CASE_TEMPLATE_DEFINE("matrix functions: a non-symmetric input to a symmetric-only function", T, mf_symmetry) {
  auto a = general<T>(4, 71);  // not symmetric
  Tensor<T> p;
  CHECK_NOTHROW(p("i,j") = tenex::pow(a("i,j"), 0.5));
  const std::string what = read_error(p);
  INFO(what);
  CHECK(what.find("tenex: pow: ") == 0);
  CHECK(what.find("not symmetric") != std::string::npos);
  CHECK(what.find("max |a(i,j) - a(j,i)|") != std::string::npos);
  CHECK(what.find("{4, 4}") != std::string::npos);
  CHECK_THROWS_AS(p.wait(), tenex::NumericalError);  // again

  Tensor<T> v, w;
  std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j"));
  CHECK_THROWS_WITH_AS(w.wait(), doctest::Contains("not symmetric"), tenex::NumericalError);
  CHECK_THROWS_WITH_AS(v.wait(), doctest::Contains("eigen_solve"), tenex::NumericalError);
  std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(spd<T>(4, 72)("i,j"), a("i,j"));
  CHECK_THROWS_WITH_AS(w.wait(), doctest::Contains("not symmetric"), tenex::NumericalError);

  // Within the tolerance: the rounding of a product assembled in T is accepted.
  auto m = general<T>(4, 73);
  Tensor<T> gram, root;
  gram("i,j") = m("i,k") * m("j,k");
  root("i,j") = tenex::pow(gram("i,j"), 0.5);
  CHECK_NOTHROW(root.wait());
  // A non-symmetric matrix through a solve is fine: LU.
  Tensor<T> x;
  x("j") = tenex::solve(a("i,j"), random<T>(Shape{4}, 74)("i"));
  CHECK_NOTHROW(x.wait());
}
TEST_CASE_TEMPLATE_APPLY(mf_symmetry, Scalars);

TEST_CASE_TEMPLATE_DEFINE("matrix functions: shape errors at the statement", T, mf_shape_errors) {
  auto rect = random<T>(Shape{2, 3}, 81);
  auto sq = random<T>(Shape{3, 3}, 82);
  auto v4 = random<T>(Shape{4}, 83);
  auto cube = random<T>(Shape{2, 2, 2}, 84);
  Tensor<T> target(Shape{2}, {T(7), T(8)});
  const auto untouched = [&] { CHECK(target.to_vector() == std::vector<T>{T(7), T(8)}); };
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::inverse(rect("i,j")),
                       "tenex: inverse: the operand (\"i,j\") {2, 3} is not square; a square matrix is needed",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i,j,k") = tenex::inverse(cube("i,j,k")),
                       "tenex: inverse: the operand (\"i,j,k\") {2, 2, 2} has rank 3; a matrix (rank 2) is needed",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::pow(rect("i,j"), -1),
                       "tenex: pow: the operand (\"i,j\") {2, 3} is not square; a square matrix is needed",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::pow(rect("i,j"), 0.5),
                       "tenex: pow: the operand (\"i,j\") {2, 3} is not square; a square matrix is needed",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("j") = tenex::solve(rect("i,j"), v4("i")),
                       "tenex: solve: the operand (\"i,j\") {2, 3} is not square; a square matrix is needed",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("j") = tenex::solve(sq("i,j"), v4("i")),
                       "tenex: solve: label \"i\" has extent 3 in (\"i,j\") {3, 3} but extent 4 in (\"i\") {4}",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("k") = tenex::solve(sq("i,j"), v4("k")), doctest::Contains("shares no label with a"),
                       tenex::ShapeError);
  // x is labelled with a's other label: assigning it to b's label is an error.
  auto v3 = random<T>(Shape{3}, 85);
  CHECK_THROWS_WITH_AS(target("i") = tenex::solve(sq("i,j"), v3("i")), doctest::Contains("is not produced"),
                       tenex::ShapeError);
  CHECK_THROWS_AS(static_cast<void>(tenex::inverse(rect("i,j"))), tenex::ShapeError);
  CHECK_THROWS_AS(static_cast<void>(rect("i,j").cholesky()), tenex::ShapeError);
  CHECK_THROWS_AS(static_cast<void>(rect("i,j").eigen_solve()), tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::pow(sq("i,j"), std::nan("")), doctest::Contains("not finite"),
                       tenex::Error);
  untouched();
}
TEST_CASE_TEMPLATE_APPLY(mf_shape_errors, Scalars);

// ------------------------------------------------------------------- inside expressions

TEST_CASE_TEMPLATE_DEFINE("matrix functions: inside bigger expressions and linked sets", T, mf_composition) {
  const std::size_t n = 6;
  auto s = spd<T>(n, 91);
  auto f = spd<T>(n, 92, 0.0);
  Tensor<T> sm, x;
  sm("i,j") = tenex::pow(s("i,j"), -0.5);
  // Löwdin-orthogonalised F: S^-1/2 F S^-1/2 in one statement.
  x("i,j") = tenex::pow(s("i,k"), -0.5) * f("k,l") * tenex::pow(s("l,j"), -0.5);
  const Dense smd = dense(sm), fd = dense(f);
  const Dense expected = product(product(smd, fd), smd);
  CHECK_CLOSE(dense(x), expected, bound<T>(n, norm(smd) * norm(smd) * norm(fd)));
  // Sums and scales around them.
  Tensor<T> y;
  y("i,j") = 2.0 * tenex::inverse(s("i,j")) - tenex::pow(s("i,j"), -1);
  Tensor<T> si;
  si("i,j") = tenex::inverse(s("i,j"));
  CHECK_CLOSE(dense(y), dense(si), bound<T>(n, norm(dense(si))));

  // One linked set: a handle keeps the set open; the statements chain through pending
  // results, and the set is evaluated once, with the inverse square root computed once.
  Tensor<T> c, d, z;
  const auto graphs = tenex_test::dumped_graphs([&] {
    auto root = tenex::pow(s("i,j"), -0.5);
    c("i,j") = root;
    d("i,l") = c("i,k") * f("k,l");               // reads the pending c
    z("j,l") = tenex::solve(s("i,j"), d("i,l"));  // a chained operand of a matrix function
  });
  REQUIRE(graphs.size() == 1);
  std::size_t count = 0;
  for (std::size_t at = graphs[0].find("spd_pow"); at != std::string::npos; at = graphs[0].find("spd_pow", at + 1)) {
    ++count;
  }
  CHECK(count == 1);
  CHECK(graphs[0].find("solve") != std::string::npos);
  const Dense cd = dense(c), dd = dense(d), zd = dense(z);
  CHECK_CLOSE(cd, smd, bound<T>(n, norm(smd)));
  CHECK_CLOSE(dd, product(smd, fd), bound<T>(n, norm(smd) * norm(fd)));
  CHECK_CLOSE(product(dense(s), zd), dd, bound<T>(n, norm(dense(s)) * norm(zd)));
}
TEST_CASE_TEMPLATE_APPLY(mf_composition, Scalars);

TEST_CASE("matrix functions: shape expressions") {
  Shape a{4, 4}, b{4, 3}, v{4}, out, vec, pw, inv;
  out("j,k") = tenex::solve(a("i,j"), b("i,k"));
  CHECK(out == Shape{4, 3});
  vec("i") = tenex::solve(a("i,j"), v("j"));
  CHECK(vec == Shape{4});
  pw("i,j") = tenex::pow(a("i,j"), -0.5);
  CHECK(pw == Shape{4, 4});
  inv("j,i") = tenex::inverse(a("i,j")) * 2.0;
  CHECK(inv == Shape{4, 4});
  Shape l, w, ev;
  l("i,j") = a("i,j").cholesky();
  CHECK(l == Shape{4, 4});
  std::make_pair(ev("i,j"), w("j")) = a("i,j").eigen_solve();
  CHECK(w == Shape{4});
  Shape rect{2, 3}, bad;
  CHECK_THROWS_AS(bad("i,j") = tenex::inverse(rect("i,j")), tenex::ShapeError);
  CHECK_THROWS_AS(bad("j") = tenex::solve(a("i,j"), rect("i,k")), tenex::ShapeError);
}

TEST_CASE("matrix functions: pow takes whole powers, negative ones of the inverse, fractional ones of SPD matrices") {
  Tensor<double> a(Shape{2, 2}, {2, 0, 0, 3}), p;
  CHECK_THROWS_WITH_AS(p("i,j") = tenex::pow(a("i,j"), std::numeric_limits<double>::infinity()),
                       doctest::Contains("not finite"), tenex::Error);
  CHECK_FALSE(p.has_value());
  p("i,j") = tenex::pow(a("i,j"), -1);
  CHECK(p.at(0, 0) == doctest::Approx(0.5));
  CHECK(p.at(1, 1) == doctest::Approx(1.0 / 3.0));
  p("i,j") = tenex::pow(a("i,j"), 0.5);
  CHECK(p.at(1, 1) == doctest::Approx(std::sqrt(3.0)));
  CHECK(p.at(0, 1) == doctest::Approx(0.0));
  p("i,j") = tenex::pow(a("i,j"), 2.0);
  CHECK(p.at(1, 1) == 9.0);
  p("i,j") = tenex::pow(a("i,j"), 3u);
  CHECK(p.at(0, 0) == 8.0);
}
