// Truncated decompositions: svd and eigen_solve (standard and generalized) with a
// tenex::Truncation, in the four element types; for complex operands the real values' own
// set. The oracle is the untruncated decomposition cut by hand with the rank rule written out
// here (ITensor's), and the identities: U^H U = I, A V = V diag(w), A V = B V diag(w) with
// V^H B V = I, and Eckart-Young (||A - A_r||_F^2 is the discarded sum of squares). Also the
// extent decided when the set runs (results shrunk; statements after it in the same set
// exact), last_truncation(), and the errors (an invalid Truncation where it is written; a use
// of the truncated mode the zero padding cannot make exact when the set runs). Every check
// runs with the passes on and off and at one and two threads (ctest).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/environment_scope.hpp"
#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;
using tenex::Truncation;
using Complex = std::complex<double>;

template <class T>
Tensor<T> random(const Shape& shape, std::uint64_t seed) {
  Tensor<T> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

template <class T>
Complex wide(T v) {
  return Complex(static_cast<double>(std::real(v)), static_cast<double>(std::imag(v)));
}

template <class T>
constexpr bool is_float = std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>;

// Relative accuracy the checks allow: a few hundred roundings of T.
template <class T>
double tolerance() {
  return is_float<T> ? 2e-4 : 1e-10;
}

// The object a factor expression holds values of (Tensor<T>, or the real tensor a real factor
// has): what its target is.
template <class O>
O object_of(const tenex::Expression<O>&);
template <class E>
using ObjectOf = decltype(object_of(std::declval<const E&>()));

// The settings a result must not depend on.
// (The thread count: ctest runs this file at two threads and, as truncation_one_thread, at one.)
struct Setting {
  const char* passes;
};
const Setting kSettings[] = {{"all"}, {"none"}};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tenex::Error& e) {
    return e.what();
  }
  return "";
}

// ITensor's rule on descending squares: drop the smallest whose sum is at most cutoff * total,
// keep at most max_rank, at least one.
struct Kept {
  std::size_t rank;
  double discarded;
};
Kept rule(const std::vector<double>& values, Truncation t) {
  double total = 0;
  for (double v : values) total += v * v;
  std::size_t rank = values.size();
  double dropped = 0;
  if (t.cutoff > 0) {
    while (rank > 1 && dropped + values[rank - 1] * values[rank - 1] <= t.cutoff * total) {
      dropped += values[rank - 1] * values[rank - 1];
      --rank;
    }
  }
  if (t.max_rank != 0 && rank > t.max_rank) {
    for (std::size_t i = t.max_rank; i < rank; ++i) dropped += values[i] * values[i];
    rank = t.max_rank;
  }
  return {rank, total > 0 ? dropped / total : 0.0};
}

// A matrix as complex doubles, row-major.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<Complex> v;
  Complex& operator()(std::size_t i, std::size_t j) { return v[i * cols + j]; }
  Complex operator()(std::size_t i, std::size_t j) const { return v[i * cols + j]; }
};

template <class O>
Matrix matrix(const O& t) {
  REQUIRE(t.rank() == 2);
  Matrix out{t.shape().extent(0), t.shape().extent(1), {}};
  for (std::size_t i = 0; i < out.rows; ++i) {
    for (std::size_t j = 0; j < out.cols; ++j) out.v.push_back(wide(t.at(i, j)));
  }
  return out;
}

template <class O>
std::vector<double> real_vector(const O& t) {
  std::vector<double> out;
  for (std::size_t i = 0; i < t.size(); ++i) out.push_back(std::real(wide(t.at(i))));
  return out;
}

double v2(double v) { return v * v; }

double frobenius2(const Matrix& a) {
  double sum = 0;
  for (const Complex& x : a.v) sum += std::norm(x);
  return sum;
}

// a^H a - I, largest entry.
double orthonormality_error(const Matrix& a) {
  double worst = 0;
  for (std::size_t p = 0; p < a.cols; ++p) {
    for (std::size_t q = 0; q < a.cols; ++q) {
      Complex dot = 0;
      for (std::size_t i = 0; i < a.rows; ++i) dot += std::conj(a(i, p)) * a(i, q);
      worst = std::max(worst, std::abs(dot - (p == q ? 1.0 : 0.0)));
    }
  }
  return worst;
}

