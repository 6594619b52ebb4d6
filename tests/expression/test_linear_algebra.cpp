// The algebra Einstein notation cannot write, used through expressions: cholesky,
// eigen_solve (standard and generalized), qr, svd, slice, chip and pow.
//
// Every numerical check is a defining identity (L L^T = A, A V = V diag(w), Q^T Q = I, ...)
// evaluated with plain loops over Tensor::at() in double, never a stored number. Residuals
// are bounded by c * n * eps(T) * ||A||: float is checked with float's epsilon, double
// with double's. Errors at the statement and at evaluation are pinned here too, as is
// what the operation graph shows of these nodes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

#include <tenex/tenex.hpp>

#include "support/dense.hpp"

#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

using tenex_test::Scalars;

// ---- a plain dense matrix in double: the oracle side of every identity -----------------

using tenex_test::Dense;
using tenex_test::dense;
using tenex_test::dense_vector;
using tenex_test::identity;
using tenex_test::product;
using tenex_test::tensor;
using tenex_test::transpose;

// a * diag(s): scales column j by s[j].
Dense scale_columns(Dense a, const std::vector<double>& s) {
  REQUIRE(a.cols == s.size());
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) a(i, j) *= s[j];
  }
  return a;
}

// ||a - b||_F
double distance(const Dense& a, const Dense& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  double sum = 0;
  for (std::size_t i = 0; i < a.v.size(); ++i) sum += (a.v[i] - b.v[i]) * (a.v[i] - b.v[i]);
  return std::sqrt(sum);
}

double norm(const Dense& a) { return distance(a, Dense(a.rows, a.cols)); }

// The block [r0, r1) x [c0, c1) of a.
Dense block(const Dense& a, std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
  Dense b(r1 - r0, c1 - c0);
  for (std::size_t i = r0; i < r1; ++i) {
    for (std::size_t j = c0; j < c1; ++j) b(i - r0, j - c0) = a(i, j);
  }
  return b;
}

// ---- inputs ------------------------------------------------------------------------------

template <class T>
Tensor<T> random_matrix(std::size_t m, std::size_t n, std::uint64_t seed) {
  Tensor<T> t(Shape{m, n});
  tenex::fill_random(t, seed);
  return t;
}

// (M + M^T) / 2 for a random M: symmetric, indefinite.
template <class T>
Tensor<T> random_symmetric(std::size_t n, std::uint64_t seed) {
  const Dense m = dense(random_matrix<T>(n, n, seed));
  Dense s(n, n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) s(i, j) = 0.5 * (m(i, j) + m(j, i));
  }
  return tensor<T>(s);
}

// M M^T + shift I: symmetric positive definite, condition number modest for shift ~ n.
template <class T>
Tensor<T> random_spd(std::size_t n, std::uint64_t seed, double shift) {
  const Dense m = dense(random_matrix<T>(n, n, seed));
  Dense s = product(m, transpose(m));
  for (std::size_t i = 0; i < n; ++i) s(i, i) += shift;
  return tensor<T>(s);
}

// The Hilbert matrix 1 / (i + j + 1): SPD and badly conditioned (about 1.5e7 for n = 6).
template <class T>
Tensor<T> hilbert(std::size_t n) {
  Dense h(n, n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) h(i, j) = 1.0 / static_cast<double>(i + j + 1);
  }
  return tensor<T>(h);
}

// ---- tolerances ---------------------------------------------------------------------------

template <class T>
constexpr double eps() {
  return std::numeric_limits<T>::epsilon();
}

// c * n * eps(T) * scale: the size of a backward-stable residual.
template <class T>
double tolerance(std::size_t n, double scale = 1.0) {
  return 30.0 * static_cast<double>(std::max<std::size_t>(n, 1)) * eps<T>() * std::max(scale, 1e-300);
}

// ---- the checks of each decomposition -----------------------------------------------------

template <class T>
void check_lower(const Tensor<T>& l) {
  for (std::size_t i = 0; i < l.shape().extent(0); ++i) {
    for (std::size_t j = i + 1; j < l.shape().extent(1); ++j) {
      INFO("L(", i, ", ", j, ") above the diagonal");
      CHECK(l.at(i, j) == T(0));
    }
  }
}

template <class T>
void check_upper(const Tensor<T>& r) {
  for (std::size_t i = 0; i < r.shape().extent(0); ++i) {
    for (std::size_t j = 0; j < std::min(i, r.shape().extent(1)); ++j) {
      INFO("R(", i, ", ", j, ") below the diagonal");
      CHECK(r.at(i, j) == T(0));
    }
  }
}

// L lower with a positive diagonal and L L^T = A.
template <class T>
void check_cholesky(const Tensor<T>& a, const Tensor<T>& l) {
  const std::size_t n = a.shape().extent(0);
  REQUIRE(l.shape() == a.shape());
  check_lower(l);
  for (std::size_t i = 0; i < n; ++i) CHECK(l.at(i, i) > T(0));
  const Dense ld = dense(l), ad = dense(a);
  CHECK(distance(product(ld, transpose(ld)), ad) <= tolerance<T>(n, norm(ad)));
}

template <class T>
void check_ascending(const std::vector<double>& w) {
  for (std::size_t j = 1; j < w.size(); ++j) {
    INFO("eigenvalues ", j - 1, " and ", j);
    CHECK(w[j - 1] <= w[j]);
  }
}

// A V = V diag(w), V^T V = I, w ascending.
template <class T>
void check_eigen(const Tensor<T>& a, const Tensor<T>& v, const Tensor<T>& w) {
  const std::size_t n = a.shape().extent(0);
  REQUIRE(v.shape() == Shape{n, n});
  REQUIRE(w.shape() == Shape{n});
  const Dense ad = dense(a), vd = dense(v);
  const std::vector<double> wd = dense_vector(w);
  CHECK(distance(product(ad, vd), scale_columns(vd, wd)) <= tolerance<T>(n, norm(ad)));
  CHECK(distance(product(transpose(vd), vd), identity(n)) <= tolerance<T>(n));
  check_ascending<T>(wd);
}

// A V = B V diag(w), V^T B V = I, w ascending.
template <class T>
void check_generalized_eigen(const Tensor<T>& a, const Tensor<T>& b, const Tensor<T>& v, const Tensor<T>& w) {
  const std::size_t n = a.shape().extent(0);
  REQUIRE(v.shape() == Shape{n, n});
  REQUIRE(w.shape() == Shape{n});
  const Dense ad = dense(a), bd = dense(b), vd = dense(v);
  const std::vector<double> wd = dense_vector(w);
  double wmax = 0;
  for (double x : wd) wmax = std::max(wmax, std::abs(x));
  const double scale = (norm(ad) + norm(bd) * wmax) * std::max(1.0, norm(vd));
  CHECK(distance(product(ad, vd), scale_columns(product(bd, vd), wd)) <= tolerance<T>(n, scale));
  CHECK(distance(product(transpose(vd), product(bd, vd)), identity(n)) <=
        tolerance<T>(n, norm(bd) * norm(vd) * norm(vd) / n + 1.0));
  check_ascending<T>(wd);
}

// Q (m x k) R (k x n) = A, Q^T Q = I, R upper, k = min(m, n).
template <class T>
void check_qr(const Tensor<T>& a, const Tensor<T>& q, const Tensor<T>& r) {
  const std::size_t m = a.shape().extent(0), n = a.shape().extent(1), k = std::min(m, n);
  REQUIRE(q.shape() == Shape{m, k});
  REQUIRE(r.shape() == Shape{k, n});
  check_upper(r);
  const Dense ad = dense(a), qd = dense(q), rd = dense(r);
  CHECK(distance(product(qd, rd), ad) <= tolerance<T>(std::max(m, n), norm(ad)));
  CHECK(distance(product(transpose(qd), qd), identity(k)) <= tolerance<T>(std::max(m, n)));
}

// U diag(S) Vt = A, U^T U = I, Vt Vt^T = I, S descending and non-negative.
template <class T>
void check_svd(const Tensor<T>& a, const Tensor<T>& u, const Tensor<T>& s, const Tensor<T>& vt) {
  const std::size_t m = a.shape().extent(0), n = a.shape().extent(1), k = std::min(m, n);
  REQUIRE(u.shape() == Shape{m, k});
  REQUIRE(s.shape() == Shape{k});
  REQUIRE(vt.shape() == Shape{k, n});
  const Dense ad = dense(a), ud = dense(u), vtd = dense(vt);
  const std::vector<double> sd = dense_vector(s);
  const std::size_t big = std::max(m, n);
  CHECK(distance(product(scale_columns(ud, sd), vtd), ad) <= tolerance<T>(big, norm(ad)));
  CHECK(distance(product(transpose(ud), ud), identity(k)) <= tolerance<T>(big));
  CHECK(distance(product(vtd, transpose(vtd)), identity(k)) <= tolerance<T>(big));
  for (std::size_t j = 0; j < k; ++j) {
    INFO("singular value ", j);
    CHECK(sd[j] >= 0.0);
    if (j > 0) CHECK(sd[j - 1] >= sd[j]);
  }
}

