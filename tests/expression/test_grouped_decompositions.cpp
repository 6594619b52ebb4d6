// Decompositions over label groups: svd, qr and eigen_solve of tensors of any rank split by
// labels into rows and columns, in the four element types. The oracle is the matrix
// decomposition of the same tensor reshaped by hand (loops below, no tenex), and the
// identities: U S Vt = theta, U^H U = I, Q R = theta with R upper triangular, H V = V diag(w).
// Also the permuted groups (the operand read in another order), truncation, no copy when the
// group is already in memory order (plan_of), and the errors where they are written. Every
// value check runs with the passes on and off.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/environment_scope.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;
using tenex::Truncation;

template <class T>
Tensor<T> random(const Shape& shape, std::uint64_t seed) {
  Tensor<T> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

template <class T>
constexpr bool is_float = std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>;

template <class T>
double tolerance() {
  return is_float<T> ? 2e-4 : 1e-10;
}

template <class T>
double max_difference(const Tensor<T>& a, const Tensor<T>& b) {
  REQUIRE(a.shape() == b.shape());
  double worst = 0, scale = 1;
  const T* x = a.data();
  const T* y = b.data();
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(x[i] - y[i])));
    scale = std::max(scale, static_cast<double>(std::abs(y[i])));
  }
  return worst / scale;
}

/// theta of extents {A, S, T, B} as the (A*S) x (T*B) matrix: row-major, a reshape.
/// `rows` are mode positions in the order the rows take; the columns are the other modes in order.
template <class T>
Tensor<T> reshaped(const Tensor<T>& theta, const std::vector<std::size_t>& rows) {
  const std::vector<std::size_t>& e = theta.shape().extents();
  std::vector<std::size_t> order = rows;
  for (std::size_t d = 0; d < e.size(); ++d) {
    if (std::find(rows.begin(), rows.end(), d) == rows.end()) order.push_back(d);
  }
  std::size_t m = 1, n = 1;
  for (std::size_t i = 0; i < order.size(); ++i) (i < rows.size() ? m : n) *= e[order[i]];
  std::vector<std::size_t> strides(e.size(), 1);
  for (std::size_t d = e.size() - 1; d > 0; --d) strides[d - 1] = strides[d] * e[d];
  std::vector<T> out(m * n);
  std::vector<std::size_t> index(e.size(), 0);
  for (std::size_t flat = 0; flat < out.size(); ++flat) {
    std::size_t rest = flat, source = 0;
    for (std::size_t i = order.size(); i-- > 0;) {
      source += (rest % e[order[i]]) * strides[order[i]];
      rest /= e[order[i]];
    }
    out[flat] = theta.data()[source];
  }
  return Tensor<T>(Shape({m, n}), std::move(out));
}

template <class R>
std::vector<double> as_doubles(const Tensor<R>& t) {
  std::vector<double> v;
  for (std::size_t i = 0; i < t.size(); ++i) v.push_back(static_cast<double>(std::real(t.data()[i])));
  return v;
}

struct PassSetting {
  const char* passes;
};
constexpr PassSetting kSettings[] = {{""}, {"none"}};

}  // namespace

TEST_CASE_TEMPLATE(
    "grouped decompositions: svd of a rank-4 theta over (a,s) rebuilds it, U orthonormal, S the "
    "reshaped matrix's",
    T, float, double, std::complex<float>, std::complex<double>) {
  using R = tenex::real_type_t<T>;
  for (const PassSetting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    Tensor<T> theta = random<T>(Shape({5, 2, 3, 4}), 11);
    Tensor<T> U, Vt, rebuilt, gram;
    Tensor<R> S;
    tenex::tie(U("a,s,k"), S("k"), Vt("k,t,b")) = tenex::svd(theta("a,s,t,b"), "a,s");
    CHECK(U.shape() == Shape({5, 2, 10}));
    CHECK(S.shape() == Shape({10}));
    CHECK(Vt.shape() == Shape({10, 3, 4}));
    Tensor<T> us;
    us("a,s,k") = U("a,s,k") * tenex::cast<T>(S("k"));
    rebuilt("a,s,t,b") = us("a,s,k") * Vt("k,t,b");
    CHECK(max_difference(rebuilt, theta) < tolerance<T>());
    gram("k,l") = tenex::conj(U("a,s,k")) * U("a,s,l");
    Tensor<T> identity(Shape({10, 10}));
    for (std::size_t i = 0; i < 10; ++i) identity.at(i, i) = T(1);
    CHECK(max_difference(gram, identity) < tolerance<T>());
    // The singular values of the matrix reshaped by hand.
    Tensor<T> u2, vt2;
    Tensor<R> s2;
    Tensor<T> matrix = reshaped(theta, {0, 1});
    tenex::tie(u2("i,k"), s2("k"), vt2("k,j")) = tenex::svd(matrix("i,j"));
    const std::vector<double> a = as_doubles(S), b = as_doubles(s2);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) < tolerance<T>() * (1 + b[0]));
  }
}

