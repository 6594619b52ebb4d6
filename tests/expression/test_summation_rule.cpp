// The summation rule (docs/einstein.md, "The summation rule"): a label the target lacks is
// summed over the value of the whole right-hand side, exactly as tenex::sum names it; only a
// product contracts labels inside itself (those on two or more of its factors that nothing
// around it uses). A label so summed that some terms of a sum lack is a ShapeError, unless a
// tenex::sum names it. Every case is checked against plain loops, with the passes, without them
// (TENEX_PASSES=none), with fusion alone and with the plan cache off, three runs each.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using TD = tenex::Tensor<double>;

/// The configurations a result must not depend on: the pass list and the plan cache.
struct Configuration {
  const char* passes;      // TENEX_PASSES, null: unset (every pass)
  const char* plan_cache;  // TENEX_PLAN_CACHE
};
constexpr Configuration kConfigurations[] = {{nullptr, "1"}, {"none", "1"},
                                             {"fuse", "1"},  {"cse,order,fold_scales,gemm_beta", "1"},
                                             {nullptr, "0"}, {"none", "0"}};

struct Environment {
  explicit Environment(const Configuration& c) {
    if (c.passes) ::setenv("TENEX_PASSES", c.passes, 1);
    ::setenv("TENEX_PLAN_CACHE", c.plan_cache, 1);
  }
  ~Environment() {
    ::unsetenv("TENEX_PASSES");
    ::unsetenv("TENEX_PLAN_CACHE");
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

TD filled(Shape shape, unsigned seed) {
  TD t(std::move(shape));
  tenex::fill_random(t, seed);
  return t;
}

/// Runs `statement` (which writes its result into the tensor it is given) three times in
/// every configuration; every run must give `expected` within `tolerance` (relative to the
/// largest expected value), and the runs of one configuration must agree bit for bit.
void check_everywhere(const std::function<void(TD&)>& statement, const std::vector<double>& expected,
                      double tolerance = 1e-12) {
  double scale = 1.0;
  for (double v : expected) scale = std::max(scale, std::abs(v));
  for (const Configuration& c : kConfigurations) {
    Environment env(c);
    const std::string passes = c.passes ? c.passes : "all", cache = c.plan_cache;
    CAPTURE(passes);
    CAPTURE(cache);
    std::vector<double> first;
    for (int run = 0; run < 3; ++run) {
      CAPTURE(run);
      TD r;
      statement(r);
      const std::vector<double> got = r.to_vector();
      REQUIRE(got.size() == expected.size());
      for (std::size_t x = 0; x < got.size(); ++x) {
        CAPTURE(x);
        CHECK(std::abs(got[x] - expected[x]) <= tolerance * scale);
      }
      if (run == 0) {
        first = got;
      } else {
        CHECK(got == first);
      }
    }
  }
}

}  // namespace

TEST_CASE("summation rule: a label the target lacks is summed over the whole right side") {
  const std::size_t I = 5, J = 7;
  TD a = filled({I, J}, 1), b = filled({I}, 2), d = filled({I, J}, 3);
  const std::vector<double> av = a.to_vector(), bv = b.to_vector(), dv = d.to_vector();

  SUBCASE("a broadcast operand is added once per value of the label tenex::sum names") {
    std::vector<double> expected(I, 0.0);
    for (std::size_t i = 0; i < I; ++i)
      for (std::size_t j = 0; j < J; ++j) expected[i] += av[i * J + j] + bv[i];
    check_everywhere([&](TD& r) { r("i") = tenex::sum(a("i,j") + b("i"), "j"); }, expected);
    check_everywhere([&](TD& r) { r("i") = tenex::sum(b("i") + a("i,j"), "j"); }, expected);
  }
  SUBCASE("terms that all carry the label: the sum is summed") {
    std::vector<double> expected(I, 0.0);
    for (std::size_t i = 0; i < I; ++i)
      for (std::size_t j = 0; j < J; ++j) expected[i] += av[i * J + j] - 2.0 * dv[i * J + j];
    check_everywhere([&](TD& r) { r("i") = a("i,j") - 2.0 * d("i,j"); }, expected);
  }
  SUBCASE("a quotient is summed after dividing") {
    std::vector<double> expected(I, 0.0);
    for (std::size_t i = 0; i < I; ++i)
      for (std::size_t j = 0; j < J; ++j) expected[i] += av[i * J + j] / (dv[i * J + j] + 3.0);
    check_everywhere([&](TD& r) { r("i") = a("i,j") / (d("i,j") + 3.0); }, expected);
    check_everywhere([&](TD& r) { r("i") = tenex::sum(a("i,j") / (d("i,j") + 3.0), "j"); }, expected);
  }
  SUBCASE("a difference of a broadcast and a scalar summed to rank 0, spelled out") {
    double expected = 0.0;
    for (std::size_t i = 0; i < I; ++i)
      for (std::size_t j = 0; j < J; ++j) expected += av[i * J + j] - bv[i] + 1.0;
    check_everywhere([&](TD& r) { r("") = tenex::sum(a("i,j") - b("i") + 1.0, "i,j"); }, {expected});
  }
  SUBCASE("functions, max and min see every element; the sum comes after them") {
    std::vector<double> e1(I, 0.0), e2(I, 0.0), e3(I, 0.0);
    for (std::size_t i = 0; i < I; ++i)
      for (std::size_t j = 0; j < J; ++j) {
        e1[i] += std::exp(av[i * J + j]);
        e2[i] += std::max(av[i * J + j], bv[i]);
        e3[i] += std::exp(av[i * J + j] + bv[i]);
      }
    check_everywhere([&](TD& r) { r("i") = tenex::exp(a("i,j")); }, e1);
    check_everywhere([&](TD& r) { r("i") = tenex::max(a("i,j"), b("i")); }, e2);
    // A broadcast inside a function is the function's operand, not a term of the sum.
    check_everywhere([&](TD& r) { r("i") = tenex::exp(a("i,j") + b("i")); }, e3);
  }
}

TEST_CASE("summation rule: explicit sums of broadcasts") {
  TD a(Shape{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), b(Shape{3}, {100, 200, 300});
  TD s(Shape{}, {6}), x(Shape{4}, {1, 2, 3, 4});
  check_everywhere([&](TD& r) { r("i") = tenex::sum(a("i,j") + b("i"), "j"); }, {306, 615, 924});
  check_everywhere([&](TD& r) { r("i") = tenex::sum(a("i,j"), "j") + b("i"); }, {106, 215, 324});
  check_everywhere([&](TD& r) { r("") = tenex::sum(s("") + x("c"), "c"); }, {34});
  // A sum inside a sum and a sum kept by a consumer.
  check_everywhere([&](TD& r) { r("") = tenex::sum(tenex::sum(a("i,j") + b("i"), "j"), "i"); }, {1845});
  check_everywhere([&](TD& r) { r("i") = 2.0 * tenex::sum(a("i,j") + b("i"), "j"); }, {612, 1230, 1848});
  check_everywhere([&](TD& r) { r("i") = tenex::sum(2.0 * (a("i,j") + b("i")), "j"); }, {612, 1230, 1848});
  // Broadcasting into a target that keeps every label sums nothing.
  check_everywhere([&](TD& r) { r("i,j") = a("i,j") + b("i"); }, {101, 102, 103, 204, 205, 206, 307, 308, 309});
  check_everywhere([&](TD& r) { r("j,c") = b("j") - x("c"); },
                   {99, 98, 97, 96, 199, 198, 197, 196, 299, 298, 297, 296});
}

TEST_CASE("summation rule: products contract their own repeated labels") {
  const std::size_t I = 4, K = 6, J = 5;
  TD m = filled({I, K}, 11), n = filled({K, J}, 12), d = filled({I, J}, 13), x = filled({K}, 14);
  const std::vector<double> mv = m.to_vector(), nv = n.to_vector(), dv = d.to_vector(), xv = x.to_vector();
  std::vector<double> mn(I * J, 0.0);
  for (std::size_t i = 0; i < I; ++i)
    for (std::size_t j = 0; j < J; ++j)
      for (std::size_t k = 0; k < K; ++k) mn[i * J + j] += mv[i * K + k] * nv[k * J + j];

  SUBCASE("a product plus a term: the product's label is its own (a residual's shape)") {
    std::vector<double> expected(I * J);
    for (std::size_t p = 0; p < I * J; ++p) expected[p] = mn[p] + dv[p];
    check_everywhere([&](TD& r) { r("i,j") = m("i,k") * n("k,j") + d("i,j"); }, expected);
    check_everywhere([&](TD& r) { r("i,j") = d("i,j") - -1.0 * (m("i,k") * n("k,j")); }, expected);
  }
  SUBCASE("a label used outside the product is not the product's: summed over the whole") {
    // r_ij = sum_k (m_ik n_kj + x_k) = (mn)_ij + sum_k x_k
    double sx = 0.0;
    for (double v : xv) sx += v;
    std::vector<double> expected(I * J);
    for (std::size_t p = 0; p < I * J; ++p) expected[p] = mn[p] + sx;
    check_everywhere([&](TD& r) { r("i,j") = m("i,k") * n("k,j") + x("k"); }, expected);
  }
  SUBCASE("a function of a product sees the contracted product") {
    std::vector<double> expected(I * J);
    for (std::size_t p = 0; p < I * J; ++p) expected[p] = std::exp(0.1 * mn[p]);
    check_everywhere([&](TD& r) { r("i,j") = tenex::exp(0.1 * (m("i,k") * n("k,j"))); }, expected);
  }
  SUBCASE("a named product used twice: one product of four factors, k summed after squaring") {
    std::vector<double> expected(I * J, 0.0);
    for (std::size_t i = 0; i < I; ++i)
      for (std::size_t j = 0; j < J; ++j)
        for (std::size_t k = 0; k < K; ++k) {
          const double v = mv[i * K + k] * nv[k * J + j];
          expected[i * J + j] += v * v;
        }
    check_everywhere(
        [&](TD& r) {
          auto h = m("i,k") * n("k,j");
          r("i,j") = h * h;
        },
        expected);
  }
  SUBCASE("a factor that is a sum keeps the labels it broadcasts") {
    // r_i = sum_{j,k} m_ik (d_ij + x_k): d is counted once per k, x once per j (the sum over
    // j named: x lacks it).
    std::vector<double> expected(I, 0.0);
    for (std::size_t i = 0; i < I; ++i)
      for (std::size_t j = 0; j < J; ++j)
        for (std::size_t k = 0; k < K; ++k) expected[i] += mv[i * K + k] * (dv[i * J + j] + xv[k]);
    check_everywhere([&](TD& r) { r("i") = m("i,k") * tenex::sum(d("i,j") + x("k"), "j"); }, expected);
    // A label the product contracts is no stray label of the sum: (d_ij + x_k) summed with m_ik
    // over k, into a target that keeps j.
    std::vector<double> kept(I * J, 0.0);
    for (std::size_t i = 0; i < I; ++i)
      for (std::size_t j = 0; j < J; ++j)
        for (std::size_t k = 0; k < K; ++k) kept[i * J + j] += mv[i * K + k] * (dv[i * J + j] + xv[k]);
    check_everywhere([&](TD& r) { r("i,j") = m("i,k") * (d("i,j") + x("k")); }, kept);
  }
}

TEST_CASE("summation rule: +=, -= and /= add what the plain assignment would write") {
  const std::size_t I = 4, J = 6;
  TD a = filled({I, J}, 21), b = filled({I}, 22), c0 = filled({I}, 23);
  const std::vector<double> av = a.to_vector(), bv = b.to_vector(), cv = c0.to_vector();
  std::vector<double> row_sum(I, 0.0), sum_with_b(I, 0.0);
  for (std::size_t i = 0; i < I; ++i)
    for (std::size_t j = 0; j < J; ++j) {
      row_sum[i] += av[i * J + j];
      sum_with_b[i] += av[i * J + j] + bv[i];
    }
  std::vector<double> added(I), subtracted(I), divided(I), multiplied(I);
  for (std::size_t i = 0; i < I; ++i) {
    added[i] = cv[i] + row_sum[i];
    subtracted[i] = cv[i] - sum_with_b[i];
    divided[i] = cv[i] / (row_sum[i] + 100.0);
    multiplied[i] = cv[i] * row_sum[i];
  }
  check_everywhere(
      [&](TD& r) {
        r = c0;
        r("i") += a("i,j");
      },
      added);
  check_everywhere(
      [&](TD& r) {
        r = c0;
        r("i") -= tenex::sum(a("i,j") + b("i"), "j");
      },
      subtracted);
  check_everywhere(
      [&](TD& r) {
        r = c0;
        r("i") /= tenex::sum(a("i,j") + 100.0 / static_cast<double>(J), "j");
      },
      divided);
  check_everywhere(
      [&](TD& r) {
        r = c0;
        r("i") *= a("i,j");
      },
      multiplied);
  // A label of the target stays a Hadamard label of a product on the right.
  std::vector<double> weighted(I);
  for (std::size_t i = 0; i < I; ++i) weighted[i] = cv[i] + row_sum[i] * bv[i];
  check_everywhere(
      [&](TD& r) {
        r = c0;
        r("i") += a("i,j") * b("i");
      },
      weighted);
  for (std::size_t i = 0; i < I; ++i) weighted[i] = cv[i] - 2.0 * row_sum[i] * bv[i];
  check_everywhere(
      [&](TD& r) {
        r = c0;
        r("i") -= 2.0 * (b("i") * a("i,j"));
      },
      weighted);
}

namespace {

/// `statement` throws ShapeError naming `label` and `term`, and leaves `r` as it was.
void check_stray(const std::function<void(TD&)>& statement, const std::string& label, const std::string& term) {
  TD r(Shape{2}, {7, 8});
  std::string message;
  try {
    statement(r);
  } catch (const tenex::ShapeError& e) {
    message = e.what();
  }
  CAPTURE(message);
  CHECK(message.find("\"" + label + "\"") != std::string::npos);
  CHECK(message.find(term) != std::string::npos);
  CHECK(message.find("tenex::sum") != std::string::npos);
  CHECK_FALSE(r.pending());
  CHECK(r.to_vector() == std::vector<double>{7, 8});
}

}  // namespace

TEST_CASE("summation rule: a label the target drops that some terms of a sum lack is a ShapeError") {
  const std::size_t I = 3, B = 2, C = 5, K = 4;
  TD f = filled({B, C}, 31), t = filled({I, C}, 32), x = filled({I, K}, 33), y = filled({I}, 34);
  TD a = filled({I, K}, 35), m = filled({I, K}, 36);
  // The statement: k is free in x and absent from f t.
  check_stray(
      [&](TD&) {
        TD r;
        r("i,b") = f("b,c") * t("i,c") + x("i,k");
      },
      "k", "(\"i,k\") {3, 4}");
  check_stray(
      [&](TD&) {
        TD r;
        r("i,b") = x("i,k") - f("b,c") * t("i,c");
      },
      "k", "(\"b,c,i\")");
  // The target itself, written to: nothing recorded, the old value kept.
  check_stray([&](TD& r) { r("i") = x("i,k") + y("i"); }, "k", "(\"i\") {3}");
  check_stray([&](TD& r) { r("i") += x("i,k") + y("i"); }, "k", "(\"i\") {3}");
  check_stray([&](TD& r) { r("i") -= y("i") - x("i,k"); }, "k", "(\"i\") {3}");
  check_stray([&](TD& r) { r("i") *= x("i,k") + y("i"); }, "k", "(\"i\") {3}");
  // A scalar is a term without labels.
  check_stray([&](TD& r) { r("i") = x("i,k") + 1.0; }, "k", "the scalar");
  check_stray([&](TD& r) { r("i") = 2.0 - x("i,k"); }, "k", "the scalar");
  // Nested sums, scales, permutations and products around the sum distribute the sum over it.
  check_stray([&](TD& r) { r("i") = (a("i,k") + y("i")) + x("i,k"); }, "k", "(\"i\") {3}");
  check_stray([&](TD& r) { r("i") = x("i,k") + (a("i,k") - y("i")); }, "k", "(\"i\") {3}");
  check_stray([&](TD& r) { r("i") = 3.0 * (x("i,k") + y("i")); }, "k", "(\"i\") {3}");
  check_stray([&](TD& r) { r("i") = (x("i,k") + y("i")) * y("i"); }, "k", "(\"i\") {3}");
  check_stray([&](TD& r) { r("i") = tenex::sum(a("i,k") + y("i"), "i") + y("i"); }, "k", "(\"i\")");
  // The explicit spellings of what the trap computed, and what a physicist meant.
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  std::vector<double> counted(I, 0.0), meant(I, 0.0);
  for (std::size_t i = 0; i < I; ++i) {
    meant[i] = yv[i];
    for (std::size_t k = 0; k < K; ++k) {
      counted[i] += xv[i * K + k] + yv[i];
      meant[i] += xv[i * K + k];
    }
  }
  check_everywhere([&](TD& r) { r("i") = tenex::sum(x("i,k") + y("i"), "k"); }, counted);
  check_everywhere([&](TD& r) { r("i") = tenex::sum(x("i,k"), "k") + y("i"); }, meant);
  check_everywhere(
      [&](TD& r) { r("i") = tenex::sum(3.0 * (x("i,k") + y("i")), "k") - 2.0 * tenex::sum(x("i,k") + y("i"), "k"); },
      counted, 1e-11);
  // A label two factors share is the product's own: m_ik (x_ik + y_i) contracted over k.
  std::vector<double> contracted(I, 0.0);
  const std::vector<double> mv = m.to_vector();
  for (std::size_t i = 0; i < I; ++i)
    for (std::size_t k = 0; k < K; ++k) contracted[i] += mv[i * K + k] * (xv[i * K + k] + yv[i]);
  check_everywhere([&](TD& r) { r("i") = m("i,k") * (x("i,k") + y("i")); }, contracted);
}

TEST_CASE("summation rule: the stray-label check leaves broadcasts that are no terms alone") {
  const std::size_t I = 4, K = 3;
  TD x = filled({I, K}, 41), y = filled({I}, 42), s(Shape{I, I});
  for (std::size_t i = 0; i < I; ++i) s.at(i, i) = 4.0 + static_cast<double>(i);
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  // A label every term carries: summed, no error.
  std::vector<double> both(I, 0.0);
  for (std::size_t i = 0; i < I; ++i)
    for (std::size_t k = 0; k < K; ++k) both[i] += xv[i * K + k] - 0.5 * xv[i * K + k];
  check_everywhere([&](TD& r) { r("i") = x("i,k") - 0.5 * x("i,k"); }, both);
  // A broadcast inside a decomposition's operand is the operand's value; the label the target
  // drops is summed after the decomposition: sum_j L(i,j) of cholesky(s + diag-broadcast y^2).
  TD shifted;
  shifted("i,j") = s("i,j") + 0.0 * y("i");
  TD l;
  l("i,j") = tenex::cholesky(shifted("i,j"));
  std::vector<double> rows(I, 0.0);
  for (std::size_t i = 0; i < I; ++i)
    for (std::size_t j = 0; j < I; ++j) rows[i] += l.at(i, j);
  check_everywhere([&](TD& r) { r("i") = tenex::cholesky(s("i,j") + 0.0 * y("i")); }, rows, 1e-12);
  // Shapes follow the same rule.
  Shape sx{4, 3}, sy{4}, out;
  CHECK_THROWS_AS(out("i") = sx("i,k") + sy("i"), tenex::ShapeError);
  out("i,k") = sx("i,k") + sy("i");
  CHECK(out == Shape{4, 3});
}