// ---- graphs ------------------------------------------------------------------------------

std::size_t occurrences(const std::string& text, const std::string& word) {
  std::size_t count = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + word.size())) ++count;
  return count;
}

// The DOT lines (one per node or edge) that contain `word`.
std::vector<std::string> lines_with(const std::string& dot, const std::string& word) {
  std::vector<std::string> out;
  std::istringstream in(dot);
  for (std::string line; std::getline(in, line);) {
    if (line.find(word) != std::string::npos) out.push_back(line);
  }
  return out;
}

bool some_line_has(const std::vector<std::string>& lines, const std::string& word) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(word) != std::string::npos; });
}

// Runs `statements` with TENEX_DUMP_GRAPH set to a fresh directory and returns the text of
// every graph written, in order.
template <class F>
std::vector<std::string> dumped_graphs(F&& statements) {
  std::string pattern = (std::filesystem::temp_directory_path() / "tenex-la-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  const std::filesystem::path dir = pattern;
  REQUIRE(setenv("TENEX_DUMP_GRAPH", dir.c_str(), 1) == 0);
  try {
    statements();
  } catch (...) {
    unsetenv("TENEX_DUMP_GRAPH");
    std::filesystem::remove_all(dir);
    throw;
  }
  unsetenv("TENEX_DUMP_GRAPH");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    out.push_back(text.str());
  }
  std::filesystem::remove_all(dir);
  return out;
}

}  // namespace

// =========================================================================================
// cholesky
// =========================================================================================

TEST_CASE_TEMPLATE_DEFINE("linear algebra: cholesky of a random SPD matrix", T, la_cholesky) {
  for (std::size_t n : {2u, 7u, 16u}) {
    CAPTURE(n);
    const Tensor<T> a = random_spd<T>(n, 100 + n, static_cast<double>(n));
    Tensor<T> a_copy = a;
    Tensor<T> l;
    l("i,j") = tenex::cholesky(a_copy("i,j"));
    CHECK(l.shape() == Shape{n, n});
    check_cholesky(a, l);
    // The operand is not modified by the in-place LAPACK routine.
    CHECK(a_copy.to_vector() == a.to_vector());

    // Assigned to (j,i), the target holds the transpose: upper, with Lt^T Lt = A.
    Tensor<T> lt;
    lt("j,i") = tenex::cholesky(a_copy("i,j"));
    REQUIRE(lt.shape() == Shape{n, n});
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) CHECK(lt.at(j, i) == l.at(i, j));
    }
    check_upper(lt);
    const Dense ltd = dense(lt);
    CHECK(distance(product(transpose(ltd), ltd), dense(a)) <= tolerance<T>(n, norm(dense(a))));
  }
}
TEST_CASE_TEMPLATE_APPLY(la_cholesky, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: cholesky composes with products in one statement", T,
                          la_cholesky_composition) {
  const std::size_t n = 6;
  const Tensor<T> a = random_spd<T>(n, 7, 6.0);
  Tensor<T> a_in = a;
  Tensor<T> b({n});
  tenex::fill_random(b, 8);

  // x = L b in one statement.
  Tensor<T> x, l;
  x("i") = tenex::cholesky(a_in("i,j")) * b("j");
  l("i,j") = tenex::cholesky(a_in("i,j"));
  REQUIRE(x.shape() == Shape{n});
  const Dense ld = dense(l);
  const std::vector<double> bd = dense_vector(b);
  for (std::size_t i = 0; i < n; ++i) {
    double expected = 0, magnitude = 0;
    for (std::size_t j = 0; j < n; ++j) {
      expected += ld(i, j) * bd[j];
      magnitude += std::abs(ld(i, j) * bd[j]);
    }
    CHECK(std::abs(x.at(i) - expected) <= tolerance<T>(n, magnitude));
  }

  // L L^T = A as one expression: the second factor is labelled (k,j).
  Tensor<T> p;
  p("i,k") = tenex::cholesky(a_in("i,j")) * tenex::cholesky(a_in("k,j"));
  CHECK(distance(dense(p), dense(a)) <= tolerance<T>(n, norm(dense(a))));

  // The same through a named handle used twice in one set, and a residual written in tenex.
  Tensor<T> residual, y;
  {
    auto lij = tenex::cholesky(a_in("i,j"));
    residual("i,k") = lij * tenex::cholesky(a_in("k,j")) - a_in("i,k");
    y("i") = 2.0 * lij * b("j");
  }
  CHECK(norm(dense(residual)) <= tolerance<T>(n, norm(dense(a))));
  for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(y.at(i) - 2.0 * x.at(i)) <= tolerance<T>(n, norm(ld) * 4));

  // Scaled input: cholesky(4 A) = 2 L.
  Tensor<T> l4;
  l4("i,j") = tenex::cholesky(4.0 * a_in("i,j"));
  check_lower(l4);
  CHECK(distance(dense(l4), scale_columns(ld, std::vector<double>(n, 2.0))) <= tolerance<T>(n, norm(ld) * 2));
}
TEST_CASE_TEMPLATE_APPLY(la_cholesky_composition, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: cholesky of permuted, sliced, chipped and summed operands", T,
                          la_cholesky_noncontiguous) {
  const std::size_t n = 5;
  const Tensor<T> a = random_spd<T>(n, 21, 5.0);
  Tensor<T> a_in = a;

  // Labels are names: the factor of an operand labelled (j,i) is labelled (j,i), so a
  // target written ("j,i") holds L itself and one written ("i,j") its transpose.
  Tensor<T> l1, l1t, l2, l3;
  l1("j,i") = tenex::cholesky(tenex::permute(a_in("i,j"), "j,i"));
  check_cholesky(a, l1);  // A^T = A
  l1t("i,j") = tenex::cholesky(tenex::permute(a_in("i,j"), "j,i"));
  check_upper(l1t);
  l2("j,i") = tenex::cholesky(a_in("j,i"));
  check_cholesky(a, l2);
  l3("i,j") = tenex::cholesky(a_in("j,i"));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) CHECK(l3.at(i, j) == l2.at(j, i));
  }

  // A trailing principal block of an SPD matrix is SPD: cholesky of a slice.
  Tensor<T> ls;
  ls("i,j") = tenex::cholesky(tenex::slice(a_in("i,j"), {1, 1}, {5, 5}));
  check_cholesky(tensor<T>(block(dense(a), 1, 5, 1, 5)), ls);

  // A sum: M + M^T + 2n I, with M not symmetric, assembled inside the decomposition's operand.
  const Tensor<T> m = random_matrix<T>(n, n, 22);
  Tensor<T> m_in = m;
  Tensor<T> shift(Shape{n, n});
  for (std::size_t i = 0; i < n; ++i) shift.at(i, i) = static_cast<T>(2 * n);
  Tensor<T> ladd;
  ladd("i,j") = tenex::cholesky(m_in("i,j") + m_in("j,i") + shift("i,j"));
  Dense expected = dense(m);
  const Dense md = dense(m);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) expected(i, j) = md(i, j) + md(j, i) + (i == j ? 2.0 * n : 0.0);
  }
  check_cholesky(tensor<T>(expected), ladd);

  // A chip of a rank-3 stack of SPD matrices: t(p, i, j), p = 1 (strided in memory as (i,j,p)).
  Tensor<T> stack(Shape{n, n, 3});
  const Tensor<T> a2 = random_spd<T>(n, 23, 5.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      stack.at(i, j, 0) = a.at(i, j);
      stack.at(i, j, 1) = a2.at(i, j);
      stack.at(i, j, 2) = T(-1);
    }
  }
  Tensor<T> lc;
  lc("i,j") = tenex::cholesky(tenex::chip(stack("i,j,p"), "p", 1));
  check_cholesky(a2, lc);
}
TEST_CASE_TEMPLATE_APPLY(la_cholesky_noncontiguous, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: cholesky of the Hilbert matrix (ill-conditioned)", T, la_cholesky_hilbert) {
  // Hilbert n = 6 has condition ~1.5e7: beyond float's 1/eps, so float takes n = 4 (~1.6e4).
  const std::size_t n = std::is_same_v<T, double> ? 6 : 4;
  const Tensor<T> h = hilbert<T>(n);
  Tensor<T> h_in = h;
  Tensor<T> l;
  l("i,j") = tenex::cholesky(h_in("i,j"));
  check_cholesky(h, l);
}
TEST_CASE_TEMPLATE_APPLY(la_cholesky_hilbert, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: cholesky of sizes 0 and 1", T, la_cholesky_small) {
  Tensor<T> empty(Shape{0, 0}), l0;
  l0("i,j") = tenex::cholesky(empty("i,j"));
  CHECK(l0.shape() == Shape{0, 0});
  CHECK(l0.to_vector().empty());

  Tensor<T> one(Shape{1, 1}, {T(6.25)}), l1, lt1;
  l1("i,j") = tenex::cholesky(one("i,j"));
  REQUIRE(l1.shape() == Shape{1, 1});
  CHECK(l1.at(0, 0) > T(0));
  CHECK(std::abs(double(l1.at(0, 0)) * l1.at(0, 0) - 6.25) <= tolerance<T>(1, 6.25));
  lt1("j,i") = tenex::cholesky(one("i,j"));
  CHECK(lt1.at(0, 0) == l1.at(0, 0));
}
TEST_CASE_TEMPLATE_APPLY(la_cholesky_small, Scalars);