TEST_CASE_TEMPLATE("grouped decompositions: a row group out of memory order (t,a) is read permuted", T, double,
                   std::complex<double>) {
  using R = tenex::real_type_t<T>;
  for (const PassSetting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    Tensor<T> theta = random<T>(Shape({4, 2, 3, 5}), 12);
    Tensor<T> U, Vt, us, rebuilt;
    Tensor<R> S;
    tenex::tie(U("t,a,k"), S("k"), Vt("k,s,b")) = tenex::svd(theta("a,s,t,b"), "t,a");
    CHECK(U.shape() == Shape({3, 4, 10}));
    CHECK(Vt.shape() == Shape({10, 2, 5}));
    us("t,a,k") = U("t,a,k") * tenex::cast<T>(S("k"));
    rebuilt("a,s,t,b") = us("t,a,k") * Vt("k,s,b");
    CHECK(max_difference(rebuilt, theta) < tolerance<T>());
    Tensor<T> u2, vt2;
    Tensor<R> s2;
    Tensor<T> matrix = reshaped(theta, {2, 0});
    tenex::tie(u2("i,k"), s2("k"), vt2("k,j")) = tenex::svd(matrix("i,j"));
    const std::vector<double> a = as_doubles(S), b = as_doubles(s2);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) < tolerance<T>() * (1 + b[0]));
    // A matrix split by its second label: the transpose's SVD.
    Tensor<T> m = random<T>(Shape({6, 4}), 13), u3, vt3, back;
    Tensor<R> s3;
    tenex::tie(u3("j,k"), s3("k"), vt3("k,i")) = tenex::svd(m("i,j"), "j");
    CHECK(u3.shape() == Shape({4, 4}));
    back("i,j") = vt3("k,i") * tenex::cast<T>(s3("k")) * u3("j,k");
    CHECK(max_difference(back, m) < tolerance<T>());
  }
}

TEST_CASE_TEMPLATE("grouped decompositions: a truncated grouped svd keeps the largest values", T, double,
                   std::complex<double>) {
  using R = tenex::real_type_t<T>;
  Tensor<T> theta = random<T>(Shape({6, 2, 2, 6}), 14);
  Tensor<T> U, Vt;
  Tensor<R> S, full;
  Tensor<T> u0, vt0;
  tenex::tie(u0("a,s,k"), full("k"), vt0("k,t,b")) = tenex::svd(theta("a,s,t,b"), "a,s");
  tenex::tie(U("a,s,k"), S("k"), Vt("k,t,b")) =
      tenex::svd(theta("a,s,t,b"), "a,s", Truncation{.max_rank = 4, .cutoff = 0.0});
  CHECK(U.shape() == Shape({6, 2, 4}));
  CHECK(S.shape() == Shape({4}));
  CHECK(Vt.shape() == Shape({4, 2, 6}));
  const std::vector<double> kept = as_doubles(S), all = as_doubles(full);
  for (std::size_t i = 0; i < 4; ++i) CHECK(std::abs(kept[i] - all[i]) < 1e-10 * (1 + all[0]));
  CHECK(tenex::last_truncation().rank == 4);
  double dropped = 0, total = 0;
  for (std::size_t i = 0; i < all.size(); ++i) (i < 4 ? total : dropped) += all[i] * all[i];
  total += dropped;
  CHECK(std::abs(tenex::last_truncation().discarded_weight - dropped / total) < 1e-12);
}

TEST_CASE_TEMPLATE("grouped decompositions: qr over (a,s): Q R = theta, Q^H Q = I, R upper triangular", T, float,
                   double, std::complex<float>, std::complex<double>) {
  for (const PassSetting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    Tensor<T> theta = random<T>(Shape({3, 2, 4, 5}), 15);
    Tensor<T> Q, Rf, rebuilt, gram;
    tenex::tie(Q("a,s,k"), Rf("k,t,b")) = tenex::qr(theta("a,s,t,b"), "a,s");
    CHECK(Q.shape() == Shape({3, 2, 6}));
    CHECK(Rf.shape() == Shape({6, 4, 5}));
    rebuilt("a,s,t,b") = Q("a,s,k") * Rf("k,t,b");
    CHECK(max_difference(rebuilt, theta) < tolerance<T>());
    gram("k,l") = tenex::conj(Q("a,s,k")) * Q("a,s,l");
    Tensor<T> identity(Shape({6, 6}));
    for (std::size_t i = 0; i < 6; ++i) identity.at(i, i) = T(1);
    CHECK(max_difference(gram, identity) < tolerance<T>());
    for (std::size_t k = 0; k < 6; ++k) {
      for (std::size_t column = 0; column < k; ++column) CHECK(std::abs(Rf.data()[k * 20 + column]) == 0);
    }
  }
}

