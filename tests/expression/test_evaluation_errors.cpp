// Errors raised while a set is evaluated: they never leave a destructor; they are stored
// and rethrown, as tenex::Error, by every read of an affected result; what a tenex::map
// callable throws is rethrown as it is, the callable's own exception object.
//
// The only evaluation-time failure a CPU run can be made to raise on purpose is a
// numerical one: the Cholesky factorisation of a matrix that is not positive definite.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

using tenex_test::Scalars;

// Symmetric with eigenvalues 3 and -1: not positive definite.
template <class T>
Tensor<T> indefinite() {
  return Tensor<T>({2, 2}, {1, 2, 2, 1});
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("evaluation errors: a failed Cholesky factorisation is rethrown by every read", T,
                          evaluation_error_reads) {
  auto a = indefinite<T>();
  Tensor<T> l;
  CHECK_NOTHROW(l("i,j") = tenex::cholesky(a("i,j")));  // stored, not thrown from the destructor
  CHECK(l.shape() == Shape{2, 2});
  CHECK_THROWS_AS(l.wait(), tenex::NumericalError);
  CHECK_THROWS_AS(l.wait(), tenex::NumericalError);  // every read, not just the first
  const Tensor<T>& cl = l;
  CHECK_THROWS_AS(cl.data(), tenex::NumericalError);
  CHECK_THROWS_AS(l.data(), tenex::NumericalError);
  CHECK_THROWS_AS(cl.at(0, 0), tenex::NumericalError);
  CHECK_THROWS_AS(l.to_vector(), tenex::NumericalError);
  CHECK_THROWS_AS(static_cast<void>(Tensor<T>(l)), tenex::NumericalError);  // copying reads
  Tensor<T> assigned;
  CHECK_THROWS_AS(assigned = l, tenex::NumericalError);
  try {
    l.wait();
    FAIL("no exception");
  } catch (const tenex::Error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.rfind("tenex: ", 0) == 0);
    CHECK(what.find("potrf") != std::string::npos);
  }
  // The operand is untouched, and the target can be given a new value.
  CHECK(a.to_vector() == std::vector<T>{1, 2, 2, 1});
  l("i,j") = a("i,j") * 2.0;
  CHECK_NOTHROW(l.wait());
  CHECK(l.to_vector() == std::vector<T>{2, 4, 4, 2});
}
TEST_CASE_TEMPLATE_APPLY(evaluation_error_reads, Scalars);

TEST_CASE("evaluation errors: results that depend on a failed one report the error") {
  auto a = indefinite<double>();
  Tensor<double> l, m, n;
  CHECK_NOTHROW([&] {
    auto ai = a("i,j");
    l("i,j") = tenex::cholesky(ai);
    m("i,j") = l("i,k") * a("k,j");  // needs l
    n("i,j") = 2.0 * ai;             // does not
  }());
  CHECK_THROWS_AS(l.at(0, 0), tenex::NumericalError);
  CHECK_THROWS_AS(m.wait(), tenex::Error);
  CHECK_THROWS_AS(m.to_vector(), tenex::Error);
  // An unaffected result of the same set either has its value or reports the set's error;
  // it never holds wrong numbers.
  try {
    CHECK(n.to_vector() == std::vector<double>{2, 4, 4, 2});
  } catch (const tenex::Error& e) {
    MESSAGE("an unaffected result of a failed set reports: ", e.what());
  }
}

TEST_CASE("evaluation errors: a later statement on a failed result") {
  auto a = indefinite<double>();
  Tensor<double> l, p;
  l("i,j") = tenex::cholesky(a("i,j"));
  bool thrown_at_statement = false;
  try {
    p("i,j") = l("i,j") * 2.0;
  } catch (const tenex::Error&) {
    thrown_at_statement = true;
  }
  if (!thrown_at_statement) CHECK_THROWS_AS(p.wait(), tenex::Error);
  CHECK_THROWS_AS(l.wait(), tenex::NumericalError);
  // Other sets are not affected.
  Tensor<double> q;
  q("j,i") = a("i,j") + a("i,j");
  CHECK(q.to_vector() == std::vector<double>{2, 4, 4, 2});
}