// =========================================================================================
// eigen_solve
// =========================================================================================

TEST_CASE_TEMPLATE_DEFINE("linear algebra: eigen_solve assigned through make_pair, tie and structured bindings", T,
                          la_eigen_forms) {
  const std::size_t n = 8;
  const Tensor<T> a = random_symmetric<T>(n, 31);
  Tensor<T> a_in = a;

  SUBCASE("std::make_pair") {
    Tensor<T> v, w;
    std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a_in("i,j"));
    check_eigen(a, v, w);
  }
  SUBCASE("tenex::tie") {
    Tensor<T> v, w;
    tenex::tie(v("i,j"), w("j")) = tenex::eigen_solve(a_in("i,j"));
    check_eigen(a, v, w);
  }
  SUBCASE("structured bindings, read after the scope") {
    Tensor<T> v, w;
    {
      auto [vec, val] = tenex::eigen_solve(a_in("i,j"));
      v("i,j") = vec;
      w("j") = val;
      CHECK(v.pending());
      CHECK(w.pending());
    }
    CHECK_FALSE(v.pending());
    CHECK_FALSE(w.pending());
    check_eigen(a, v, w);
  }
  SUBCASE("structured bindings, read inside the scope") {
    Tensor<T> v, w;
    {
      auto [vec, val] = tenex::eigen_solve(a_in("i,j"));
      v("i,j") = vec;
      CHECK(v.shape() == Shape{n, n});
      // Reading evaluates what is recorded so far; the values recorded later still come.
      const Dense early = dense(v);
      CHECK(distance(product(transpose(early), early), identity(n)) <= tolerance<T>(n));
      w("j") = val;
    }
    check_eigen(a, v, w);
  }
  SUBCASE("a target with the labels in the other order stores V^T") {
    Tensor<T> vt, w;
    std::make_pair(vt("j,i"), w("j")) = tenex::eigen_solve(a_in("i,j"));
    REQUIRE(vt.shape() == Shape{n, n});
    const Dense vd = transpose(dense(vt));
    check_eigen(a, tensor<T>(vd), w);
  }
}
TEST_CASE_TEMPLATE_APPLY(la_eigen_forms, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: one factor of eigen_solve alone", T, la_eigen_one_factor) {
  const std::size_t n = 7;
  const Tensor<T> a = random_symmetric<T>(n, 41);
  Tensor<T> a_in = a;
  const Dense ad = dense(a);

  // The eigenvalues alone: ascending, sum = trace, sum of squares = ||A||_F^2.
  Tensor<T> w;
  w("j") = tenex::eigen_solve(a_in("i,j")).second;
  REQUIRE(w.shape() == Shape{n});
  const std::vector<double> wd = dense_vector(w);
  check_ascending<T>(wd);
  double trace = 0, sum = 0, squares = 0;
  for (std::size_t i = 0; i < n; ++i) {
    trace += ad(i, i);
    sum += wd[i];
    squares += wd[i] * wd[i];
  }
  CHECK(std::abs(sum - trace) <= tolerance<T>(n, norm(ad)));
  CHECK(std::abs(squares - norm(ad) * norm(ad)) <= tolerance<T>(n, norm(ad) * norm(ad)));

  // The eigenvectors alone: orthonormal, and V^T A V = diag(w) with the values above.
  Tensor<T> v;
  v("i,j") = tenex::eigen_solve(a_in("i,j")).first;
  REQUIRE(v.shape() == Shape{n, n});
  const Dense vd = dense(v);
  CHECK(distance(product(transpose(vd), vd), identity(n)) <= tolerance<T>(n));
  const Dense d = product(transpose(vd), product(ad, vd));
  Dense expected(n, n);
  for (std::size_t i = 0; i < n; ++i) expected(i, i) = wd[i];
  CHECK(distance(d, expected) <= tolerance<T>(n, norm(ad)));
}
TEST_CASE_TEMPLATE_APPLY(la_eigen_one_factor, Scalars);

TEST_CASE("linear algebra: both factors of one eigen_solve in one set decompose once") {
  const std::size_t n = 6;
  Tensor<double> a = random_symmetric<double>(n, 51);
  Tensor<double> v, w, v1, w1;

  v1("i,j") = tenex::eigen_solve(a("i,j")).first;
  const std::size_t kernels_vectors = tenex::last_run_stats().kernels;
  w1("j") = tenex::eigen_solve(a("i,j")).second;
  const std::size_t kernels_values = tenex::last_run_stats().kernels;
  std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j"));
  const std::size_t kernels_both = tenex::last_run_stats().kernels;
  CHECK(kernels_vectors >= 1);
  CHECK(kernels_values >= 1);
  // Two decompositions would cost the sum of the single-factor sets.
  CHECK(kernels_both < kernels_vectors + kernels_values);
  check_eigen(a, v, w);

  // The graph of the set that uses both factors has exactly one eigen_solve node, with
  // two factor nodes, one for each factor.
  Tensor<double> v2, w2, scaled;
  const auto graphs = dumped_graphs([&] {
    auto [vec, val] = tenex::eigen_solve(a("i,j"));
    v2("i,j") = vec;
    w2("j") = val;
    scaled("j") = 2.0 * val;
  });
  REQUIRE(graphs.size() == 1);
  INFO(graphs[0]);
  CHECK(occurrences(graphs[0], "eigen_solve") == 1);
  const auto factors = lines_with(graphs[0], "factor");
  CHECK(some_line_has(factors, "vectors"));
  CHECK(some_line_has(factors, "values"));
  check_eigen(a, v2, w2);
  for (std::size_t j = 0; j < n; ++j) CHECK(scaled.at(j) == 2.0 * w2.at(j));

  // Two statements of one set through a named handle: still one decomposition.
  Tensor<double> v3, w3;
  const auto graphs2 = dumped_graphs([&] {
    auto pair = tenex::eigen_solve(a("i,j"));
    v3("i,j") = pair.first;
    w3("j") = pair.second;
  });
  REQUIRE(graphs2.size() == 1);
  CHECK(occurrences(graphs2[0], "eigen_solve") == 1);
  check_eigen(a, v3, w3);
}