TEST_CASE_TEMPLATE(
    "grouped decompositions: eigen_solve of H(a,b,c,d) over (a,b): H V = V diag(w), values the "
    "reshaped matrix's",
    T, double, std::complex<double>) {
  using R = tenex::real_type_t<T>;
  for (const PassSetting& setting : kSettings) {
    CAPTURE(setting.passes);
    EnvironmentScope passes("TENEX_PASSES", setting.passes);
    Tensor<T> m = random<T>(Shape({3, 4, 3, 4}), 16);
    Tensor<T> H, V, left, right;
    H("a,b,c,d") = m("a,b,c,d") + tenex::conj(m("c,d,a,b"));  // Hermitian as a 12 x 12 matrix
    Tensor<R> w;
    std::make_pair(V("a,b,k"), w("k")) = tenex::eigen_solve(H("a,b,c,d"), "a,b");
    CHECK(V.shape() == Shape({3, 4, 12}));
    CHECK(w.shape() == Shape({12}));
    left("a,b,k") = H("a,b,c,d") * V("c,d,k");
    right("a,b,k") = V("a,b,k") * tenex::cast<T>(w("k"));
    CHECK(max_difference(left, right) < tolerance<T>());
    Tensor<T> v2;
    Tensor<R> w2;
    Tensor<T> matrix = reshaped(H, {0, 1});
    std::make_pair(v2("i,k"), w2("k")) = tenex::eigen_solve(matrix("i,j"));
    const std::vector<double> a = as_doubles(w), b = as_doubles(w2);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) < 1e-10 * (1 + std::abs(b[i])));
    // Truncated: the pairs of largest |w|.
    Tensor<T> Vk;
    Tensor<R> wk;
    std::make_pair(Vk("a,b,k"), wk("k")) = tenex::eigen_solve(H("a,b,c,d"), "a,b", Truncation{.max_rank = 3});
    CHECK(Vk.shape() == Shape({3, 4, 3}));
    std::vector<double> by_size = b;
    std::sort(by_size.begin(), by_size.end(), [](double x, double y) { return std::abs(x) > std::abs(y); });
    const std::vector<double> kept = as_doubles(wk);
    for (std::size_t i = 0; i < 3; ++i) CHECK(std::abs(kept[i] - by_size[i]) < 1e-10 * (1 + std::abs(by_size[i])));
  }
}

TEST_CASE("grouped decompositions: no copy when the row group leads in memory order, one permutation otherwise") {
  Tensor<double> theta = random<double>(Shape({8, 2, 2, 8}), 17);
  auto count_permutes = [](const std::vector<tenex::PlanStep>& steps) {
    std::size_t count = 0;
    for (const tenex::PlanStep& step : steps) {
      if (step.kernel.find("permute") != std::string::npos || step.kernel.find("copy") != std::string::npos) ++count;
    }
    return count;
  };
  {
    auto [u, s, vt] = tenex::svd(theta("a,s,t,b"), "a,s");
    const std::vector<tenex::PlanStep> steps = tenex::plan_of(u);
    bool has_svd = false;
    for (const tenex::PlanStep& step : steps) has_svd = has_svd || step.operation.rfind("svd", 0) == 0;
    CHECK(has_svd);
    const std::size_t in_order = count_permutes(steps);
    auto [u2, s2, vt2] = tenex::svd(theta("a,s,t,b"), "s,a");
    const std::size_t permuted = count_permutes(tenex::plan_of(u2));
    CHECK(permuted == in_order + 1);
  }
}

TEST_CASE("grouped decompositions: bad row groups are errors where they are written, targets unchanged") {
  Tensor<double> theta = random<double>(Shape({3, 2, 2, 3}), 18);
  Tensor<double> before = theta;
  Tensor<double> U(Shape({1})), S, Vt;
  auto message_of = [&](auto&& call) {
    try {
      call();
    } catch (const tenex::ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message_of([&] { (void)tenex::svd(theta("a,s,t,b"), "a,x"); }).find("\"x\"") != std::string::npos);
  CHECK(message_of([&] { (void)tenex::svd(theta("a,s,t,b"), "a,a"); }).find("repeats") != std::string::npos);
  CHECK(message_of([&] { (void)tenex::svd(theta("a,s,t,b"), "a,s,t,b"); }).find("column") != std::string::npos);
  CHECK(message_of([&] { (void)tenex::svd(theta("a,s,t,b"), ""); }).find("names no label") != std::string::npos);
  CHECK(message_of([&] { (void)tenex::qr(theta("a,s,t,b"), "q"); }).find("qr") != std::string::npos);
  CHECK(message_of([&] { (void)tenex::eigen_solve(theta("a,s,t,b"), "a"); }).find("not a square") != std::string::npos);
  CHECK_THROWS_AS((void)tenex::svd(theta("a,s,t,b"), "a,s", Truncation{.cutoff = 2.0}), tenex::Error);
  // The targets name the new mode: a target label that is neither a row label nor new fails.
  CHECK_THROWS_AS(tenex::tie(U("a,q,k"), S("k"), Vt("k,t,b")) = tenex::svd(theta("a,s,t,b"), "a,s"), tenex::ShapeError);
  CHECK(U.shape() == Shape({1}));
  CHECK(max_difference(theta, before) == 0);
}
