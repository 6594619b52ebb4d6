// Sets and expressions of tens of thousands of parts (issue 29): many statements through one
// open set, and sums built term by term in a loop, evaluated and checked against plain loops.
// The assertions are on values; a regression to quadratic work shows as a test that takes
// minutes instead of a fraction of a second (the times are in bench/bench_scale.cpp).
#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::Tensor;

/// Small integers: every sum below is exact in double, so results compare with ==.
Tensor<double> integers(std::vector<std::size_t> extents, int seed) {
  Tensor<double> t{Shape(std::move(extents))};
  double* d = t.data();
  for (std::size_t i = 0; i < t.shape().size(); ++i)
    d[i] = static_cast<double>((seed * 7 + static_cast<int>(i) * 3) % 5 - 2);
  return t;
}

}  // namespace

TEST_CASE("scale: 20,000 += statements through one open set read one named product") {
  constexpr std::size_t n = 20000, d = 3;
  Tensor<double> a = integers({d, d}, 1), b = integers({d, d}, 2), acc = integers({d, d}, 3);
  const std::vector<double> av = a.to_vector(), bv = b.to_vector(), start = acc.to_vector();
  {
    auto h = a("i,k") * b("k,j");  // one node, read by every statement of the set
    for (std::size_t s = 0; s < n; ++s) acc("i,j") += h;
  }
  std::vector<double> expected = start;
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      double p = 0;
      for (std::size_t k = 0; k < d; ++k) p += av[i * d + k] * bv[k * d + j];
      for (std::size_t s = 0; s < n; ++s) expected[i * d + j] += p;
    }
  }
  CHECK(acc.to_vector() == expected);
}

TEST_CASE("scale: 10,000 statements, each reading the result of the one before") {
  constexpr std::size_t n = 10000, d = 4;
  Tensor<double> x = integers({d}, 1), y = integers({d}, 2);
  std::vector<Tensor<double>> r(4);
  {
    auto yi = y("i");  // keeps the statements in one set
    r[0]("i") = x("i") + yi;
    for (std::size_t s = 1; s < n; ++s) r[s % 4]("i") = r[(s - 1) % 4]("i") - yi + x("i");
  }
  const std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  std::vector<double> expected(d);
  for (std::size_t i = 0; i < d; ++i) expected[i] = xv[i] + yv[i] + static_cast<double>(n - 1) * (xv[i] - yv[i]);
  CHECK(r[(n - 1) % 4].to_vector() == expected);
}

TEST_CASE("scale: a sum of 20,000 terms built in a loop, of one tensor and of many") {
  constexpr std::size_t n = 20000, d = 5;
  std::vector<Tensor<double>> x;
  for (int k = 0; k < 64; ++k) x.push_back(integers({d}, k));
  for (const std::size_t distinct : {std::size_t{1}, x.size()}) {
    CAPTURE(distinct);
    Tensor<double> r;
    {
      auto sum = x[0]("i") + x[1 % distinct]("i");
      for (std::size_t k = 2; k < n; ++k) sum = sum + x[k % distinct]("i");
      r("i") = sum;
    }
    std::vector<double> expected(d, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
      const std::vector<double> v = x[k % distinct].to_vector();
      for (std::size_t i = 0; i < d; ++i) expected[i] += v[i];
    }
    CHECK(r.to_vector() == expected);
  }
}

TEST_CASE("scale: a long sum of scaled terms, one of them a product read by every other term") {
  constexpr std::size_t n = 5000, d = 3;
  Tensor<double> a = integers({d, d}, 4), v = integers({d}, 5);
  Tensor<double> r;
  {
    auto av = a("i,j") * v("j");
    auto sum = av + -1.0 * v("i");
    for (std::size_t k = 1; k < n; ++k) sum = k % 2 ? sum + 2.0 * av : sum + -1.0 * v("i");
    r("i") = sum;
  }
  const std::vector<double> am = a.to_vector(), vv = v.to_vector();
  std::vector<double> expected(d);
  for (std::size_t i = 0; i < d; ++i) {
    double p = 0;
    for (std::size_t j = 0; j < d; ++j) p += am[i * d + j] * vv[j];
    // k = 0: av - v; odd k (2500 of them): + 2 av; even k > 0 (2499): - v.
    expected[i] = p - vv[i] + 2500.0 * 2.0 * p - 2499.0 * vv[i];
  }
  CHECK(r.to_vector() == expected);
}

TEST_CASE("scale: deep expressions build, evaluate and die without recursion") {
  Tensor<double> a(Shape{2}, {1, 2}), c;
  {
    tenex::Addition<Tensor<double>> sum = a("i") + a("i");
    for (int n = 2; n < 10000; ++n) sum = sum + a("i");
    c("i") = sum;
  }
  CHECK(c.at(0) == doctest::Approx(10000.0));
  CHECK(c.at(1) == doctest::Approx(20000.0));
  // A million-term expression dropped unevaluated.
  {
    tenex::Addition<Tensor<double>> sum = a("i") + a("i");
    for (int n = 2; n < 1000000; ++n) sum = sum + a("i");
  }
  CHECK(a.at(1) == 2.0);
}

TEST_CASE("scale: a set kept open by one handle records many statements") {
  Tensor<double> a(Shape{4}, {1, 2, 3, 4}), c;
  auto h = a("i");
  for (int n = 0; n < 16000; ++n) c("i") = 0.5 * a("i") + h;
  CHECK(c.at(3) == 6.0);
}