TEST_CASE_TEMPLATE_DEFINE("linear algebra: eigen_solve composes inside expressions", T, la_eigen_composition) {
  const std::size_t n = 6;
  const Tensor<T> a = random_symmetric<T>(n, 61);
  Tensor<T> a_in = a;
  Tensor<T> v, w;
  std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a_in("i,j"));
  check_eigen(a, v, w);

  // The residual A V - V diag(w) written in tenex, with V and w the stored results.
  Tensor<T> residual;
  residual("i,j") = a_in("i,k") * v("k,j") - v("i,j") * w("j");
  CHECK(norm(dense(residual)) <= tolerance<T>(n, norm(dense(a))));

  // V diag(w) V^T = A in one expression straight from the decomposition.
  Tensor<T> rebuilt;
  {
    auto [vec, val] = tenex::eigen_solve(a_in("i,k"));
    auto [vec2, val2] = tenex::eigen_solve(a_in("j,k"));
    rebuilt("i,j") = vec * val * vec2;
  }
  CHECK(distance(dense(rebuilt), dense(a)) <= tolerance<T>(n, norm(dense(a))));

  // Eigenvalues of a sum: A + 3 I has the eigenvalues of A shifted by 3.
  Tensor<T> eye(Shape{n, n});
  for (std::size_t i = 0; i < n; ++i) eye.at(i, i) = T(1);
  Tensor<T> w3;
  w3("j") = tenex::eigen_solve(a_in("i,j") + 3.0 * eye("i,j")).second;
  for (std::size_t j = 0; j < n; ++j)
    CHECK(std::abs(w3.at(j) - (w.at(j) + 3.0)) <= tolerance<T>(n, norm(dense(a)) + 3));

  // Eigenvalues of a permuted operand (A^T = A) and of a slice (a principal block).
  Tensor<T> vp, wp, vs, ws;
  std::make_pair(vp("j,i"), wp("i")) = tenex::eigen_solve(tenex::permute(a_in("i,j"), "j,i"));
  check_eigen(a, vp, wp);
  std::make_pair(vs("i,j"), ws("j")) = tenex::eigen_solve(tenex::slice(a_in("i,j"), {1, 1}, {5, 5}));
  check_eigen(tensor<T>(block(dense(a), 1, 5, 1, 5)), vs, ws);
}
TEST_CASE_TEMPLATE_APPLY(la_eigen_composition, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: eigen_solve with repeated eigenvalues", T, la_eigen_repeated) {
  // A = Q diag(1, 1, 2, 2, 3) Q^T with an orthogonal Q from tenex's QR of a random matrix.
  const std::size_t n = 5;
  Tensor<T> g = random_matrix<T>(n, n, 71);
  Tensor<T> q, r;
  tenex::tie(q("i,k"), r("k,j")) = tenex::qr(g("i,j"));
  check_qr(g, q, r);
  Tensor<T> d(Shape{n}, {1, 1, 2, 2, 3});
  Tensor<T> a;
  a("i,j") = q("i,k") * d("k") * q("j,k");
  const Dense ad = dense(a);
  CHECK(distance(ad, transpose(ad)) <= tolerance<T>(n, 3));
  // Symmetrize exactly: the solver reads one triangle.
  Tensor<T> sym;
  sym("i,j") = 0.5 * (a("i,j") + a("j,i"));

  Tensor<T> v, w;
  std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(sym("i,j"));
  check_eigen(sym, v, w);
  const std::vector<double> expected{1, 1, 2, 2, 3};
  for (std::size_t j = 0; j < n; ++j) CHECK(std::abs(w.at(j) - expected[j]) <= tolerance<T>(n, 3));

  // The computed eigenvectors of a double eigenvalue span the same plane as Q's columns:
  // equal projectors V_b V_b^T = Q_b Q_b^T for each block b.
  const Dense vd = dense(v), qd = dense(q);
  for (std::size_t b0 : {0u, 2u, 4u}) {
    const std::size_t b1 = b0 == 4 ? 5 : b0 + 2;
    const Dense vb = block(vd, 0, n, b0, b1), qb = block(qd, 0, n, b0, b1);
    CAPTURE(b0);
    CHECK(distance(product(vb, transpose(vb)), product(qb, transpose(qb))) <= tolerance<T>(n, 3));
  }
}
TEST_CASE_TEMPLATE_APPLY(la_eigen_repeated, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: eigen_solve of the Hilbert matrix (ill-conditioned)", T, la_eigen_hilbert) {
  const std::size_t n = std::is_same_v<T, double> ? 6 : 4;
  const Tensor<T> h = hilbert<T>(n);
  Tensor<T> h_in = h;
  Tensor<T> v, w;
  tenex::tie(v("i,j"), w("j")) = tenex::eigen_solve(h_in("i,j"));
  check_eigen(h, v, w);
  // The Hilbert matrix is positive definite: every eigenvalue is above the backward error.
  CHECK(w.at(0) > T(0));
}
TEST_CASE_TEMPLATE_APPLY(la_eigen_hilbert, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: eigen_solve of sizes 0 and 1", T, la_eigen_small) {
  Tensor<T> empty(Shape{0, 0}), v0, w0;
  std::make_pair(v0("i,j"), w0("j")) = tenex::eigen_solve(empty("i,j"));
  CHECK(v0.shape() == Shape{0, 0});
  CHECK(w0.shape() == Shape{0});
  Tensor<T> v0g, w0g, b0(Shape{0, 0});
  std::make_pair(v0g("i,j"), w0g("j")) = tenex::eigen_solve(empty("i,j"), b0("i,j"));
  CHECK(v0g.shape() == Shape{0, 0});
  CHECK(w0g.shape() == Shape{0});

  Tensor<T> one(Shape{1, 1}, {T(-2.5)}), v1, w1;
  std::make_pair(v1("i,j"), w1("j")) = tenex::eigen_solve(one("i,j"));
  check_eigen(one, v1, w1);
  CHECK(std::abs(std::abs(double(v1.at(0, 0))) - 1.0) <= tolerance<T>(1));

  // Generalized 1 x 1: a v = w b v with v^T b v = 1.
  Tensor<T> b1(Shape{1, 1}, {T(4)}), vg, wg;
  std::make_pair(vg("i,j"), wg("j")) = tenex::eigen_solve(one("i,j"), b1("i,j"));
  check_generalized_eigen(one, b1, vg, wg);
}
TEST_CASE_TEMPLATE_APPLY(la_eigen_small, Scalars);

// =========================================================================================
// generalized eigen_solve
// =========================================================================================

TEST_CASE_TEMPLATE_DEFINE("linear algebra: generalized eigen_solve with b SPD", T, la_eigen_generalized) {
  for (std::size_t n : {3u, 9u}) {
    CAPTURE(n);
    const Tensor<T> a = random_symmetric<T>(n, 80 + n);
    const Tensor<T> b = random_spd<T>(n, 90 + n, static_cast<double>(n));
    Tensor<T> a_in = a, b_in = b;
    SUBCASE("make_pair") {
      Tensor<T> v, w;
      std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a_in("i,j"), b_in("i,j"));
      check_generalized_eigen(a, b, v, w);
    }
    SUBCASE("tie") {
      Tensor<T> v, w;
      tenex::tie(v("i,j"), w("j")) = tenex::eigen_solve(a_in("i,j"), b_in("i,j"));
      check_generalized_eigen(a, b, v, w);
    }
    SUBCASE("structured bindings and the values alone") {
      Tensor<T> v, w, w_alone;
      {
        auto [vec, val] = tenex::eigen_solve(a_in("i,j"), b_in("i,j"));
        v("i,j") = vec;
        w("j") = val;
      }
      check_generalized_eigen(a, b, v, w);
      w_alone("j") = tenex::eigen_solve(a_in("i,j"), b_in("i,j")).second;
      REQUIRE(w_alone.shape() == Shape{n});
      for (std::size_t j = 0; j < n; ++j) {
        CHECK(std::abs(w_alone.at(j) - w.at(j)) <= tolerance<T>(n, std::abs(double(w.at(j))) + 1));
      }
    }
    SUBCASE("b = I gives the standard problem") {
      Tensor<T> eye(Shape{n, n});
      for (std::size_t i = 0; i < n; ++i) eye.at(i, i) = T(1);
      Tensor<T> v, w;
      std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a_in("i,j"), eye("i,j"));
      check_eigen(a, v, w);
    }
    SUBCASE("operands given as a sum and a permutation") {
      Tensor<T> v, w;
      std::make_pair(v("i,j"), w("j")) =
          tenex::eigen_solve(a_in("i,j") + a_in("j,i"), tenex::permute(b_in("i,j"), "j,i"));
      Tensor<T> a2;
      a2("i,j") = 2.0 * a_in("i,j");
      check_generalized_eigen(a2, b, v, w);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(la_eigen_generalized, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: the targets of eigen_solve name the eigenpairs' mode", T, la_eigen_names) {
  // docs/linear-algebra.md: std::make_pair(C("m,p"), e("p")) = eigen_solve(F("m,n"), S("m,n")),
  // F C = S C e: the targets' label p names the mode the operands call n.
  const std::size_t n = 5;
  const Tensor<T> f = random_symmetric<T>(n, 31);
  const Tensor<T> s = random_spd<T>(n, 32, static_cast<double>(n));
  Tensor<T> f_in = f, s_in = s;
  SUBCASE("generalized, free function") {
    Tensor<T> c, e;
    std::make_pair(c("m,p"), e("p")) = tenex::eigen_solve(f_in("m,n"), s_in("m,n"));
    REQUIRE(c.shape() == Shape{n, n});
    REQUIRE(e.shape() == Shape{n});
    check_generalized_eigen(f, s, c, e);
  }
  SUBCASE("generalized, member form") {
    Tensor<T> c, e;
    std::make_pair(c("m,p"), e("p")) = f_in("m,n").eigen_solve(s_in("m,n"));
    check_generalized_eigen(f, s, c, e);
  }
  SUBCASE("standard, free function and member form") {
    Tensor<T> v, w, v2, w2;
    std::make_pair(v("i,k"), w("k")) = tenex::eigen_solve(f_in("i,j"));
    check_eigen(f, v, w);
    std::make_pair(v2("i,k"), w2("k")) = f_in("i,j").eigen_solve();
    check_eigen(f, v2, w2);
  }
  SUBCASE("a target in the other order holds the transpose") {
    Tensor<T> ct, e, c;
    std::make_pair(ct("p,m"), e("p")) = tenex::eigen_solve(f_in("m,n"), s_in("m,n"));
    c("m,p") = ct("p,m");
    check_generalized_eigen(f, s, c, e);
  }
  SUBCASE("one factor alone takes any name for the mode") {
    Tensor<T> c, e, c_ref, e_ref;
    std::make_pair(c_ref("m,n"), e_ref("n")) = tenex::eigen_solve(f_in("m,n"), s_in("m,n"));
    c("m,q") = tenex::eigen_solve(f_in("m,n"), s_in("m,n")).first;
    e("q") = tenex::eigen_solve(f_in("m,n"), s_in("m,n")).second;
    CHECK(tenex::allclose(c, c_ref));
    CHECK(tenex::allclose(e, e_ref));
  }
}
TEST_CASE_TEMPLATE_APPLY(la_eigen_names, Scalars);

TEST_CASE("linear algebra: generalized eigen_solve with an ill-conditioned b (Hilbert, n = 6)") {
  const std::size_t n = 6;
  const Tensor<double> a = random_symmetric<double>(n, 101);
  const Tensor<double> b = hilbert<double>(n);
  Tensor<double> a_in = a, b_in = b, v, w;
  std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a_in("i,j"), b_in("i,j"));
  REQUIRE(v.shape() == Shape{n, n});
  // Backward error of sygvd grows with cond(B) ~ 1.5e7: check the B-orthonormality and
  // the residual relative to ||A|| + ||B|| |w| ||V||^2 with that factor allowed.
  const Dense ad = dense(a), bd = dense(b), vd = dense(v);
  const std::vector<double> wd = dense_vector(w);
  check_ascending<double>(wd);
  const double cond = 1.5e7;
  for (std::size_t j = 0; j < n; ++j) {
    double res = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double av = 0, bv = 0;
      for (std::size_t k = 0; k < n; ++k) {
        av += ad(i, k) * vd(k, j);
        bv += bd(i, k) * vd(k, j);
      }
      res += (av - wd[j] * bv) * (av - wd[j] * bv);
      scale += vd(i, j) * vd(i, j);
    }
    CAPTURE(j);
    CHECK(std::sqrt(res) <= tolerance<double>(n, cond * (norm(ad) + norm(bd) * std::abs(wd[j])) * std::sqrt(scale)));
  }
  CHECK(distance(product(transpose(vd), product(bd, vd)), identity(n)) <= tolerance<double>(n, cond));
}