TEST_CASE("evaluation errors: a failed set inside a scope") {
  auto a = indefinite<double>();
  Tensor<double> l;
  {
    auto ai = a("i,j");
    l("i,j") = tenex::cholesky(ai);
    CHECK(l.pending());
    CHECK_THROWS_AS(l.wait(), tenex::NumericalError);  // reading inside the scope evaluates
  }
  CHECK_THROWS_AS(l.wait(), tenex::NumericalError);
}

TEST_CASE_TEMPLATE_DEFINE("evaluation errors: a positive definite matrix factorises", T, evaluation_ok) {
  Tensor<T> a({2, 2}, {4, 2, 2, 3});
  Tensor<T> l, lt;
  l("i,j") = tenex::cholesky(a("i,j"));
  lt("j,i") = tenex::cholesky(a("i,j"));
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  CHECK(l.at(0, 0) == doctest::Approx(2.0).epsilon(tol));
  CHECK(l.at(0, 1) == 0);
  CHECK(l.at(1, 0) == doctest::Approx(1.0).epsilon(tol));
  CHECK(l.at(1, 1) == doctest::Approx(std::sqrt(2.0)).epsilon(tol));
  CHECK(lt.at(0, 1) == doctest::Approx(1.0).epsilon(tol));
  CHECK(lt.at(1, 0) == 0);
}
TEST_CASE_TEMPLATE_APPLY(evaluation_ok, Scalars);

namespace {
// A user's exception type with data of its own, to tell that the object itself arrives.
struct Picky : std::runtime_error {
  explicit Picky(double v) : std::runtime_error("picky: " + std::to_string(v) + " is too large"), value(v) {}
  double value;
};
}  // namespace

TEST_CASE_TEMPLATE_DEFINE("evaluation errors: a map callable's own exception reaches every read", T, evaluation_map) {
  // Large enough for the element-wise kernel to run on several threads.
  const std::size_t n = 1 << 17;
  Tensor<T> x(Shape{n});
  for (std::size_t i = 0; i < n; ++i) x.at(i) = static_cast<T>(i % 7) / T(4);  // at most 1.5
  Tensor<T> y, z;
  {
    auto mapped = tenex::map(x("i"), "picky", [](T v) {
      if (v > T(1)) throw Picky(static_cast<double>(v));
      return v;
    });
    y("i") = mapped;
    z("i") = 2.0 * mapped + x("i");  // depends on it: the same exception
  }
  const Picky* first = nullptr;
  auto check_read = [&](auto read, const char* how) {
    CAPTURE(how);
    try {
      read();
      FAIL("no exception");
    } catch (const tenex::Error& e) {
      FAIL("a tenex::Error instead of the callable's exception: " << e.what());
    } catch (const Picky& e) {
      CHECK(e.value > 1.0);
      CHECK(std::string(e.what()).find("is too large") != std::string::npos);
      if (!first) first = &e;
      CHECK(&e == first);  // the one object, as std::future rethrows it
    }
  };
  check_read([&] { y.wait(); }, "wait");
  check_read([&] { (void)y.at(0); }, "at");
  check_read([&] { (void)std::as_const(y).data(); }, "data");
  check_read([&] { (void)y.to_vector(); }, "to_vector");
  check_read([&] { z.wait(); }, "a dependent result");
  // A later set reading the failed result, also through a cast: the same exception.
  Tensor<T> later;
  later("i") = 3.0 * y("i");
  check_read([&] { later.wait(); }, "a later set");
  using Other = std::conditional_t<std::is_same_v<T, float>, double, float>;
  Tensor<Other> other;
  other("i") = tenex::cast<Other>(y("i"));
  check_read([&] { other.wait(); }, "a cast");
  // Not a std::exception at all: rethrown as it is too.
  Tensor<T> w;
  w("i") = tenex::map(x("i"), "odd", [](T v) -> T {
    if (v > T(1)) throw 42;
    return v;
  });
  CHECK_THROWS_AS(w.wait(), int);
  // The library goes on working.
  Tensor<T> ok;
  ok("i") = tenex::map(x("i"), "same", [](T v) { return v; });
  CHECK(ok.at(6) == x.at(6));
}
TEST_CASE_TEMPLATE_APPLY(evaluation_map, Scalars);