// The singular values of a, descending, from the untruncated svd.
template <class T>
std::vector<double> singular_values(const Tensor<T>& a) {
  Tensor<T> x = a;
  auto full = tenex::svd(x("i,j"));
  ObjectOf<std::tuple_element_t<1, decltype(full)>> s;
  s("k") = std::get<1>(full);
  return real_vector(s);
}

// The eigenvalues of the Hermitian h from the untruncated eigen_solve, by descending |w|.
template <class T>
std::vector<double> eigenvalues_by_magnitude(const Tensor<T>& h) {
  Tensor<T> x = h;
  auto full = tenex::eigen_solve(x("i,j"));
  ObjectOf<std::tuple_element_t<1, decltype(full)>> w;
  w("j") = full.second;
  std::vector<double> values = real_vector(w);
  std::reverse(values.begin(), values.end());  // ascending -> descending, positive first on ties
  std::stable_sort(values.begin(), values.end(), [](double x, double y) { return std::abs(x) > std::abs(y); });
  return values;
}

// A random Hermitian (symmetric) n x n matrix.
template <class T>
Tensor<T> hermitian(std::size_t n, std::uint64_t seed) {
  const Tensor<T> b = random<T>({n, n}, seed);
  Tensor<T> h({n, n});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      T conj_ji = b.at(j, i);
      if constexpr (!std::is_floating_point_v<T>) conj_ji = std::conj(conj_ji);
      h.at(i, j) = b.at(i, j) + conj_ji;
    }
  }
  return h;
}