// =========================================================================================
// qr
// =========================================================================================

TEST_CASE_TEMPLATE_DEFINE("linear algebra: qr of square, tall and wide matrices", T, la_qr) {
  const std::vector<std::pair<std::size_t, std::size_t>> shapes{{5, 5}, {9, 4}, {3, 7}, {1, 6}, {6, 1}};
  for (const auto& [m, n] : shapes) {
    CAPTURE(m);
    CAPTURE(n);
    const Tensor<T> a = random_matrix<T>(m, n, 200 + 10 * m + n);
    Tensor<T> a_in = a;
    {
      Tensor<T> q, r;
      tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a_in("i,j"));
      check_qr(a, q, r);
    }
    {
      Tensor<T> q, r;
      std::make_pair(q("i,k"), r("k,j")) = tenex::qr(a_in("i,j"));
      check_qr(a, q, r);
    }
    {
      // Structured bindings; the new mode is named by each target independently.
      Tensor<T> q, r;
      {
        auto [qe, re] = tenex::qr(a_in("i,j"));
        q("i,new") = qe;
        r("inner,j") = re;
      }
      check_qr(a, q, r);
    }
    {
      // Q R contracted over the new mode inside one expression.
      Tensor<T> x;
      {
        auto [qe, re] = tenex::qr(a_in("i,j"));
        x("i,j") = qe * re;
      }
      REQUIRE(x.shape() == Shape{m, n});
      CHECK(distance(dense(x), dense(a)) <= tolerance<T>(std::max(m, n), norm(dense(a))));
      // And R alone, to the transposed target: R^T is lower.
      Tensor<T> rt;
      rt("j,k") = tenex::qr(a_in("i,j")).second;
      REQUIRE(rt.shape() == Shape{n, std::min(m, n)});
      const Dense rtd = dense(rt);
      check_upper(tensor<T>(transpose(rtd)));
      // R^T R = A^T A (Q has orthonormal columns), whatever the signs of R's rows.
      const Dense ata = product(transpose(dense(a)), dense(a));
      CHECK(distance(product(rtd, transpose(rtd)), ata) <= tolerance<T>(std::max(m, n), norm(ata)));
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(la_qr, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: qr of permuted, sliced and summed operands", T, la_qr_noncontiguous) {
  const Tensor<T> a = random_matrix<T>(6, 4, 301);
  Tensor<T> a_in = a;
  const Dense ad = dense(a);

  // A^T (4 x 6, wide) through a permutation.
  Tensor<T> q, r;
  tenex::tie(q("j,k"), r("k,i")) = tenex::qr(tenex::permute(a_in("i,j"), "j,i"));
  check_qr(tensor<T>(transpose(ad)), q, r);

  // A block in the middle of A.
  Tensor<T> qs, rs;
  tenex::tie(qs("i,k"), rs("k,j")) = tenex::qr(tenex::slice(a_in("i,j"), {1, 1}, {5, 4}));
  check_qr(tensor<T>(block(ad, 1, 5, 1, 4)), qs, rs);

  // A sum.
  const Tensor<T> b = random_matrix<T>(6, 4, 302);
  Tensor<T> b_in = b;
  Tensor<T> qa, ra;
  tenex::tie(qa("i,k"), ra("k,j")) = tenex::qr(a_in("i,j") - 2.0 * b_in("i,j"));
  Dense diff = ad;
  const Dense bd = dense(b);
  for (std::size_t i = 0; i < diff.v.size(); ++i) diff.v[i] -= 2.0 * bd.v[i];
  check_qr(tensor<T>(diff), qa, ra);
}
TEST_CASE_TEMPLATE_APPLY(la_qr_noncontiguous, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: qr of sizes 0 and 1", T, la_qr_small) {
  for (const auto& [m, n] : std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {3, 0}, {0, 3}}) {
    CAPTURE(m);
    CAPTURE(n);
    Tensor<T> a(Shape{m, n}), q, r;
    tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a("i,j"));
    CHECK(q.shape() == Shape{m, 0});
    CHECK(r.shape() == Shape{0, n});
  }
  Tensor<T> one(Shape{1, 1}, {T(-3)}), q, r;
  tenex::tie(q("i,k"), r("k,j")) = tenex::qr(one("i,j"));
  check_qr(one, q, r);
  CHECK(std::abs(std::abs(double(q.at(0, 0))) - 1.0) <= tolerance<T>(1));
}
TEST_CASE_TEMPLATE_APPLY(la_qr_small, Scalars);

// =========================================================================================
// svd
// =========================================================================================

