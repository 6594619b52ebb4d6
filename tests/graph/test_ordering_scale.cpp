// Ordering of long products (passes::order_contractions with the greedy ordering beyond ten
// factors): products of a thousand factors built in a loop are evaluated correctly, checked
// against a reference computed factor by factor. Speed is measured in bench/bench_ordering.cpp,
// not here.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

// Appended, not "i" + std::to_string(k): GCC 12 inlines that operator+ into a false -Wrestrict
// warning in the Release build (GCC bug 105329).
std::string label(std::size_t k) {
  std::string text(1, 'i');
  text += std::to_string(k);
  return text;
}

/// A rotation by `angle`: products of them stay of norm one whatever their number.
template <class T>
Tensor<T> rotation(double angle) {
  return Tensor<T>(Shape{2, 2}, {T(std::cos(angle)), T(-std::sin(angle)), T(std::sin(angle)), T(std::cos(angle))});
}

double angle_of(std::size_t k) {
  return 0.001 + 0.37 * static_cast<double>(k % 17) - 0.05 * static_cast<double>(k % 5);
}

template <class T>
double tolerance() {
  return sizeof(T) == sizeof(float) ? 2e-3 : 1e-9;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("ordering at scale: a chain of 1000 rotations applied to a vector", T, chain_1000) {
  constexpr std::size_t n = 1000;
  std::vector<Tensor<T>> m;
  for (std::size_t k = 0; k < n; ++k) m.push_back(rotation<T>(angle_of(k)));
  Tensor<T> x(Shape{2}, {T(0.6), T(-0.8)});
  // x(i0) m0(i0,i1) m1(i1,i2) ... built in a loop, as one product.
  tenex::Multiplication<Tensor<T>> product = x(label(0)) * m[0](label(0) + "," + label(1));
  for (std::size_t k = 1; k < n; ++k) product = product * m[k](label(k) + "," + label(k + 1));
  Tensor<T> result;
  result(label(n)) = product;

  // The reference, factor by factor: v(j) = sum_i v(i) m(i,j).
  std::vector<double> v{0.6, -0.8};
  for (std::size_t k = 0; k < n; ++k) {
    const Tensor<T>& r = m[k];
    v = {v[0] * double(r.at(0, 0)) + v[1] * double(r.at(1, 0)), v[0] * double(r.at(0, 1)) + v[1] * double(r.at(1, 1))};
  }
  REQUIRE(result.shape() == Shape{2});
  CHECK(std::abs(double(result.at(0)) - v[0]) <= tolerance<T>());
  CHECK(std::abs(double(result.at(1)) - v[1]) <= tolerance<T>());
  // Every factor was contracted once: the n products of 2 x 2 by vectors or matrices.
  CHECK(tenex::last_run_stats().flops > 0);
}
TEST_CASE_TEMPLATE_APPLY(chain_1000, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("ordering at scale: the trace of a ring of 1000 rotations", T, ring_1000) {
  constexpr std::size_t n = 1000;
  std::vector<Tensor<T>> m;
  double total = 0;
  for (std::size_t k = 0; k < n; ++k) {
    m.push_back(rotation<T>(angle_of(k)));
    total += angle_of(k);
  }
  tenex::Multiplication<Tensor<T>> product = m[0](label(0) + "," + label(1)) * m[1](label(1) + "," + label(2));
  for (std::size_t k = 2; k < n; ++k) product = product * m[k](label(k) + "," + (k + 1 == n ? label(0) : label(k + 1)));
  Tensor<T> trace;
  trace("") = product;
  // The product of rotations is the rotation by the sum of the angles.
  CHECK(std::abs(double(trace.at()) - 2 * std::cos(total)) <= 2 * tolerance<T>());
}
TEST_CASE_TEMPLATE_APPLY(ring_1000, tenex_test::Scalars);

TEST_CASE("ordering at scale: a chain of 1000 matrices of mixed sizes against factor-by-factor loops") {
  constexpr std::size_t n = 1000;
  std::vector<std::size_t> extent(n + 1);
  for (std::size_t k = 0; k <= n; ++k) extent[k] = 2 + (k * 7) % 3;  // 2, 3 or 4
  std::vector<Tensor<double>> m;
  for (std::size_t k = 0; k < n; ++k) {
    Tensor<double> f(Shape{extent[k], extent[k + 1]});
    tenex::fill_random(f, 100 + k);
    // Entries of variance about 1/extent keep the norm of the running product near one.
    const double s = std::sqrt(3.0 / static_cast<double>(extent[k]));
    for (std::size_t i = 0; i < extent[k]; ++i) {
      for (std::size_t j = 0; j < extent[k + 1]; ++j) f.at(i, j) *= s;
    }
    m.push_back(std::move(f));
  }
  Tensor<double> x(Shape{extent[0]});
  tenex::fill_random(x, 99);
  tenex::Multiplication<Tensor<double>> product = x(label(0)) * m[0](label(0) + "," + label(1));
  for (std::size_t k = 1; k < n; ++k) product = product * m[k](label(k) + "," + label(k + 1));
  Tensor<double> result;
  result(label(n)) = product;

  std::vector<double> v = x.to_vector();
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<double> next(extent[k + 1], 0.0);
    for (std::size_t i = 0; i < extent[k]; ++i) {
      for (std::size_t j = 0; j < extent[k + 1]; ++j) next[j] += v[i] * m[k].at(i, j);
    }
    v = next;
  }
  double scale = 0;
  for (double e : v) scale = std::max(scale, std::abs(e));
  REQUIRE(scale > 0);
  REQUIRE(result.size() == v.size());
  for (std::size_t j = 0; j < v.size(); ++j) CHECK(std::abs(result.at(j) - v[j]) <= 1e-9 * scale);
}

TEST_CASE("ordering at scale: a Hadamard product of 4000 vectors, every factor holding the one label") {
  // Every pair of factors shares the label: the greedy ordering must not weigh each pair.
  constexpr std::size_t n = 4000, d = 3;
  std::vector<Tensor<double>> x;
  for (std::size_t k = 0; k < n; ++k) {
    x.emplace_back(Shape{d});
    for (std::size_t i = 0; i < d; ++i) x.back().at(i) = 1.0 + 0.001 * std::sin(static_cast<double>(k * d + i));
  }
  tenex::Multiplication<Tensor<double>> product = x[0]("i") * x[1]("i");
  for (std::size_t k = 2; k < n; ++k) product = product * x[k]("i");
  Tensor<double> result;
  result("i") = product;
  for (std::size_t i = 0; i < d; ++i) {
    double expected = 1;
    for (std::size_t k = 0; k < n; ++k) expected *= x[k].at(i);
    CHECK(std::abs(result.at(i) - expected) <= 1e-12 * expected);
  }
}

TEST_CASE("ordering at scale: 2000 diagonals of one matrix, summed once over their one label") {
  // m("i,i") read 2000 times in one product: sum_i prod_k m(i,i) = sum_i m(i,i)^2000.
  constexpr std::size_t n = 2000, d = 4;
  Tensor<double> m(Shape{d, d});
  tenex::fill_random(m, 7);
  for (std::size_t i = 0; i < d; ++i) m.at(i, i) = 1.0 + 0.0001 * static_cast<double>(i);
  tenex::Multiplication<Tensor<double>> product = m("i,i") * m("i,i");
  for (std::size_t k = 2; k < n; ++k) product = product * m("i,i");
  Tensor<double> result;
  result("") = product;
  double expected = 0;
  for (std::size_t i = 0; i < d; ++i) expected += std::pow(m.at(i, i), static_cast<double>(n));
  CHECK(std::abs(result.at() - expected) <= 1e-12 * expected);
}