// One truncated SVD checked against the cut full one and Eckart-Young.
template <class T>
void check_svd(const Tensor<T>& a, Truncation t) {
  CAPTURE(t.max_rank);
  CAPTURE(t.cutoff);
  const std::vector<double> full = singular_values(a);
  const Kept expected = rule(full, t);
  Tensor<T> x = a, u, vt;
  auto result = tenex::svd(x("i,j"), t);
  ObjectOf<std::tuple_element_t<1, decltype(result)>> s;
  u("i,k") = std::get<0>(result);
  s("k") = std::get<1>(result);
  vt("k,j") = std::get<2>(result);
  u.wait();  // runs the set (the factors are still alive): the shapes are final from here
  s.wait();  // a complex operand's real values: their own set, run now
  const std::size_t m = a.shape().extent(0), n = a.shape().extent(1), r = expected.rank;
  REQUIRE(s.shape() == Shape{r});
  REQUIRE(u.shape() == Shape{m, r});
  REQUIRE(vt.shape() == Shape{r, n});
  const tenex::TruncationResult last = tenex::last_truncation();
  CHECK(last.rank == r);
  CHECK(std::abs(last.discarded_weight - expected.discarded) <= tolerance<T>() * 10);
  const std::vector<double> kept = real_vector(s);
  for (std::size_t i = 0; i < r; ++i) CHECK(std::abs(kept[i] - full[i]) <= tolerance<T>() * 10 * full[0]);
  const Matrix um = matrix(u), vm = matrix(vt), am = matrix(a);
  CHECK(orthonormality_error(um) <= tolerance<T>() * 100);
  Matrix v_adjoint{n, r, std::vector<Complex>(n * r)};
  for (std::size_t i = 0; i < r; ++i) {
    for (std::size_t j = 0; j < n; ++j) v_adjoint(j, i) = std::conj(vm(i, j));
  }
  CHECK(orthonormality_error(v_adjoint) <= tolerance<T>() * 100);
  // Eckart-Young: the residual of U S Vt is the discarded sum of squares.
  Matrix residual = am;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t p = 0; p < r; ++p) residual(i, j) -= um(i, p) * kept[p] * vm(p, j);
    }
  }
  double dropped = 0;
  for (std::size_t i = r; i < full.size(); ++i) dropped += full[i] * full[i];
  CHECK(std::abs(frobenius2(residual) - dropped) <= tolerance<T>() * 100 * frobenius2(am));
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("truncation: svd keeps the rank the rule says, Eckart-Young holds", T, truncated_svd) {
  // 40 x 30: max_rank 4 takes the selective path (gesvdx), 20 the full one (gesdd and the cut).
  for (const Shape& shape : {Shape{40, 30}, Shape{30, 40}, Shape{9, 9}}) {
    CAPTURE(shape.to_string());
    const Tensor<T> a = random<T>(shape, 7);
    const std::vector<double> s = singular_values(a);
    // A cutoff between two tails of the squares, so that float rounding cannot move the rank.
    double tail = 0;
    for (std::size_t i = s.size(); i-- > s.size() / 2;) tail += s[i] * s[i];
    double total = 0;
    for (double v : s) total += v * v;
    const double cutoff = (tail + 0.5 * s[s.size() / 2 - 1] * s[s.size() / 2 - 1]) / total;
    for (const Setting& setting : kSettings) {
      CAPTURE(setting.passes);
      EnvironmentScope passes("TENEX_PASSES", setting.passes);
      check_svd(a, Truncation{.max_rank = 4});
      check_svd(a, Truncation{.max_rank = 20});
      check_svd(a, Truncation{.cutoff = cutoff});
      check_svd(a, Truncation{.max_rank = 3, .cutoff = cutoff});
      check_svd(a, Truncation{.max_rank = 1000});
      check_svd(a, Truncation{});
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(truncated_svd, tenex_test::AllScalars);

TEST_CASE_TEMPLATE_DEFINE("truncation: eigen_solve keeps the pairs of largest |w|", T, truncated_eigen) {
  const std::size_t n = 16;
  const Tensor<T> h = hermitian<T>(n, 3);
  const std::vector<double> w_full = eigenvalues_by_magnitude(h);
  double total = 0;
  for (double w : w_full) total += w * w;
  const double cutoff =
      (w_full[n - 1] * w_full[n - 1] + w_full[n - 2] * w_full[n - 2] + 0.5 * w_full[n - 3] * w_full[n - 3]) / total;
  for (const Setting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    for (Truncation t : {Truncation{.max_rank = 5}, Truncation{.cutoff = cutoff},
                         Truncation{.max_rank = 10, .cutoff = cutoff}, Truncation{}}) {
      CAPTURE(t.max_rank);
      CAPTURE(t.cutoff);
      const Kept expected = rule(w_full, t);
      const std::size_t r = expected.rank;
      Tensor<T> x = h, v;
      auto result = tenex::eigen_solve(x("i,j"), t);
      ObjectOf<std::tuple_element_t<1, decltype(result)>> w;
      std::make_pair(v("i,k"), w("k")) = result;
      w.wait();
      REQUIRE(v.shape() == Shape{n, r});
      REQUIRE(w.shape() == Shape{r});
      CHECK(tenex::last_truncation().rank == r);
      CHECK(std::abs(tenex::last_truncation().discarded_weight - expected.discarded) <= tolerance<T>() * 10);
      const std::vector<double> kept = real_vector(w);
      const Matrix vm = matrix(v), hm = matrix(h);
      CHECK(orthonormality_error(vm) <= tolerance<T>() * 100);
      for (std::size_t p = 0; p < r; ++p) {
        CHECK(std::abs(kept[p] - w_full[p]) <= tolerance<T>() * 10 * std::abs(w_full[0]));
        double residual = 0;  // |H v_p - w_p v_p|
        for (std::size_t i = 0; i < n; ++i) {
          Complex hv = 0;
          for (std::size_t j = 0; j < n; ++j) hv += hm(i, j) * vm(j, p);
          residual += std::norm(hv - kept[p] * vm(i, p));
        }
        CHECK(std::sqrt(residual) <= tolerance<T>() * 100 * std::abs(w_full[0]));
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(truncated_eigen, tenex_test::AllScalars);

TEST_CASE_TEMPLATE_DEFINE("truncation: statements after it in the same set use the kept rank", T, truncation_in_set) {
  const std::size_t m = 24, n = 18, r = 5;
  const Tensor<T> a = random<T>({m, n}, 11);
  const std::vector<double> s = singular_values(a);
  for (const Setting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    Tensor<T> x = a, u, vt, projector, best, twice;
    {
      auto [uf, sf, vtf] = tenex::svd(x("i,j"), Truncation{.max_rank = r});
      u("i,k") = uf;
      vt("k,j") = vtf;
      projector("i,l") = u("i,k") * tenex::conj(u("l,k"));  // U U^H: sums over the kept rank
      best("i,j") = projector("i,l") * x("l,j");            // U U^H A = A_r
      twice("i,k") = 2.0 * u("i,k");                        // a target with the new mode: shrunk
      (void)sf;
    }  // the set runs here
    REQUIRE(u.shape() == Shape{m, r});
    REQUIRE(vt.shape() == Shape{r, n});
    REQUIRE(twice.shape() == Shape{m, r});
    REQUIRE(best.shape() == Shape{m, n});
    const Matrix um = matrix(u), am = matrix(a), bm = matrix(best), tm = matrix(twice);
    double dropped = 0;
    for (std::size_t i = r; i < s.size(); ++i) dropped += s[i] * s[i];
    Matrix residual = am;
    for (std::size_t i = 0; i < residual.v.size(); ++i) residual.v[i] -= bm.v[i];
    CHECK(std::abs(frobenius2(residual) - dropped) <= tolerance<T>() * 100 * frobenius2(am));
    for (std::size_t i = 0; i < tm.v.size(); ++i) CHECK(std::abs(tm.v[i] - 2.0 * um.v[i]) <= tolerance<T>());
    if constexpr (std::is_floating_point_v<T>) {
      // The product of the three factors, S a real tensor of T.
      Tensor<T> u2, s2, vt2, product;
      {
        auto [uf, sf, vtf] = tenex::svd(x("i,j"), Truncation{.max_rank = r});
        u2("i,k") = uf;
        s2("k") = sf;
        vt2("k,j") = vtf;
        product("i,j") = u2("i,k") * s2("k") * vt2("k,j");
      }
      REQUIRE(s2.shape() == Shape{r});
      const Matrix pm = matrix(product);
      for (std::size_t i = 0; i < pm.v.size(); ++i) CHECK(std::abs(pm.v[i] - bm.v[i]) <= tolerance<T>() * 10);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(truncation_in_set, tenex_test::AllScalars);

TEST_CASE_TEMPLATE_DEFINE("truncation: a zero matrix keeps one value and discards nothing", T, truncation_zero) {
  Tensor<T> zero({6, 5});
  Tensor<T> u, vt;
  auto result = tenex::svd(zero("i,j"), Truncation{.max_rank = 3, .cutoff = 0.5});
  u("i,k") = std::get<0>(result);
  vt("k,j") = std::get<2>(result);
  vt.wait();
  CHECK(u.shape() == Shape{6, 1});
  CHECK(tenex::last_truncation().rank == 1);
  CHECK(tenex::last_truncation().discarded_weight == 0.0);
}
TEST_CASE_TEMPLATE_APPLY(truncation_zero, tenex_test::AllScalars);

TEST_CASE_TEMPLATE_DEFINE("truncation: an invalid Truncation is an error where it is written", T, truncation_invalid) {
  Tensor<T> a = random<T>({6, 5}, 2);
  Tensor<T> u = random<T>({6, 2}, 3);
  const std::vector<T> before = u.to_vector();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double cutoff : {-0.1, 1.5, nan, std::numeric_limits<double>::infinity()}) {
    CAPTURE(cutoff);
    const std::string message =
        error_of([&] { u("i,k") = std::get<0>(tenex::svd(a("i,j"), Truncation{.max_rank = 2, .cutoff = cutoff})); });
    CHECK(message.find("tenex: svd: the Truncation of ") == 0);
    CHECK(message.find("a number in [0, 1]") != std::string::npos);
    const std::string eigen_message =
        error_of([&] { u("i,k") = tenex::eigen_solve(a("i,j") * a("k,j"), Truncation{.cutoff = cutoff}).first; });
    CHECK(eigen_message.find("tenex: eigen_solve: the Truncation of") == 0);
    CHECK(u.to_vector() == before);  // the targets are as they were
  }
  CHECK_THROWS_AS((void)tenex::svd(a("i,j"), Truncation{.cutoff = -1}), tenex::Error);
}
TEST_CASE_TEMPLATE_APPLY(truncation_invalid, tenex_test::AllScalars);

TEST_CASE_TEMPLATE_DEFINE("truncation: a use the zero padding cannot make exact fails the set", T, truncation_refused) {
  const Tensor<T> a = random<T>({8, 6}, 5);
  for (const Setting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    Tensor<T> x = a, u, total, q;
    {
      auto [uf, sf, vtf] = tenex::svd(x("i,j"), Truncation{.max_rank = 3});
      u("i,k") = uf;
      total("") = tenex::sum(tenex::exp(u("i,k")), "i,k");  // exp(0) = 1 beyond the kept rank
      (void)sf;
      (void)vtf;
    }
    const std::string message = error_of([&] { (void)total.to_vector(); });
    CHECK(message.find("the mode of a truncated decomposition") != std::string::npos);
    CHECK(message.find("in a sum over it") != std::string::npos);
    {
      auto [uf, sf, vtf] = tenex::svd(x("i,j"), Truncation{.max_rank = 3});
      u("i,k") = uf;
      q("i,k") = std::get<0>(tenex::qr(u("i,k")));  // a decomposition of the truncated mode
      (void)sf;
      (void)vtf;
    }
    CHECK(error_of([&] { (void)q.to_vector(); }).find("as the operand of qr") != std::string::npos);
  }
}
TEST_CASE_TEMPLATE_APPLY(truncation_refused, tenex_test::AllScalars);

TEST_CASE("truncation: last_truncation is kept per thread") {
  tenex::TruncationResult seen{99, 1.0};
  std::thread other([&] { seen = tenex::last_truncation(); });
  other.join();
  CHECK(seen.rank == 0);
  CHECK(seen.discarded_weight == 0.0);
}

// The real values of a complex operand run in a set of their own (they are a real tensor);
// that set takes the kept rank too: its targets shrink, and its statements over the new mode
// are exact or refused like those of the decomposition's set.
namespace {

template <class T>
using Real = tenex::real_type_t<T>;

// As a T: a real tensor itself, a complex one cast.
template <class T>
Tensor<T> as_element_type(Tensor<Real<T>> r) {
  if constexpr (std::is_same_v<Real<T>, T>) {
    return r;
  } else {
    Tensor<T> out;
    out("k") = tenex::cast<T>(r("k"));
    return out;
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("truncation: the values' own set takes the kept rank", T, truncation_values_set) {
  const std::size_t m = 20, n = 14, bound = 8, kept = 5;
  const Tensor<T> a = random<T>({m, n}, 13);
  const std::vector<double> s = singular_values(a);
  double total = 0, tail = 0;
  for (double v : s) total += v * v;
  for (std::size_t i = kept; i < s.size(); ++i) tail += v2(s[i]);
  // max_rank 8 bounds the mode; the cutoff keeps 5 of the 8.
  const Truncation t{.max_rank = bound, .cutoff = (tail + 0.5 * v2(s[kept - 1])) / total};
  for (const Setting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    Tensor<T> x = a, u, vt;
    Tensor<Real<T>> values, squares, sum_of_squares, doubled;
    {
      auto [uf, sf, vtf] = tenex::svd(x("i,j"), t);
      u("i,k") = uf;
      vt("k,j") = vtf;
      values("k") = sf;
      squares("k") = sf * sf;                // a statement after the truncation that keeps the new mode
      sum_of_squares("") = sf * sf;          // a sum over it: the padding is zero
      doubled("q") = 2.0 * values("q");      // a target of the values' set read again
      CHECK(values.shape() == Shape{kept});  // the extent decided when the set runs: shape() runs it
    }
    CHECK(u.shape() == Shape{m, kept});
    REQUIRE(values.shape() == Shape{kept});
    CHECK(tenex::last_truncation().rank == kept);
    REQUIRE(squares.shape() == Shape{kept});
    REQUIRE(doubled.shape() == Shape{kept});
    REQUIRE(vt.shape() == Shape{kept, n});
    double sum = 0;
    for (std::size_t i = 0; i < kept; ++i) {
      const double v = static_cast<double>(values.at(i));
      CHECK(std::abs(v - s[i]) <= tolerance<T>() * 10 * s[0]);
      CHECK(std::abs(static_cast<double>(squares.at(i)) - v * v) <= tolerance<T>() * 10 * s[0] * s[0]);
      CHECK(std::abs(static_cast<double>(doubled.at(i)) - 2 * v) <= tolerance<T>() * 10 * s[0]);
      sum += v * v;
    }
    CHECK(std::abs(static_cast<double>(sum_of_squares.at()) - sum) <= tolerance<T>() * 10 * total);
    // The three results of the kept rank in a later set: the best rank-5 approximation.
    Tensor<T> sv = as_element_type<T>(values);
    Tensor<T> best;
    best("i,j") = u("i,k") * sv("k") * vt("k,j");
    Matrix residual = matrix(a);
    const Matrix bm = matrix(best);
    for (std::size_t i = 0; i < residual.v.size(); ++i) residual.v[i] -= bm.v[i];
    CHECK(std::abs(frobenius2(residual) - tail) <= tolerance<T>() * 100 * total);

    // eigen_solve's values: the same, and a sum the padding cannot make exact fails their set.
    Tensor<T> h = hermitian<T>(n, 17), vectors;
    Tensor<Real<T>> w, w_exp;
    {
      auto [vf, wf] = tenex::eigen_solve(h("i,j"), Truncation{.max_rank = 4});
      vectors("i,k") = vf;
      w("k") = wf;
    }
    REQUIRE(w.shape() == Shape{4});
    CHECK(vectors.shape() == Shape{n, 4});
    const std::vector<double> w_full = eigenvalues_by_magnitude(h);
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK(std::abs(static_cast<double>(w.at(i)) - w_full[i]) <= tolerance<T>() * 10 * std::abs(w_full[0]));
    }
    {
      auto [vf, wf] = tenex::eigen_solve(h("i,j"), Truncation{.max_rank = 4});
      w("k") = wf;
      w_exp("") = tenex::sum(tenex::exp(w("k")), "k");  // exp(0) = 1 beyond the kept rank
      (void)vf;
    }
    const std::string message = error_of([&] { (void)w_exp.to_vector(); });
    CHECK(message.find("the mode of a truncated decomposition") != std::string::npos);
    CHECK(message.find("in a sum over it") != std::string::npos);
  }
}
TEST_CASE_TEMPLATE_APPLY(truncation_values_set, tenex_test::AllScalars);

TEST_CASE_TEMPLATE_DEFINE("truncation: the generalized eigen_solve keeps the pairs of largest |w|", T,
                          truncated_generalized) {
  const std::size_t n = 12;
  Tensor<T> a = hermitian<T>(n, 21);
  // b = c c^H + n I: Hermitian positive definite.
  const Matrix c = matrix(random<T>({n, n}, 22));
  Tensor<T> b({n, n});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      Complex sum = i == j ? Complex(static_cast<double>(n)) : Complex(0);
      for (std::size_t k = 0; k < n; ++k) sum += c(i, k) * std::conj(c(j, k));
      if constexpr (std::is_floating_point_v<T>) {
        b.at(i, j) = static_cast<T>(sum.real());
      } else {
        b.at(i, j) = T(static_cast<Real<T>>(sum.real()), static_cast<Real<T>>(sum.imag()));
      }
    }
  }
  std::vector<double> w_full;
  {
    Tensor<Real<T>> w;
    auto full = tenex::eigen_solve(a("i,j"), b("i,j"));
    w("j") = full.second;
    w_full = real_vector(w);
  }
  std::reverse(w_full.begin(), w_full.end());
  std::stable_sort(w_full.begin(), w_full.end(), [](double x, double y) { return std::abs(x) > std::abs(y); });
  double total = 0;
  for (double w : w_full) total += w * w;
  const double cutoff = (v2(w_full[n - 1]) + v2(w_full[n - 2]) + 0.5 * v2(w_full[n - 3])) / total;
  const Matrix am = matrix(a), bm = matrix(b);
  const double scale = std::sqrt(frobenius2(am)) + std::abs(w_full[0]) * std::sqrt(frobenius2(bm));
  for (const Setting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    for (Truncation t : {Truncation{.max_rank = 4}, Truncation{.cutoff = cutoff}, Truncation{}}) {
      CAPTURE(t.max_rank);
      CAPTURE(t.cutoff);
      const Kept expected = rule(w_full, t);
      const std::size_t r = expected.rank;
      Tensor<T> v;
      Tensor<Real<T>> w;
      std::make_pair(v("i,k"), w("k")) = tenex::eigen_solve(a("i,j"), b("i,j"), t);
      w.wait();
      REQUIRE(v.shape() == Shape{n, r});
      REQUIRE(w.shape() == Shape{r});
      CHECK(tenex::last_truncation().rank == r);
      CHECK(std::abs(tenex::last_truncation().discarded_weight - expected.discarded) <= tolerance<T>() * 10);
      const std::vector<double> kept = real_vector(w);
      const Matrix vm = matrix(v);
      for (std::size_t p = 0; p < r; ++p) {
        CHECK(std::abs(kept[p] - w_full[p]) <= tolerance<T>() * 100 * std::abs(w_full[0]));
        double residual = 0;  // |A v_p - w_p B v_p|
        for (std::size_t i = 0; i < n; ++i) {
          Complex av = 0, bv = 0;
          for (std::size_t j = 0; j < n; ++j) {
            av += am(i, j) * vm(j, p);
            bv += bm(i, j) * vm(j, p);
          }
          residual += std::norm(av - kept[p] * bv);
        }
        CHECK(std::sqrt(residual) <= tolerance<T>() * 100 * scale);
        for (std::size_t q = 0; q < r; ++q) {  // V^H B V = I
          Complex dot = 0;
          for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) dot += std::conj(vm(i, p)) * bm(i, j) * vm(j, q);
          }
          CHECK(std::abs(dot - (p == q ? 1.0 : 0.0)) <= tolerance<T>() * 100);
        }
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(truncated_generalized, tenex_test::AllScalars);

TEST_CASE_TEMPLATE("truncation: a cast of a target carrying the mode, written before its set ran, is an error", T,
                   std::complex<float>, std::complex<double>) {
  const std::size_t m = 10, n = 8;
  Tensor<T> x = random<T>({m, n}, 23), u;
  const std::vector<double> s = singular_values(x);
  double total = 0;
  for (double v : s) total += v * v;
  // The cutoff drops the smallest value only: 7 kept of the bound 8.
  const Truncation t{.cutoff = 1.5 * v2(s[n - 1]) / total};
  Tensor<Real<T>> magnitude, from_factor;
  {
    auto [uf, sf, vtf] = tenex::svd(x("i,j"), t);
    u("i,k") = uf;
    magnitude("i,k") = tenex::abs(u("i,k"));  // u's mode is known by its label only in this set
    from_factor("i,k") = tenex::abs(uf);      // the factor's new mode: marked, takes the kept rank
    (void)sf;
    (void)vtf;
  }
  REQUIRE(u.shape() == Shape{m, n - 1});
  const std::string message = error_of([&] { (void)magnitude.to_vector(); });
  CHECK(message.find("it took the kept rank of a truncated decomposition after this statement was written") !=
        std::string::npos);
  REQUIRE(from_factor.shape() == Shape{m, n - 1});
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t k = 0; k + 1 < n; ++k) {
      CHECK(std::abs(static_cast<double>(from_factor.at(i, k)) - std::abs(wide(u.at(i, k)))) <= tolerance<T>());
    }
  }
}

TEST_CASE_TEMPLATE_DEFINE("truncation: shape() of a pending result with a truncated mode runs its set", T,
                          truncation_pending_shape) {
  // A rank-6 matrix asked for at most 20 values: the kept rank is 6, known once the set runs.
  const std::size_t m = 30, n = 25, rank = 6;
  Tensor<T> x = random<T>({m, rank}, 51), y = random<T>({rank, n}, 52);
  Tensor<T> a;
  a("i,j") = x("i,r") * y("r,j");
  Tensor<T> u, vt, twice;
  Tensor<tenex::real_type_t<T>> s;
  {
    auto [uf, sf, vtf] = tenex::svd(a("i,j"), Truncation{.max_rank = 20, .cutoff = 1e-12});
    u("i,k") = uf;
    s("k") = sf;
    vt("k,j") = vtf;
    twice("i,k") = 2.0 * u("i,k");    // a later statement of the set, over the kept mode
    CHECK(s.shape() == Shape{rank});  // runs the set: the extent is the kept rank, not the bound
    CHECK_FALSE(s.pending());
    CHECK(tenex::last_truncation().rank == rank);
    CHECK(u.shape() == Shape{m, rank});
    CHECK(vt.shape() == Shape{rank, n});
    CHECK(twice.shape() == Shape{m, rank});
  }
  CHECK(s.size() == rank);
  // A set without a truncated decomposition keeps its shape lazily: shape() runs nothing.
  Tensor<T> lazy;
  {
    auto h = a("i,j");
    lazy("j,i") = h;
    CHECK(lazy.shape() == Shape{n, m});
    CHECK(lazy.pending());
  }
  CHECK_FALSE(lazy.pending());
}
TEST_CASE_TEMPLATE_APPLY(truncation_pending_shape, tenex_test::AllScalars);