TEST_CASE_TEMPLATE_DEFINE("linear algebra: svd of square, tall and wide matrices", T, la_svd) {
  const std::vector<std::pair<std::size_t, std::size_t>> shapes{{6, 6}, {10, 4}, {3, 8}, {1, 5}, {5, 1}};
  for (const auto& [m, n] : shapes) {
    CAPTURE(m);
    CAPTURE(n);
    const Tensor<T> a = random_matrix<T>(m, n, 400 + 10 * m + n);
    Tensor<T> a_in = a;
    {
      Tensor<T> u, s, vt;
      {
        auto [ue, se, vte] = tenex::svd(a_in("i,j"));
        u("i,k") = ue;
        s("k") = se;
        vt("k,j") = vte;
      }
      check_svd(a, u, s, vt);
      // ||A||_F^2 = sum of S^2.
      double squares = 0;
      for (std::size_t k = 0; k < s.shape().extent(0); ++k) squares += double(s.at(k)) * s.at(k);
      const double na = norm(dense(a));
      CHECK(std::abs(squares - na * na) <= tolerance<T>(std::max(m, n), na * na));
    }
    {
      Tensor<T> u, s, vt;
      tenex::tie(u("i,k"), s("k"), vt("k,j")) = tenex::svd(a_in("i,j"));
      check_svd(a, u, s, vt);
    }
    {
      // U diag(S) Vt in one expression: the new mode is on all three factors and summed.
      Tensor<T> x;
      {
        auto [ue, se, vte] = tenex::svd(a_in("i,j"));
        x("i,j") = ue * se * vte;
      }
      REQUIRE(x.shape() == Shape{m, n});
      CHECK(distance(dense(x), dense(a)) <= tolerance<T>(std::max(m, n), norm(dense(a))));
    }
    {
      // S alone equals S of the full decomposition; V (not Vt) through a permuted target.
      Tensor<T> s_alone, v, u, s;
      s_alone("k") = std::get<1>(tenex::svd(a_in("i,j")));
      {
        auto [ue, se, vte] = tenex::svd(a_in("i,j"));
        u("i,k") = ue;
        s("k") = se;
        v("j,k") = vte;
      }
      REQUIRE(s_alone.shape() == s.shape());
      for (std::size_t k = 0; k < s.shape().extent(0); ++k) {
        CHECK(std::abs(s_alone.at(k) - s.at(k)) <= tolerance<T>(std::max(m, n), norm(dense(a))));
      }
      check_svd(a, u, s, tensor<T>(transpose(dense(v))));
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(la_svd, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: svd of structured and non-contiguous operands", T, la_svd_structured) {
  // Rank one: x y^T has one singular value ||x|| ||y||, the others vanish.
  const std::size_t m = 5, n = 4;
  Tensor<T> x(Shape{m}), y(Shape{n});
  tenex::fill_random(x, 501);
  tenex::fill_random(y, 502);
  Tensor<T> outer;
  outer("i,j") = x("i") * y("j");
  Tensor<T> u, s, vt;
  tenex::tie(u("i,k"), s("k"), vt("k,j")) = tenex::svd(outer("i,j"));
  check_svd(outer, u, s, vt);
  double nx = 0, ny = 0;
  for (std::size_t i = 0; i < m; ++i) nx += double(x.at(i)) * x.at(i);
  for (std::size_t j = 0; j < n; ++j) ny += double(y.at(j)) * y.at(j);
  const double sigma = std::sqrt(nx * ny);
  CHECK(std::abs(s.at(0) - sigma) <= tolerance<T>(m, sigma));
  for (std::size_t k = 1; k < n; ++k) CHECK(std::abs(double(s.at(k))) <= tolerance<T>(m, sigma));

  // The svd of an orthogonal matrix (from tenex's QR): every singular value is 1.
  Tensor<T> g = random_matrix<T>(n, n, 503), q, r;
  tenex::tie(q("i,k"), r("k,j")) = tenex::qr(g("i,j"));
  Tensor<T> sq;
  sq("k") = std::get<1>(tenex::svd(q("i,j")));
  for (std::size_t k = 0; k < n; ++k) CHECK(std::abs(sq.at(k) - 1.0) <= tolerance<T>(n));

  // Of A^T through a permutation, of a slice and of a chip.
  const Tensor<T> a = random_matrix<T>(6, 5, 504);
  Tensor<T> a_in = a;
  const Dense ad = dense(a);
  Tensor<T> up, sp, vtp;
  tenex::tie(up("j,k"), sp("k"), vtp("k,i")) = tenex::svd(tenex::permute(a_in("i,j"), "j,i"));
  check_svd(tensor<T>(transpose(ad)), up, sp, vtp);
  Tensor<T> us, ss, vts;
  tenex::tie(us("i,k"), ss("k"), vts("k,j")) = tenex::svd(tenex::slice(a_in("i,j"), {2, 1}, {6, 3}));
  check_svd(tensor<T>(block(ad, 2, 6, 1, 3)), us, ss, vts);

  Tensor<T> cube(Shape{3, 4, 5});
  tenex::fill_random(cube, 505);
  Tensor<T> uc, sc, vtc;
  tenex::tie(uc("i,k"), sc("k"), vtc("k,j")) = tenex::svd(tenex::chip(cube("i,m,j"), "m", 2));
  Dense expected(3, 5);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 5; ++j) expected(i, j) = cube.at(i, 2, j);
  }
  check_svd(tensor<T>(expected), uc, sc, vtc);
}
TEST_CASE_TEMPLATE_APPLY(la_svd_structured, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: svd of sizes 0 and 1", T, la_svd_small) {
  for (const auto& [m, n] : std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {4, 0}, {0, 4}}) {
    CAPTURE(m);
    CAPTURE(n);
    Tensor<T> a(Shape{m, n}), u, s, vt;
    tenex::tie(u("i,k"), s("k"), vt("k,j")) = tenex::svd(a("i,j"));
    CHECK(u.shape() == Shape{m, 0});
    CHECK(s.shape() == Shape{0});
    CHECK(vt.shape() == Shape{0, n});
  }
  Tensor<T> one(Shape{1, 1}, {T(-1.5)}), u, s, vt;
  tenex::tie(u("i,k"), s("k"), vt("k,j")) = tenex::svd(one("i,j"));
  check_svd(one, u, s, vt);
  CHECK(std::abs(s.at(0) - 1.5) <= tolerance<T>(1, 1.5));
}
TEST_CASE_TEMPLATE_APPLY(la_svd_small, Scalars);

// =========================================================================================
// slice, chip, pow
// =========================================================================================

