// The element-wise algebra as users write it: functions, scalars on either side, max/min,
// user functions, reductions by label, *= and /=, their label semantics, their errors, and
// what the fusion pass makes of them (one kernel, no intermediates).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#include "support/environment_scope.hpp"
#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

template <class T>
Tensor<T> random(const Shape& shape, std::uint64_t seed) {
  Tensor<T> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

#define CHECK_CLOSE(got, expected)                                                           \
  do {                                                                                       \
    const double got_ = static_cast<double>(got), expected_ = static_cast<double>(expected); \
    CHECK(std::abs(got_ - expected_) <= tolerance<T>() * (1.0 + std::abs(expected_)));       \
  } while (false)

template <class T>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tenex::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("elementwise: labels a function drops are summed after it", T, elementwise_labels) {
  auto a = random<T>(Shape{3, 4}, 1), b = random<T>(Shape{4, 2}, 2);
  Tensor<T> rows, e;
  rows("i") = tenex::exp(a("i,j"));
  // A product inside a function is contracted first: exp of the matrix product.
  e("i,j") = tenex::exp(a("i,k") * b("k,j"));
  for (std::size_t i = 0; i < 3; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < 4; ++j) s += std::exp(double(a.at(i, j)));
    CHECK_CLOSE(rows.at(i), s);
    for (std::size_t j = 0; j < 2; ++j) {
      double p = 0;
      for (std::size_t k = 0; k < 4; ++k) p += double(a.at(i, k)) * double(b.at(k, j));
      CHECK_CLOSE(e.at(i, j), std::exp(p));
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(elementwise_labels, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("elementwise: scalars, *=, /= and chains of functions", T, elementwise_scalars) {
  auto a = random<T>(Shape{3, 4}, 3), d = random<T>(Shape{3}, 4);
  const auto a0 = a.to_vector();
  Tensor<T> r, s;
  // A denominator with a broadcast, and a Boltzmann-like factor.
  r("i,j") = 1.0 / (3.0 + a("i,j") - d("i"));
  s("j,i") = tenex::exp(-2.0 * tenex::square(a("i,j"))) * 0.5 + tenex::sqrt(tenex::abs(a("i,j")));
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      const double x = a.at(i, j);
      CHECK_CLOSE(r.at(i, j), 1.0 / (3.0 + x - double(d.at(i))));
      CHECK_CLOSE(s.at(j, i), std::exp(-2.0 * x * x) * 0.5 + std::sqrt(std::abs(x)));
    }
  }
  Tensor<T> m = a;
  m("i,j") *= d("i");  // Hadamard with a broadcast
  m("i,j") *= 2.0;
  m("i,j") /= (2.0 + d("i"));
  m("i,j") /= 4.0;
  m("i,j") += 1.0;
  m("i,j") -= 0.5;
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      const double x = a0[i * 4 + j], y = d.at(i);
      CHECK_CLOSE(m.at(i, j), x * y * 2.0 / (2.0 + y) / 4.0 + 0.5);
    }
  }
  CHECK(error_of<T>([&] { m("i,j") /= 0.0; }).find("by the scalar 0") != std::string::npos);
  CHECK_CLOSE(m.at(0, 0), a0[0] * double(d.at(0)) * 2.0 / (2.0 + double(d.at(0))) / 4.0 + 0.5);  // unchanged
}
TEST_CASE_TEMPLATE_APPLY(elementwise_scalars, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("elementwise: map, max, min and reductions by label", T, elementwise_reductions) {
  auto a = random<T>(Shape{3, 4, 2}, 5), b = random<T>(Shape{4}, 6);
  int calls_before = 0;
  Tensor<T> f, mx, s, mo, no;
  f("i,j,k") = tenex::map(a("i,j,k"), "cubic", [](T v) { return v * v * v - v; });
  mx("j,i") = tenex::max(tenex::min(a("i,j,k"), b("j")), -0.25 + 0.0 * b("j"));  // sums k after
  s("i") = tenex::sum(a("i,j,k"), "j,k");
  mo("k") = tenex::max_over(a("i,j,k"), "i,j");
  no("") = tenex::norm2(a("i,j,k"));
  double frob = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    double row = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      double mm = 0;
      for (std::size_t k = 0; k < 2; ++k) {
        const double v = a.at(i, j, k);
        CHECK_CLOSE(f.at(i, j, k), v * v * v - v);
        mm += std::max(std::min(v, double(b.at(j))), -0.25);
        row += v;
        frob += v * v;
      }
      CHECK_CLOSE(mx.at(j, i), mm);
    }
    CHECK_CLOSE(s.at(i), row);
  }
  for (std::size_t k = 0; k < 2; ++k) {
    double m = -1e300;
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 4; ++j) m = std::max(m, double(a.at(i, j, k)));
    }
    CHECK(mo.at(k) == static_cast<T>(m));
  }
  CHECK_CLOSE(no.at(), std::sqrt(frob));
  (void)calls_before;
  // What the expressions say about themselves.
  CHECK(tenex::exp(a("i,j,k")).function() == "exp(x0)");
  CHECK(tenex::power(a("i,j,k"), 0.5).function() == "pow(x0, 0.5)");
  CHECK((a("i,j,k") + 3.0).function() == "(x0 + 3)");
  CHECK((2.0 - a("i,j,k")).function() == "(2 - x0)");
  CHECK(tenex::map(a("i,j,k"), "erf", [](T v) { return v; }).function() == "erf(x0)");
  CHECK(tenex::sum(a("i,j,k"), "k,i").reduced() == std::vector<std::string>{"k", "i"});
  CHECK(tenex::max_over(a("i,j,k"), "k").op() == tenex::ReduceOp::max);
  CHECK(tenex::max_over(a("i,j,k"), "k").labels() == std::vector<std::string>{"i", "j"});
}
TEST_CASE_TEMPLATE_APPLY(elementwise_reductions, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("elementwise: bad input throws at the statement and changes nothing", T, elementwise_errors) {
  auto a = random<T>(Shape{3, 4}, 7), b = random<T>(Shape{5}, 8);
  const auto before = a.to_vector();
  std::string text = error_of<T>([&] { (void)tenex::sum(a("i,j"), "j,z"); });
  CHECK(text.find("sum over \"j,z\"") != std::string::npos);
  CHECK(text.find("label \"z\" is not a label of (\"i,j\") {3, 4}") != std::string::npos);
  text = error_of<T>([&] { (void)tenex::max_over(a("i,j"), "j,j"); });
  CHECK(text.find("max_over over \"j,j\": label \"j\" is given twice") != std::string::npos);
  text = error_of<T>([&] { (void)tenex::clamp(a("i,j"), 1.0, -1.0); });
  CHECK(text.find("clamp of (\"i,j\") {3, 4}: the lower bound") != std::string::npos);
  text = error_of<T>([&] { (void)tenex::max(a("i,j"), b("j")); });
  CHECK(text.find("max: label \"j\" has extent 4 in (\"i,j\") {3, 4} but extent 5 in (\"j\") {5}") !=
        std::string::npos);
  text = error_of<T>([&] { a("i,j") *= b("j"); });
  CHECK(text.find("label \"j\"") != std::string::npos);
  text = error_of<T>([&] { a("i,j") = a("i,j") + 1.0 + tenex::min(a("i,j"), b("i")); });
  CHECK(text.find("min: label \"i\" has extent 3") != std::string::npos);
  CHECK_THROWS_AS((void)tenex::sum(a("i,j"), "z"), tenex::ShapeError);
  CHECK(a.to_vector() == before);
  CHECK_FALSE(a.pending());
}
TEST_CASE_TEMPLATE_APPLY(elementwise_errors, tenex_test::Scalars);

TEST_CASE("elementwise: shapes compose through the functions") {
  Shape s{2, 3}, r, t;
  r("j,i") = tenex::exp(s("i,j")) + 1.0;
  t("i") = tenex::max_over(s("i,j"), "j");
  CHECK(r == Shape{3, 2});
  CHECK(t == Shape{2});
}

TEST_CASE_TEMPLATE_DEFINE("elementwise: a region is one kernel and allocates no intermediate", T, elementwise_fused) {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  const std::size_t n = 64, m = 48;
  auto a = random<T>(Shape{n, m}, 9), b = random<T>(Shape{m, n}, 10), c = random<T>(Shape{n, m}, 11);
  Tensor<T> d(Shape{n});
  for (std::size_t i = 0; i < n; ++i) d.at(i) = static_cast<T>(2.0 + double(i));
  Tensor<T> r;
  // The plan says so before it runs: one fused step, its program, its flops.
  const std::string plan = tenex::explain(a("i,j") + 2.0 * b("j,i") - c("i,j") / d("i"));
  INFO(plan);
  CHECK(plan.find("fused") != std::string::npos);
  CHECK(plan.find("x0") != std::string::npos);
  CHECK(plan.find("1 kernel") != std::string::npos);
  r("i,j") = a("i,j") + 2.0 * b("j,i") - c("i,j") / d("i");
  tenex::RunStats stats = tenex::last_run_stats();
  CHECK(stats.kernels == 1);
  CHECK(stats.peak_bytes <= n * m * sizeof(T));  // the result's buffer, handed to r
  for (std::size_t i = 0; i < n; i += 7) {
    for (std::size_t j = 0; j < m; j += 5) {
      CHECK_CLOSE(r.at(i, j), double(a.at(i, j)) + 2.0 * double(b.at(j, i)) - double(c.at(i, j)) / double(d.at(i)));
    }
  }
  // The MP2 tail: one pass over v, reducing to a scalar.
  auto t = random<T>(Shape{4, 6, 4, 6}, 12), v = random<T>(Shape{4, 6, 4, 6}, 13);
  Tensor<T> e;
  e("") = t("i,a,j,b") * (2.0 * v("i,a,j,b") - v("i,b,j,a"));
  stats = tenex::last_run_stats();
  CHECK(stats.kernels == 1);
  CHECK(stats.peak_bytes <= 64);  // one scalar, in one 64-byte block
  double expected = 0;
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t a1 = 0; a1 < 6; ++a1)
      for (std::size_t j = 0; j < 4; ++j)
        for (std::size_t b1 = 0; b1 < 6; ++b1)
          expected += double(t.at(i, a1, j, b1)) * (2.0 * double(v.at(i, a1, j, b1)) - double(v.at(i, b1, j, a1)));
  CHECK(std::abs(double(e.at()) - expected) <= 100 * tolerance<T>() * (1.0 + std::abs(expected)));
  // Large enough to run on every thread, with a transposed operand and a reduction per row.
  const std::size_t big = 300;
  auto x = random<T>(Shape{big, big}, 14);
  Tensor<T> rowmax, total;
  rowmax("i") = tenex::max_over(x("i,j") - x("j,i"), "j");
  total("") = tenex::sum(tenex::square(x("i,j") + x("j,i")), "i,j");
  double sum = 0;
  for (std::size_t i = 0; i < big; ++i) {
    double mm = -1e300;
    for (std::size_t j = 0; j < big; ++j) {
      mm = std::max(mm, double(x.at(i, j)) - double(x.at(j, i)));
      const double s = double(x.at(i, j)) + double(x.at(j, i));
      sum += s * s;
    }
    CHECK(double(rowmax.at(i)) == doctest::Approx(mm).epsilon(tolerance<T>()));
  }
  CHECK(double(total.at()) == doctest::Approx(sum).epsilon(std::is_same_v<T, float> ? 1e-4 : 1e-10));
}
TEST_CASE_TEMPLATE_APPLY(elementwise_fused, tenex_test::Scalars);

