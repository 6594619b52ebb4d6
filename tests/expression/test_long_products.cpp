// Products built factor by factor in a loop, as long as a user's program makes them: a
// Hadamard product of fifty thousand vectors (left and right associated; the ordering pass
// once recursed per factor and overflowed the stack from 35,000) is ordered, evaluated and
// destroyed without recursion, and a chain of a thousand matrices is written, ordered and
// evaluated exactly. Each is checked against plain loops.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using TD = tenex::Tensor<double>;

/// Factors near one, so that a product of 10^5 of them stays finite: 1 + 1e-6 * (k mod 7).
std::vector<TD> near_one_vectors(std::size_t count, std::size_t n) {
  std::vector<TD> x;
  x.reserve(count);
  for (std::size_t k = 0; k < count; ++k) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 1.0 + 1e-6 * static_cast<double>((k + i) % 7);
    x.emplace_back(Shape{n}, std::move(v));
  }
  return x;
}

std::vector<double> hadamard_reference(const std::vector<TD>& x, std::size_t n) {
  std::vector<double> p(n, 1.0);
  for (const TD& t : x)
    for (std::size_t i = 0; i < n; ++i) p[i] *= t.at(i);
  return p;
}

void check_close(const std::vector<double>& got, const std::vector<double>& expected, double tol) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - expected[i]) <= tol * std::abs(expected[i]));
  }
}

}  // namespace

TEST_CASE("long products: a Hadamard product of 50,000 vectors built in a loop") {
  const std::size_t count = 50000, n = 3;
  std::vector<TD> x = near_one_vectors(count, n);
  const std::vector<double> expected = hadamard_reference(x, n);
  SUBCASE("left associated: p = p * x[k]") {
    TD r;
    {
      tenex::Multiplication<TD> p = x[0]("i") * x[1]("i");
      for (std::size_t k = 2; k < count; ++k) p = p * x[k]("i");
      r("i") = p;
    }
    check_close(r.to_vector(), expected, 1e-9);
  }
  SUBCASE("right associated: p = x[k] * p") {
    TD r;
    {
      tenex::Multiplication<TD> p = x[count - 2]("i") * x[count - 1]("i");
      for (std::size_t k = count - 2; k-- > 0;) p = x[k]("i") * p;
      r("i") = p;
    }
    check_close(r.to_vector(), expected, 1e-9);
  }
  SUBCASE("summed to a scalar, and dropped unevaluated") {
    TD r;
    {
      tenex::Multiplication<TD> p = x[0]("i") * x[1]("i");
      for (std::size_t k = 2; k < count; ++k) p = p * x[k]("i");
      r("") = p;
      tenex::Multiplication<TD> unused = x[0]("i") * x[1]("i");
      for (std::size_t k = 2; k < count; ++k) unused = x[k]("i") * unused;
    }
    check_close(r.to_vector(), {expected[0] + expected[1] + expected[2]}, 1e-9);
  }
}

TEST_CASE("long products: a chain of 1,000 matrices is written and ordered exactly") {
  // M_k = [[1, e_k], [0, 1]]: the product is [[1, sum e_k], [0, 1]], exact in binary for
  // e_k = k mod 4 / 4.
  const std::size_t count = 1000;
  std::vector<TD> m;
  m.reserve(count);
  double total = 0.0;
  for (std::size_t k = 0; k < count; ++k) {
    const double e = static_cast<double>(k % 4) / 4.0;
    total += e;
    m.emplace_back(Shape{2, 2}, std::vector<double>{1.0, e, 0.0, 1.0});
  }
  TD r;
  {
    tenex::Multiplication<TD> p = m[0]("l0,l1") * m[1]("l1,l2");
    for (std::size_t k = 2; k < count; ++k) {
      p = p * m[k]("l" + std::to_string(k) + ",l" + std::to_string(k + 1));
    }
    r("l0,l" + std::to_string(count)) = p;
  }
  CHECK(r.to_vector() == std::vector<double>{1.0, total, 0.0, 1.0});
}