TEST_CASE_TEMPLATE_DEFINE("linear algebra: slice of ranks 1, 2 and 3 against element reads", T, la_slice) {
  Tensor<T> t(Shape{4, 5, 6});
  tenex::fill_random(t, 601);
  Tensor<T> s;
  s("i,j,k") = tenex::slice(t("i,j,k"), {1, 0, 2}, {3, 5, 5});
  REQUIRE(s.shape() == Shape{2, 5, 3});
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      for (std::size_t k = 0; k < 3; ++k) CHECK(s.at(i, j, k) == t.at(i + 1, j, k + 2));
    }
  }
  // Assigned to a permuted target.
  Tensor<T> sp;
  sp("k,i,j") = tenex::slice(t("i,j,k"), {1, 0, 2}, {3, 5, 5});
  REQUIRE(sp.shape() == Shape{3, 2, 5});
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      for (std::size_t k = 0; k < 3; ++k) CHECK(sp.at(k, i, j) == t.at(i + 1, j, k + 2));
    }
  }
  // Of a permuted operand: the bounds follow the permuted order of the modes.
  Tensor<T> spo;
  spo("k,j,i") = tenex::slice(tenex::permute(t("i,j,k"), "k,i,j"), {2, 1, 0}, {5, 3, 5});
  REQUIRE(spo.shape() == Shape{3, 5, 2});
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      for (std::size_t k = 0; k < 3; ++k) CHECK(spo.at(k, j, i) == t.at(i + 1, j, k + 2));
    }
  }

  // Rank 1, an empty range and the full range.
  Tensor<T> v(Shape{7});
  tenex::fill_random(v, 602);
  Tensor<T> sv, empty, full;
  sv("i") = tenex::slice(v("i"), {2}, {6});
  REQUIRE(sv.shape() == Shape{4});
  for (std::size_t i = 0; i < 4; ++i) CHECK(sv.at(i) == v.at(i + 2));
  empty("i") = tenex::slice(v("i"), {3}, {3});
  CHECK(empty.shape() == Shape{0});
  full("i") = tenex::slice(v("i"), {0}, {7});
  CHECK(full.to_vector() == v.to_vector());

  // Rank 2 inside a larger expression: a block product and a slice of a slice.
  Tensor<T> a(Shape{5, 6}), b(Shape{6, 4}), c, cc;
  tenex::fill_random(a, 603);
  tenex::fill_random(b, 604);
  c("i,j") = tenex::slice(a("i,k"), {1, 2}, {4, 5}) * tenex::slice(b("k,j"), {2, 0}, {5, 4});
  REQUIRE(c.shape() == Shape{3, 4});
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      double expected = 0, magnitude = 0;
      for (std::size_t k = 0; k < 3; ++k) {
        expected += double(a.at(i + 1, k + 2)) * b.at(k + 2, j);
        magnitude += std::abs(double(a.at(i + 1, k + 2)) * b.at(k + 2, j));
      }
      CHECK(std::abs(c.at(i, j) - expected) <= tolerance<T>(3, magnitude));
    }
  }
  cc("i,j") = tenex::slice(tenex::slice(a("i,j"), {1, 1}, {5, 6}), {1, 2}, {3, 4});
  REQUIRE(cc.shape() == Shape{2, 2});
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 2; ++j) CHECK(cc.at(i, j) == a.at(i + 2, j + 3));
  }
}
TEST_CASE_TEMPLATE_APPLY(la_slice, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: chip of every mode and index against element reads", T, la_chip) {
  Tensor<T> t(Shape{3, 4, 5});
  tenex::fill_random(t, 701);
  for (std::size_t index = 0; index < 3; ++index) {
    Tensor<T> c;
    c("j,k") = tenex::chip(t("i,j,k"), "i", index);
    REQUIRE(c.shape() == Shape{4, 5});
    for (std::size_t j = 0; j < 4; ++j) {
      for (std::size_t k = 0; k < 5; ++k) CHECK(c.at(j, k) == t.at(index, j, k));
    }
  }
  for (std::size_t index = 0; index < 4; ++index) {
    Tensor<T> c;
    c("i,k") = tenex::chip(t("i,j,k"), "j", index);
    REQUIRE(c.shape() == Shape{3, 5});
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t k = 0; k < 5; ++k) CHECK(c.at(i, k) == t.at(i, index, k));
    }
  }
  for (std::size_t index = 0; index < 5; ++index) {
    Tensor<T> c, ct;
    c("i,j") = tenex::chip(t("i,j,k"), "k", index);
    ct("j,i") = tenex::chip(t("i,j,k"), "k", index);  // a permuted target
    REQUIRE(c.shape() == Shape{3, 4});
    REQUIRE(ct.shape() == Shape{4, 3});
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 4; ++j) {
        CHECK(c.at(i, j) == t.at(i, j, index));
        CHECK(ct.at(j, i) == t.at(i, j, index));
      }
    }
  }
  // A chip of a chip, and rank 1 to rank 0.
  Tensor<T> cc;
  cc("j") = tenex::chip(tenex::chip(t("i,j,k"), "k", 3), "i", 2);
  REQUIRE(cc.shape() == Shape{4});
  for (std::size_t j = 0; j < 4; ++j) CHECK(cc.at(j) == t.at(2, j, 3));
  Tensor<T> v(Shape{6});
  tenex::fill_random(v, 702);
  for (std::size_t i = 0; i < 6; ++i) {
    Tensor<T> s;
    s("") = tenex::chip(v("i"), "i", i);
    CHECK(s.rank() == 0);
    CHECK(s.at() == v.at(i));
  }
  // Labels are names: chipping label "j" of t("j,i,k") fixes the first mode.
  Tensor<T> c0;
  c0("i,k") = tenex::chip(t("j,i,k"), "j", 1);
  REQUIRE(c0.shape() == Shape{4, 5});
  CHECK(c0.at(2, 3) == t.at(1, 2, 3));
  // Inside a contraction: row 1 of A times B.
  Tensor<T> a(Shape{3, 4}), b(Shape{4, 2}), y;
  tenex::fill_random(a, 703);
  tenex::fill_random(b, 704);
  y("j") = tenex::chip(a("i,k"), "i", 1) * b("k,j");
  REQUIRE(y.shape() == Shape{2});
  for (std::size_t j = 0; j < 2; ++j) {
    double expected = 0, magnitude = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      expected += double(a.at(1, k)) * b.at(k, j);
      magnitude += std::abs(double(a.at(1, k)) * b.at(k, j));
    }
    CHECK(std::abs(y.at(j) - expected) <= tolerance<T>(4, magnitude));
  }
}
TEST_CASE_TEMPLATE_APPLY(la_chip, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra: pow against repeated products", T, la_pow) {
  const std::size_t n = 5;
  // Scaled so that powers stay of order one.
  Tensor<T> a(Shape{n, n});
  tenex::fill_random(a, 801);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) a.at(i, j) = static_cast<T>(a.at(i, j) * 0.4);
  }
  const Dense ad = dense(a);

  Tensor<T> p0, p1;
  p0("i,j") = tenex::pow(a("i,j"), 0);
  REQUIRE(p0.shape() == Shape{n, n});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) CHECK(p0.at(i, j) == (i == j ? T(1) : T(0)));
  }
  p1("i,j") = tenex::pow(a("i,j"), 1);
  CHECK(p1.to_vector() == a.to_vector());

  Dense power = identity(n);
  Dense magnitude = identity(n);  // |A|^p: the size of the terms summed
  Dense abs_a = ad;
  for (double& x : abs_a.v) x = std::abs(x);
  for (unsigned p = 1; p <= 9; ++p) {
    power = product(power, ad);
    magnitude = product(magnitude, abs_a);
    Tensor<T> got;
    got("i,j") = tenex::pow(a("i,j"), p);
    CAPTURE(p);
    REQUIRE(got.shape() == Shape{n, n});
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        CHECK(std::abs(got.at(i, j) - power(i, j)) <= tolerance<T>(n * p, magnitude(i, j)));
      }
    }
  }

  // Repeated products written in tenex: A^3 = A A A, and pow composes: (A^2)^3 = A^6,
  // A^2 b, pow of a transpose = transpose of pow.
  Tensor<T> p3, a3, p6, n6;
  p3("i,j") = tenex::pow(a("i,j"), 3);
  a3("i,l") = a("i,j") * a("j,k") * a("k,l");
  CHECK(distance(dense(p3), dense(a3)) <= tolerance<T>(3 * n, norm(abs_a) * norm(abs_a) * norm(abs_a)));
  p6("i,j") = tenex::pow(a("i,j"), 6);
  n6("i,j") = tenex::pow(tenex::pow(a("i,j"), 2), 3);
  CHECK(distance(dense(p6), dense(n6)) <= tolerance<T>(6 * n, std::pow(norm(abs_a), 6)));

  Tensor<T> b(Shape{n}), y;
  tenex::fill_random(b, 802);
  y("i") = tenex::pow(a("i,j"), 2) * b("j");
  const Dense a2 = product(ad, ad);
  for (std::size_t i = 0; i < n; ++i) {
    double expected = 0;
    for (std::size_t j = 0; j < n; ++j) expected += a2(i, j) * b.at(j);
    CHECK(std::abs(y.at(i) - expected) <= tolerance<T>(2 * n, norm(abs_a) * norm(abs_a) * 3));
  }
  Tensor<T> pt;
  pt("i,j") = tenex::pow(a("j,i"), 4);  // labels (j,i): the power of A, stored transposed
  Tensor<T> p4;
  p4("i,j") = tenex::pow(a("i,j"), 4);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) CHECK(pt.at(i, j) == p4.at(j, i));
  }
  Tensor<T> ptp;
  ptp("j,i") = tenex::pow(tenex::permute(a("i,j"), "j,i"), 4);  // (A^T)^4 = (A^4)^T
  CHECK(distance(dense(ptp), transpose(dense(p4))) <= tolerance<T>(4 * n, std::pow(norm(abs_a), 4)));

  // Sizes 0 and 1.
  Tensor<T> e0(Shape{0, 0}), q0;
  q0("i,j") = tenex::pow(e0("i,j"), 3);
  CHECK(q0.shape() == Shape{0, 0});
  Tensor<T> s1(Shape{1, 1}, {T(-1.5)}), q1, q10;
  q1("i,j") = tenex::pow(s1("i,j"), 3);
  CHECK(std::abs(q1.at(0, 0) - (-3.375)) <= tolerance<T>(3, 3.375));
  q10("i,j") = tenex::pow(s1("i,j"), 0);
  CHECK(q10.at(0, 0) == T(1));
}
TEST_CASE_TEMPLATE_APPLY(la_pow, Scalars);

// =========================================================================================
// linked sets, aliasing and value semantics
// =========================================================================================

TEST_CASE_TEMPLATE_DEFINE("linear algebra: decompositions in linked sets, on their own targets, after later writes", T,
                          la_linked) {
  const std::size_t n = 5;
  const Tensor<T> a = random_spd<T>(n, 1001, 5.0);
  const Dense ad = dense(a);

  // A decomposition of a pending result links to the set that produces it.
  Tensor<T> a_in = a, twice, l;
  {
    auto aij = a_in("i,j");
    twice("i,j") = aij + aij;
    l("i,j") = tenex::cholesky(twice("i,j"));
    CHECK(l.pending());
  }
  CHECK(distance(dense(twice), scale_columns(ad, std::vector<double>(n, 2.0))) == 0.0);
  check_cholesky(twice, l);

  // The target on its own right side: as if the right side were computed first.
  Tensor<T> self = a;
  self("i,j") = tenex::cholesky(self("i,j"));
  check_cholesky(a, self);
  Tensor<T> sq = random_matrix<T>(n, n, 1002), sq0 = sq;
  sq("i,j") = tenex::pow(sq("i,j"), 2);
  CHECK(distance(dense(sq), product(dense(sq0), dense(sq0))) <= tolerance<T>(n, n));
  Tensor<T> qself = random_matrix<T>(n, 3, 1003), qself0 = qself, r;
  tenex::tie(qself("i,k"), r("k,j")) = tenex::qr(qself("i,j"));
  check_qr(qself0, qself, r);

  // A later write to an operand does not change a pending decomposition.
  Tensor<T> b = a, lb, vb, wb;
  {
    auto chol = tenex::cholesky(b("i,j"));
    auto [vec, val] = tenex::eigen_solve(b("i,j"));
    lb("i,j") = chol;
    vb("i,j") = vec;
    b.at(0, 0) = T(-1);  // no longer positive definite
    wb("j") = val;
  }
  CHECK(b.at(0, 0) == T(-1));
  check_cholesky(a, lb);
  check_eigen(a, vb, wb);

  // The eigenvectors of one set feed a statement of the same set: V^T A V = diag(w).
  Tensor<T> a2 = a, v, w, d;
  {
    auto [vec, val] = tenex::eigen_solve(a2("i,j"));
    v("i,j") = vec;
    w("j") = val;
    d("k,l") = v("i,k") * a2("i,j") * v("j,l");
  }
  check_eigen(a, v, w);
  Dense expected(n, n);
  for (std::size_t i = 0; i < n; ++i) expected(i, i) = w.at(i);
  CHECK(distance(dense(d), expected) <= tolerance<T>(n, norm(ad)));
}
TEST_CASE_TEMPLATE_APPLY(la_linked, Scalars);

