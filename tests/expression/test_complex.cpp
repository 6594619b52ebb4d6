// Complex tensors as users write them: Einstein products (cgemm/zgemm) with conj on every
// operand position, sums, permutations, complex scalars, element-wise functions, the real
// values of a complex expression (real, imag, abs, arg, norm2), casts from real, user
// functions, and the errors of what complex numbers do not have (an order). Every result is
// compared with naive loops in std::complex, with the passes on and off and at one and two
// threads.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

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
  return std::is_same_v<typename T::value_type, float> ? 2e-5 : 1e-12;
}

// |got - expected| within the tolerance, relative to the reference's size.
template <class T>
bool near(T got, std::complex<double> expected, double scale = 1.0) {
  const std::complex<double> g(static_cast<double>(got.real()), static_cast<double>(got.imag()));
  return std::abs(g - expected) <= tolerance<T>() * (scale + std::abs(expected));
}

template <class T>
std::complex<double> wide(T v) {
  return {static_cast<double>(v.real()), static_cast<double>(v.imag())};
}

// The settings a result must not depend on.
struct Setting {
  const char* passes;
  const char* threads;
};
const Setting kSettings[] = {{"all", "2"}, {"none", "1"}, {"all", "1"}};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tenex::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("complex: matrix products with conj on either operand agree with loops", T,
                          complex_products) {
  const std::size_t m = 7, k = 5, n = 6;
  const Tensor<T> a = random<T>({m, k}, 1), b = random<T>({k, n}, 2), bt = random<T>({n, k}, 3);
  for (const Setting& s : kSettings) {
    CAPTURE(s.passes);
    CAPTURE(s.threads);
    EnvironmentScope passes("TENEX_PASSES", s.passes);
    EnvironmentScope threads("OMP_NUM_THREADS", s.threads);
    for (int variant = 0; variant < 6; ++variant) {
      CAPTURE(variant);
      Tensor<T> c;
      Tensor<T> x = a, y = b, yt = bt;
      switch (variant) {
        case 0: c("i,j") = x("i,k") * y("k,j"); break;
        case 1: c("i,j") = tenex::conj(x("i,k")) * y("k,j"); break;
        case 2: c("i,j") = x("i,k") * tenex::conj(y("k,j")); break;
        case 3: c("i,j") = tenex::conj(x("i,k")) * tenex::conj(y("k,j")); break;
        case 4: c("i,j") = tenex::conj(x("i,k")) * yt("j,k"); break;   // b transposed
        default: c("j,i") = x("i,k") * tenex::conj(yt("j,k")); break;  // c transposed too
      }
      for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          std::complex<double> sum = 0;
          for (std::size_t p = 0; p < k; ++p) {
            std::complex<double> u = wide(a.at(i, p));
            std::complex<double> v = variant >= 4 ? wide(bt.at(j, p)) : wide(b.at(p, j));
            if (variant == 1 || variant == 3 || variant == 4) u = std::conj(u);
            if (variant == 2 || variant == 3 || variant == 5) v = std::conj(v);
            sum += u * v;
          }
          const T got = variant == 5 ? c.at(j, i) : c.at(i, j);
          CHECK(near(got, sum, 4.0));
        }
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(complex_products, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("complex: products of three factors with permutations and conj", T, complex_three) {
  // r(i,l) = sum over j,k of conj(a(j,i)) b(j,k,l) conj(c(l,k)) -- conj on the first and last
  // factor, every operand read permuted.
  const std::size_t I = 4, J = 5, K = 3, L = 6;
  const Tensor<T> a = random<T>({J, I}, 11), b = random<T>({J, K, L}, 12), c = random<T>({L, K}, 13);
  for (const Setting& s : kSettings) {
    CAPTURE(s.passes);
    EnvironmentScope passes("TENEX_PASSES", s.passes);
    EnvironmentScope threads("OMP_NUM_THREADS", s.threads);
    Tensor<T> x = a, y = b, z = c, r, q;
    r("i,l") = tenex::conj(x("j,i")) * y("j,k,l") * tenex::conj(z("l,k"));
    q("l,i") = x("j,i") * tenex::conj(y("j,k,l")) * z("l,k");  // the middle one
    for (std::size_t i = 0; i < I; ++i) {
      for (std::size_t l = 0; l < L; ++l) {
        std::complex<double> sum_r = 0, sum_q = 0;
        for (std::size_t j = 0; j < J; ++j) {
          for (std::size_t k = 0; k < K; ++k) {
            sum_r += std::conj(wide(a.at(j, i))) * wide(b.at(j, k, l)) * std::conj(wide(c.at(l, k)));
            sum_q += wide(a.at(j, i)) * std::conj(wide(b.at(j, k, l))) * wide(c.at(l, k));
          }
        }
        CHECK(near(r.at(i, l), sum_r, 8.0));
        CHECK(near(q.at(l, i), sum_q, 8.0));
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(complex_three, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("complex: sums, permutations, Hadamard products and complex scalars", T, complex_linear) {
  using C = std::complex<double>;
  const Tensor<T> a = random<T>({3, 4, 5}, 21), b = random<T>({5, 3, 4}, 22);
  for (const Setting& s : kSettings) {
    CAPTURE(s.passes);
    EnvironmentScope passes("TENEX_PASSES", s.passes);
    EnvironmentScope threads("OMP_NUM_THREADS", s.threads);
    Tensor<T> x = a, y = b, sum, perm, had, scaled, divided, mixed;
    sum("j") = x("i,j,k");
    perm("k,i,j") = C(0, 1) * x("i,j,k") + 2.0 * y("k,i,j");
    had("i,j,k") = x("i,j,k") * tenex::conj(y("k,i,j"));
    scaled("i,j,k") = x("i,j,k") * C(1.5, -2.0);
    divided("i,j,k") = x("i,j,k") / C(0.0, 2.0);
    mixed("i") = C(0.5, 0.25) * (x("i,j,k") - y("k,i,j"));
    for (std::size_t j = 0; j < 4; ++j) {
      C total = 0;
      for (std::size_t i = 0; i < 3; ++i) {
        for (std::size_t k = 0; k < 5; ++k) total += wide(a.at(i, j, k));
      }
      CHECK(near(sum.at(j), total, 4.0));
    }
    for (std::size_t i = 0; i < 3; ++i) {
      C row = 0;
      for (std::size_t j = 0; j < 4; ++j) {
        for (std::size_t k = 0; k < 5; ++k) {
          const C u = wide(a.at(i, j, k)), v = wide(b.at(k, i, j));
          CHECK(near(perm.at(k, i, j), C(0, 1) * u + 2.0 * v));
          CHECK(near(had.at(i, j, k), u * std::conj(v)));
          CHECK(near(scaled.at(i, j, k), u * C(1.5, -2.0)));
          CHECK(near(divided.at(i, j, k), u / C(0.0, 2.0)));
          row += u - v;
        }
      }
      CHECK(near(mixed.at(i), C(0.5, 0.25) * row, 4.0));
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(complex_linear, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("complex: element-wise functions agree with std::complex", T, complex_functions) {
  using C = std::complex<double>;
  const Tensor<T> a = random<T>({6, 7}, 31);
  for (const Setting& s : kSettings) {
    CAPTURE(s.passes);
    EnvironmentScope passes("TENEX_PASSES", s.passes);
    EnvironmentScope threads("OMP_NUM_THREADS", s.threads);
    Tensor<T> x = a;
    std::vector<Tensor<T>> r(10);
    r[0]("i,j") = tenex::exp(x("i,j"));
    r[1]("i,j") = tenex::log(x("i,j"));
    r[2]("i,j") = tenex::sqrt(x("i,j"));
    r[3]("i,j") = tenex::sin(x("i,j")) + tenex::cos(x("i,j"));
    r[4]("i,j") = tenex::tanh(x("i,j"));
    r[5]("i,j") = tenex::square(x("i,j")) - tenex::reciprocal(x("i,j"));
    r[6]("i,j") = tenex::power(x("i,j"), 1.5);
    r[7]("i,j") = tenex::conj(x("i,j")) * x("i,j");  // |z|^2 + 0i
    r[8]("i,j") = tenex::map(x("i,j"), "times i", [](T v) { return v * T(0, 1); });
    r[9]("i") = tenex::exp(x("i,j")) * tenex::conj(x("i,j"));  // summed over j after the function
    for (std::size_t i = 0; i < 6; ++i) {
      C row = 0;
      for (std::size_t j = 0; j < 7; ++j) {
        const C z = wide(a.at(i, j));
        CHECK(near(r[0].at(i, j), std::exp(z)));
        CHECK(near(r[1].at(i, j), std::log(z)));
        CHECK(near(r[2].at(i, j), std::sqrt(z)));
        CHECK(near(r[3].at(i, j), std::sin(z) + std::cos(z)));
        CHECK(near(r[4].at(i, j), std::tanh(z)));
        CHECK(near(r[5].at(i, j), z * z - 1.0 / z, 10.0));
        CHECK(near(r[6].at(i, j), std::pow(z, 1.5)));
        CHECK(near(r[7].at(i, j), C(std::norm(z), 0.0)));
        CHECK(near(r[8].at(i, j), z * C(0, 1)));
        row += std::exp(z) * std::conj(z);
      }
      CHECK(near(r[9].at(i), row, 8.0));
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(complex_functions, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("complex: real, imag, abs, arg and norm2 are real; cast makes complex", T, complex_parts) {
  using R = typename T::value_type;
  const Tensor<T> a = random<T>({4, 5}, 41);
  const Tensor<R> h = random<R>({4, 5}, 42);
  for (const Setting& s : kSettings) {
    CAPTURE(s.passes);
    EnvironmentScope passes("TENEX_PASSES", s.passes);
    EnvironmentScope threads("OMP_NUM_THREADS", s.threads);
    Tensor<T> x = a, promoted;
    Tensor<R> y = h, re, im, mod, ang, sum_of_parts, norm;
    re("i,j") = tenex::real(x("i,j"));
    im("j,i") = tenex::imag(x("i,j"));
    mod("i,j") = tenex::abs(x("i,j"));
    ang("i,j") = tenex::arg(x("i,j"));
    sum_of_parts("i") = tenex::real(x("i,j")) + y("i,j");
    norm("") = tenex::norm2(x("i,j"));
    promoted("i,j") = tenex::cast<T>(y("i,j")) + x("i,j");
    double squares = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      double row = 0;
      for (std::size_t j = 0; j < 5; ++j) {
        const std::complex<double> z = wide(a.at(i, j));
        const double tol = tolerance<T>() * 4;
        CHECK(std::abs(re.at(i, j) - z.real()) <= tol);
        CHECK(std::abs(im.at(j, i) - z.imag()) <= tol);
        CHECK(std::abs(mod.at(i, j) - std::abs(z)) <= tol);
        CHECK(std::abs(ang.at(i, j) - std::arg(z)) <= tol);
        CHECK(near(promoted.at(i, j), z + static_cast<double>(h.at(i, j))));
        row += z.real() + static_cast<double>(h.at(i, j));
        squares += std::norm(z);
      }
      CHECK(std::abs(sum_of_parts.at(i) - row) <= tolerance<T>() * 20);
    }
    CHECK(std::abs(norm.at() - std::sqrt(squares)) <= tolerance<T>() * 20);
  }
}
TEST_CASE_TEMPLATE_APPLY(complex_parts, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("complex: fill_random fills both parts, allclose compares moduli", T, complex_tensor) {
  Tensor<T> a({64});
  tenex::fill_random(a, 5);
  bool imaginary = false, distinct = false;
  for (std::size_t i = 0; i < 64; ++i) {
    const T v = a.at(i);
    CHECK(std::abs(v.real()) <= 1);
    CHECK(std::abs(v.imag()) <= 1);
    imaginary = imaginary || v.imag() != 0;
    distinct = distinct || v.real() != v.imag();
  }
  CHECK(imaginary);
  CHECK(distinct);
  Tensor<T> b = a;
  CHECK(tenex::allclose(a, b));
  b.at(3) += T(0, 1e-3);
  CHECK_FALSE(tenex::allclose(a, b));
}
TEST_CASE_TEMPLATE_APPLY(complex_tensor, tenex_test::ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("complex: what needs an order is a tenex::Error naming the operation", T, complex_errors) {
  Tensor<T> a = random<T>({3, 3}, 51), b = random<T>({3, 3}, 52), r;
  CHECK(error_of([&] { r("i,j") = tenex::max(a("i,j"), b("i,j")); }).find("no order") != std::string::npos);
  CHECK(error_of([&] { r("i") = tenex::max_over(a("i,j"), "j"); }).find("no order") != std::string::npos);
  CHECK(error_of([&] { r("i,j") = tenex::clamp(a("i,j"), 0.0, 1.0); }).find("clamp") != std::string::npos);
  CHECK(error_of([&] { r("i,j") = tenex::sign(a("i,j")); }).find("sign") != std::string::npos);
  CHECK(error_of([&] { r("i,j") = tenex::erf(a("i,j")); }).find("erf") != std::string::npos);
  CHECK_FALSE(r.has_value());  // nothing was assigned
  // A complex factor on a real expression (the operators refuse it at compile time; the
  // class at run time).
  Tensor<typename T::value_type> real({2});
  CHECK(error_of([&] {
          tenex::Scale<Tensor<typename T::value_type>>(real("i"), std::complex<double>(0, 1));
        }).find("complex factor") != std::string::npos);
}
TEST_CASE_TEMPLATE_APPLY(complex_errors, tenex_test::ComplexScalars);

TEST_CASE("complex: conj on a factor is read by the GEMM, not a pass of its own") {
  using C = std::complex<double>;
  EnvironmentScope passes("TENEX_PASSES", "all");
  const Tensor<C> a = random<C>({40, 30}, 61), b = random<C>({40, 20}, 62);
  Tensor<C> x = a, y = b, c;
  c("i,j") = tenex::conj(x("k,i")) * y("k,j");  // a^H b: ConjTrans on a read in place
  c.wait();
  const std::string plan = tenex::explain();
  CHECK(plan.find("contract conj_a") != std::string::npos);
  CHECK(plan.find("in 1 kernel") != std::string::npos);
  for (std::size_t i = 0; i < 30; ++i) {
    for (std::size_t j = 0; j < 20; ++j) {
      C sum = 0;
      for (std::size_t k = 0; k < 40; ++k) sum += std::conj(a.at(k, i)) * b.at(k, j);
      CHECK(near(c.at(i, j), sum, 10.0));
    }
  }
  c("i,j") = x("k,i") * tenex::conj(y("k,j"));
  c.wait();
  CHECK(tenex::explain().find("contract conj_b") != std::string::npos);
}