TEST_CASE("elementwise: cast between float and double inside an expression") {
  auto f = random<float>(Shape{3, 4}, 20), g = random<float>(Shape{4, 2}, 21);
  auto d = random<double>(Shape{3, 2}, 22);
  Tensor<double> r;
  Tensor<float> back, pending_source;
  r("i,j") = tenex::cast<double>(f("i,k") * g("k,j")) + d("i,j");
  back("j,i") = tenex::cast<float>(2.0 * d("i,j"));
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 2; ++j) {
      double p = 0;
      for (std::size_t k = 0; k < 4; ++k) p += double(f.at(i, k)) * double(g.at(k, j));
      CHECK(r.at(i, j) == doctest::Approx(p + d.at(i, j)).epsilon(1e-5));
      CHECK(back.at(j, i) == static_cast<float>(2.0 * d.at(i, j)));
    }
  }
  // A pending float result, cast in a later double statement: read when that one runs.
  Tensor<double> later;
  {
    pending_source("i,j") = f("i,j") + f("i,j");
    auto as_double = tenex::cast<double>(pending_source("i,j"));
    later("i,j") = as_double * 0.5;
  }
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) CHECK(later.at(i, j) == double(f.at(i, j)));
  }
  // An error of the operand's set reaches the reader of the cast.
  Tensor<float> not_spd(Shape{2, 2}, {1.0f, 2.0f, 2.0f, 1.0f});
  Tensor<double> l;
  l("i,j") = tenex::cast<double>(tenex::cholesky(not_spd("i,j")));
  CHECK_THROWS_AS((void)l.at(0, 0), tenex::NumericalError);
  CHECK_THROWS_AS((void)l.at(0, 0), tenex::NumericalError);
  // Labels and shapes are the operand's.
  auto c = tenex::cast<double>(f("i,k") * g("k,j"));
  CHECK(c.labels() == std::vector<std::string>{"i", "j"});
  CHECK(c.extents() == std::vector<std::size_t>{3, 2});
}