// =========================================================================================
// the operation graph
// =========================================================================================

TEST_CASE("linear algebra: the graph shows slices, chips, powers and factors with their parameters") {
  Tensor<double> a(Shape{3, 4}), sq(Shape{3, 3});
  tenex::fill_random(a, 901);
  tenex::fill_random(sq, 902);

  {
    tenex::OpGraph g;
    tenex::slice(a("i,j"), {0, 1}, {2, 3}).add_to_graph(g);
    const std::string dot = g.to_dot();
    INFO(dot);
    CHECK(dot.find("slice") != std::string::npos);
    CHECK(dot.find("lo={0, 1} hi={2, 3}") != std::string::npos);
  }
  {
    tenex::OpGraph g;
    tenex::pow(sq("i,j"), 3).add_to_graph(g);
    const std::string dot = g.to_dot();
    INFO(dot);
    CHECK(some_line_has(lines_with(dot, "pow"), "n=3"));
  }
  {
    tenex::OpGraph g;
    tenex::chip(a("i,j"), "i", 1).add_to_graph(g);
    tenex::chip(a("i,j"), "j", 2).add_to_graph(g);
    const std::string dot = g.to_dot();
    INFO(dot);
    const auto chips = lines_with(dot, "chip");
    CHECK(some_line_has(chips, "mode=0 index=1"));
    CHECK(some_line_has(chips, "mode=1 index=2"));
  }
  {
    tenex::OpGraph g;
    tenex::cholesky(sq("i,j")).add_to_graph(g);
    const std::string dot = g.to_dot();
    INFO(dot);
    CHECK(occurrences(dot, "cholesky") == 1);
  }
  {
    tenex::OpGraph g;
    auto [vec, val] = tenex::eigen_solve(sq("i,j"));
    vec.add_to_graph(g);
    val.add_to_graph(g);
    const std::string dot = g.to_dot();
    INFO(dot);
    CHECK(occurrences(dot, "eigen_solve") == 1);  // one decomposition for both factors
    const auto factors = lines_with(dot, "factor");
    CHECK(factors.size() == 2);
    CHECK(some_line_has(factors, "vectors"));
    CHECK(some_line_has(factors, "values"));
  }
  {
    tenex::OpGraph g;
    auto [q, r] = tenex::qr(a("i,j"));
    q.add_to_graph(g);
    r.add_to_graph(g);
    const std::string dot = g.to_dot();
    INFO(dot);
    CHECK(occurrences(dot, "qr") == 1);
    const auto factors = lines_with(dot, "factor");
    CHECK(factors.size() == 2);
    CHECK(some_line_has(factors, "Q"));
    CHECK(some_line_has(factors, "R"));
  }
  {
    tenex::OpGraph g;
    auto [u, s, vt] = tenex::svd(a("i,j"));
    u.add_to_graph(g);
    s.add_to_graph(g);
    vt.add_to_graph(g);
    const std::string dot = g.to_dot();
    INFO(dot);
    CHECK(occurrences(dot, "svd") == 1);
    const auto factors = lines_with(dot, "factor");
    CHECK(factors.size() == 3);
    CHECK(some_line_has(factors, "U"));
    CHECK(some_line_has(factors, "S"));
    CHECK(some_line_has(factors, "Vt"));
  }
  {
    // One graph: cholesky(A) * b records the decomposition and the product together.
    tenex::OpGraph g;
    Tensor<double> b(Shape{3});
    (tenex::cholesky(sq("i,j")) * b("j")).add_to_graph(g);
    const std::string dot = g.to_dot();
    INFO(dot);
    CHECK(occurrences(dot, "cholesky") == 1);
    CHECK(dot.find("contract") != std::string::npos);
  }
}

TEST_CASE("linear algebra: an evaluated set's graph holds each decomposition once") {
  Tensor<double> a = random_matrix<double>(5, 3, 911);
  Tensor<double> q, r, x;
  const auto graphs = dumped_graphs([&] {
    auto [qe, re] = tenex::qr(a("i,j"));
    q("i,k") = qe;
    r("k,j") = re;
    x("i,j") = qe * re;
  });
  REQUIRE(graphs.size() == 1);
  INFO(graphs[0]);
  CHECK(lines_with(graphs[0], "qr").size() >= 1);
  CHECK(occurrences(graphs[0], "\"qr") == 1);
  check_qr(a, q, r);
  CHECK(distance(dense(x), dense(a)) <= tolerance<double>(5, norm(dense(a))));
}

// The operand of a decomposition, slice, chip, pow or permutation that is a product sums
// the labels repeated across its factors, as plain Einstein notation does.
TEST_CASE("linear algebra: a product as the operand sums its repeated labels") {
  Tensor<double> s({3, 4}), c({3, 3});
  tenex::fill_random(s, 31);
  tenex::fill_random(c, 32);
  Tensor<double> sst, c2, c4, l, llt, p, x, chipped, pt;
  sst("i,j") = s("i,k") * s("j,k");
  c2("i,j") = c("i,k") * c("k,j");
  c4("i,j") = c2("i,k") * c2("k,j");

  l("i,j") = tenex::cholesky(s("i,k") * s("j,k"));
  llt("i,j") = l("i,k") * l("j,k");
  CHECK(tenex::allclose(llt, sst, 1e-10, 1e-12));

  p("i,j") = tenex::pow(c("i,k") * c("k,j"), 2);
  CHECK(tenex::allclose(p, c4, 1e-10, 1e-12));

  x("i,j") = tenex::slice(c("i,k") * c("k,j"), {1, 0}, {3, 2});
  REQUIRE(x.shape() == Shape{2, 2});
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 2; ++j) CHECK(x.at(i, j) == doctest::Approx(c2.at(i + 1, j)).epsilon(1e-12));
  }

  chipped("j") = tenex::chip(c("i,k") * c("k,j"), "i", 2);
  for (std::size_t j = 0; j < 3; ++j) CHECK(chipped.at(j) == doctest::Approx(c2.at(2, j)).epsilon(1e-12));

  pt("j,i") = tenex::permute(c("i,k") * c("k,j"), "j,i");
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 3; ++j) CHECK(pt.at(j, i) == doctest::Approx(c2.at(i, j)).epsilon(1e-12));
  }

  // A label on one factor only stays: the operand (i,k,j) of a Hadamard-free product is rank 3.
  CHECK_THROWS_AS(tenex::cholesky(s("i,k") * c("j,l")), tenex::ShapeError);
}

TEST_CASE_TEMPLATE_DEFINE("linear algebra: cholesky reads the triangle its labels name", T, la_cholesky_triangle) {
  // SPD in its lower triangle; garbage above, so the storage is not symmetric.
  const std::size_t n = 3;
  Tensor<T> a(Shape{n, n}, {4, 100, -50, 2, 5, 70, 1, 1, 6});
  // The transpose's lower triangle is a's upper one: make that SPD too.
  Tensor<T> b(Shape{n, n}, {4, 2, 1, -9, 5, 1, 8, 7, 6});
  auto lower_of = [&](const Tensor<T>& m, bool transpose) {
    std::vector<double> s(n * n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t r = std::max(i, j), c = std::min(i, j);
        s[i * n + j] = transpose ? m.at(c, r) : m.at(r, c);
      }
    }
    return s;
  };
  auto check = [&](const Tensor<T>& l, const std::vector<double>& s) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) CHECK(l.at(i, j) == T(0));
      for (std::size_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::size_t k = 0; k < n; ++k) sum += static_cast<double>(l.at(i, k)) * l.at(j, k);
        CHECK(sum == doctest::Approx(s[i * n + j]).epsilon(1e-4));
      }
    }
  };
  Tensor<T> l1, l2;
  l1("i,j") = tenex::cholesky(a("i,j"));  // a's lower triangle
  check(l1, lower_of(a, false));
  l2("j,i") = tenex::cholesky(b("j,i"));  // the transpose of b: b's upper triangle
  check(l2, lower_of(b, true));
}
TEST_CASE_TEMPLATE_APPLY(la_cholesky_triangle, tenex_test::Scalars);
