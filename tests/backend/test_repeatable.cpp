// Results that must not change from run to run, whatever the pass list: statements whose
// element-wise kernels run on several threads with few rows (a whole array merged into one
// row), the shapes of three wrong results found by random programs (issue 29). Each runs
// four times in each configuration against plain loops; runs of one configuration agree
// bit for bit. Run by ctest with the machine's threads (2 on CI) and with OMP_NUM_THREADS=1.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;

template <class T>
tenex::Tensor<T> filled(Shape shape, unsigned seed) {
  tenex::Tensor<T> t(std::move(shape));
  tenex::fill_random(t, seed);
  return t;
}

template <class T>
void check_repeatable(const std::function<void(tenex::Tensor<T>&)>& statement, const std::vector<double>& expected,
                      double tolerance) {
  double scale = 1.0;
  for (double v : expected) scale = std::max(scale, std::abs(v));
  for (const char* passes : {"all", "none", "fuse", "cse,order,collapse"}) {
    ::setenv("TENEX_PASSES", passes, 1);
    for (const char* cache : {"1", "0"}) {
      ::setenv("TENEX_PLAN_CACHE", cache, 1);
      CAPTURE(passes);
      CAPTURE(cache);
      std::vector<T> first;
      for (int run = 0; run < 4; ++run) {
        CAPTURE(run);
        tenex::Tensor<T> r;
        statement(r);
        const std::vector<T> got = r.to_vector();
        REQUIRE(got.size() == expected.size());
        std::size_t wrong = 0;
        for (std::size_t x = 0; x < got.size(); ++x) {
          if (!(std::abs(static_cast<double>(got[x]) - expected[x]) <= tolerance * scale)) ++wrong;
        }
        CHECK(wrong == 0);
        if (run == 0) {
          first = got;
        } else {
          CHECK(got == first);
        }
      }
    }
  }
  ::unsetenv("TENEX_PASSES");
  ::unsetenv("TENEX_PLAN_CACHE");
}

}  // namespace

TEST_CASE("repeatable: a product chain through an element-wise function of a 6-mode operand") {
  using TD = tenex::Tensor<double>;
  TD e = filled<double>({3, 1}, 1), d = filled<double>({4, 3, 1}, 2), x = filled<double>({8}, 3),
     y = filled<double>({5}, 4);
  // B away from zero: its reciprocal stays of the same size as the other factors.
  std::vector<double> bv = filled<double>({8, 5, 3, 11, 3, 13}, 5).to_vector();
  for (double& v : bv) v = v < 0 ? v - 0.5 : v + 0.5;
  TD B(Shape{8, 5, 3, 11, 3, 13}, bv);
  const std::vector<double> ev = e.to_vector(), dv = d.to_vector(), xv = x.to_vector(), yv = y.to_vector();
  // R(i,k,j) = sum over c4..c8 of e(c5,c6) d(j,c4,c6) x(c7) y(c8) / B(c7,c8,c5,k,c4,i)
  std::vector<double> expected(13 * 11 * 4, 0.0);
  for (std::size_t i = 0; i < 13; ++i)
    for (std::size_t k = 0; k < 11; ++k)
      for (std::size_t j = 0; j < 4; ++j) {
        double s = 0.0;
        for (std::size_t c4 = 0; c4 < 3; ++c4)
          for (std::size_t c5 = 0; c5 < 3; ++c5)
            for (std::size_t c7 = 0; c7 < 8; ++c7)
              for (std::size_t c8 = 0; c8 < 5; ++c8) {
                const double bb = bv[((((c7 * 5 + c8) * 3 + c5) * 11 + k) * 3 + c4) * 13 + i];
                s += ev[c5] * dv[j * 3 + c4] * xv[c7] * yv[c8] / bb;
              }
        expected[(i * 11 + k) * 4 + j] = s;
      }
  check_repeatable<double>(
      [&](TD& r) {
        r("i,k,j") = (e("c5,c6") * d("j,c4,c6")) * ((x("c7") * y("c8")) * tenex::reciprocal(B("c7,c8,c5,k,c4,i")));
      },
      expected, 1e-10);
}

TEST_CASE("repeatable: a function of a whole array, then a sum over its rows") {
  using TD = tenex::Tensor<double>;
  for (std::size_t n : {64u, 200u, 300u}) {
    CAPTURE(n);
    TD B = filled<double>({n, n}, 7);
    const std::vector<double> bv = B.to_vector();
    std::vector<double> expected(n, 0.0);
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t i = 0; i < n; ++i) expected[i] += std::exp(bv[p * n + i]);
    check_repeatable<double>([&](TD& r) { r("i") = tenex::exp(B("p,i")); }, expected, 1e-12);
  }
}

TEST_CASE("repeatable: max_over of a function, then a sum (float)") {
  using TF = tenex::Tensor<float>;
  TF A = filled<float>({3, 13, 2, 5, 13, 8}, 9);
  const std::vector<float> av = A.to_vector();
  std::vector<double> expected(13 * 2 * 3, 0.0);
  for (std::size_t m = 0; m < 13; ++m)
    for (std::size_t l = 0; l < 2; ++l)
      for (std::size_t j = 0; j < 3; ++j) {
        double s = 0.0;
        for (std::size_t i = 0; i < 13; ++i) {
          double mx = -std::numeric_limits<double>::infinity();
          for (std::size_t c1 = 0; c1 < 5; ++c1)
            for (std::size_t c2 = 0; c2 < 8; ++c2) {
              const std::size_t at = ((((j * 13 + i) * 2 + l) * 5 + c1) * 13 + m) * 8 + c2;
              mx = std::max(mx, static_cast<double>(std::sqrt(std::abs(av[at]) + 0.5f)));
            }
          s += mx;
        }
        expected[(m * 2 + l) * 3 + j] = s;
      }
  check_repeatable<float>(
      [&](TF& r) { r("m,l,j") = tenex::max_over(tenex::sqrt(tenex::abs(A("j,i,l,c1,m,c2")) + 0.5f), "c1,c2"); },
      expected, 1e-5);
}
