// Errors raised while a set is evaluated: they never leave a destructor; they are stored
// and rethrown, as tenex::Error, by every read of an affected result.
//
// The only evaluation-time failure a CPU run can be made to raise on purpose is a
// numerical one: the Cholesky factorisation of a matrix that is not positive definite.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>
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
