// Errors of the linear algebra expressions. Bad statements (a decomposition of a tensor
// that is not a matrix, a non-square input where one is needed, slice bounds out of range,
// reversed or miscounted, an unknown chip label or an index out of range, mismatched
// generalized eigenproblem operands) throw ShapeError at the statement, with the messages
// pinned here, and leave the target as it was. A matrix that is not positive definite is
// an evaluation error: stored, and rethrown as NumericalError by every read.
#include <doctest/doctest.h>

#include <limits>
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

template <class T>
Tensor<T> counting(const Shape& shape) {
  std::vector<T> v(shape.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(i + 1);
  return Tensor<T>(shape, v);
}

// A target with a value of its own, to check that a rejected statement leaves it alone.
template <class T>
Tensor<T> sentinel() {
  return Tensor<T>(Shape{2}, {T(7), T(8)});
}

template <class T>
void check_sentinel(const Tensor<T>& t) {
  CHECK_FALSE(t.pending());
  CHECK(t.shape() == Shape{2});
  CHECK(t.to_vector() == std::vector<T>{T(7), T(8)});
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: decompositions need matrices", T, la_errors_rank) {
  auto a = counting<T>({2, 3, 4});
  auto target = sentinel<T>();
  auto second = sentinel<T>();
  auto third = sentinel<T>();
  CHECK_THROWS_WITH_AS(target("i,j,k") = tenex::cholesky(a("i,j,k")),
                       "tenex: cholesky: the operand (\"i,j,k\") {2, 3, 4} has rank 3; a matrix (rank 2) is needed",
                       tenex::ShapeError);
  CHECK_THROWS_AS(static_cast<void>(tenex::cholesky(a("i,j,k"))), tenex::ShapeError);
  check_sentinel(target);
  CHECK_THROWS_WITH_AS(std::make_pair(target("i,j"), second("j")) = tenex::eigen_solve(a("i,j,k")),
                       "tenex: eigen_solve: the operand (\"i,j,k\") {2, 3, 4} has rank 3; a matrix (rank 2) is needed",
                       tenex::ShapeError);
  check_sentinel(target);
  check_sentinel(second);
  CHECK_THROWS_WITH_AS(tenex::tie(target("i,k"), second("k,j")) = tenex::qr(a("i,j,k")),
                       "tenex: qr: the operand (\"i,j,k\") {2, 3, 4} has rank 3; a matrix (rank 2) is needed",
                       tenex::ShapeError);
  check_sentinel(target);
  check_sentinel(second);
  auto v = counting<T>({5});
  CHECK_THROWS_WITH_AS(tenex::tie(target("i,k"), second("k"), third("k,j")) = tenex::svd(v("i")),
                       "tenex: svd: the operand (\"i\") {5} has rank 1; a matrix (rank 2) is needed",
                       tenex::ShapeError);
  check_sentinel(target);
  check_sentinel(second);
  check_sentinel(third);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::pow(v("i"), 2),
                       "tenex: pow: the operand (\"i\") {5} has rank 1; a matrix (rank 2) is needed",
                       tenex::ShapeError);
  check_sentinel(target);
  // The operands are untouched.
  CHECK(a.to_vector() == counting<T>({2, 3, 4}).to_vector());
}
TEST_CASE_TEMPLATE_APPLY(la_errors_rank, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: square matrices where they are needed", T, la_errors_square) {
  auto a = counting<T>({3, 4});
  auto target = sentinel<T>();
  auto second = sentinel<T>();
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::cholesky(a("i,j")),
                       "tenex: cholesky: the operand (\"i,j\") {3, 4} is not square; a square matrix is needed",
                       tenex::ShapeError);
  check_sentinel(target);
  CHECK_THROWS_WITH_AS(std::make_pair(target("i,j"), second("j")) = tenex::eigen_solve(a("i,j")),
                       "tenex: eigen_solve: the operand (\"i,j\") {3, 4} is not square; a square matrix is needed",
                       tenex::ShapeError);
  check_sentinel(target);
  check_sentinel(second);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::pow(a("i,j"), 3),
                       "tenex: pow: the operand (\"i,j\") {3, 4} is not square; a square matrix is needed",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::pow(a("i,j"), 0),
                       "tenex: pow: the operand (\"i,j\") {3, 4} is not square; a square matrix is needed",
                       tenex::ShapeError);
  check_sentinel(target);
  // QR and SVD take any matrix: no error for the same operand.
  Tensor<T> q, r;
  CHECK_NOTHROW(tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a("i,j")));
  CHECK(q.shape() == Shape{3, 3});
  CHECK(r.shape() == Shape{3, 4});
  // The check is on the operand expression: a slice that makes it square is accepted,
  // one that does not is not.
  CHECK_NOTHROW(target("i,j") = tenex::pow(tenex::slice(a("i,j"), {0, 1}, {3, 4}), 2));
  CHECK(target.shape() == Shape{3, 3});
  auto kept = sentinel<T>();
  CHECK_THROWS_WITH_AS(kept("i,j") = tenex::pow(tenex::slice(a("i,j"), {0, 0}, {2, 3}), 2),
                       "tenex: pow: the operand (\"i,j\") {2, 3} is not square; a square matrix is needed",
                       tenex::ShapeError);
  check_sentinel(kept);
}
TEST_CASE_TEMPLATE_APPLY(la_errors_square, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: generalized eigenproblem operands", T, la_errors_generalized) {
  auto a = counting<T>({3, 3});
  auto b = counting<T>({4, 4});
  auto target = sentinel<T>();
  auto second = sentinel<T>();
  CHECK_THROWS_WITH_AS(std::make_pair(target("i,j"), second("j")) = tenex::eigen_solve(a("i,j"), b("i,j")),
                       "tenex: eigen_solve: b (\"i,j\") {4, 4} must have the shape of a (\"i,j\") {3, 3}",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(tenex::tie(target("i,j"), second("j")) = tenex::eigen_solve(a("i,j"), b("i,j")),
                       "tenex: eigen_solve: b (\"i,j\") {4, 4} must have the shape of a (\"i,j\") {3, 3}",
                       tenex::ShapeError);
  CHECK_THROWS_AS(static_cast<void>(tenex::eigen_solve(a("i,j"), b("i,j"))), tenex::ShapeError);
  check_sentinel(target);
  check_sentinel(second);
  // b not square, and b not a matrix.
  auto wide = counting<T>({3, 4});
  CHECK_THROWS_WITH_AS(static_cast<void>(tenex::eigen_solve(a("i,j"), wide("i,j"))),
                       "tenex: eigen_solve: the operand (\"i,j\") {3, 4} is not square; a square matrix is needed",
                       tenex::ShapeError);
  auto cube = counting<T>({3, 3, 3});
  CHECK_THROWS_WITH_AS(static_cast<void>(tenex::eigen_solve(a("i,j"), cube("i,j,k"))),
                       "tenex: eigen_solve: the operand (\"i,j,k\") {3, 3, 3} has rank 3; a matrix (rank 2) is needed",
                       tenex::ShapeError);
  check_sentinel(target);
}
TEST_CASE_TEMPLATE_APPLY(la_errors_generalized, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: eigen_solve targets that name the eigenpairs' mode differently", T,
                          la_errors_eigen_names) {
  auto a = counting<T>({3, 3});
  auto b = counting<T>({3, 3});
  auto target = sentinel<T>();
  auto second = sentinel<T>();
  CHECK_THROWS_WITH_AS(
      std::make_pair(target("m,p"), second("q")) = tenex::eigen_solve(a("m,n"), b("m,n")),
      "tenex: eigen_solve: the targets name the mode of the eigenpairs differently: the eigenvectors' target \"m,p\" "
      "names it \"p\" but the eigenvalues' target \"q\" names it \"q\"; label the eigenvalues with the "
      "eigenvectors' second label (std::make_pair(v(\"i,k\"), w(\"k\")) = eigen_solve(a(\"i,j\")))",
      tenex::ShapeError);
  check_sentinel(target);  // the vectors' assignment is undone
  check_sentinel(second);
  CHECK_THROWS_WITH_AS(std::make_pair(target("i,j"), second("i")) = a("i,j").eigen_solve(),
                       "tenex: eigen_solve: the targets name the mode of the eigenpairs differently: the "
                       "eigenvectors' target \"i,j\" names it \"j\" but the eigenvalues' target \"i\" names it "
                       "\"i\"; label the eigenvalues with the eigenvectors' second label (std::make_pair(v(\"i,k\"), "
                       "w(\"k\")) = eigen_solve(a(\"i,j\")))",
                       tenex::ShapeError);
  check_sentinel(target);
  check_sentinel(second);
  // A vectors' target with a label the operand lacks beside the one naming the mode.
  CHECK_THROWS_WITH_AS(std::make_pair(target("x,p"), second("p")) = tenex::eigen_solve(a("m,n"), b("m,n")),
                       "tenex: assignment target \"x,p\": label \"p\" is not produced by the right side (\"m,n\") "
                       "{3, 3}",
                       tenex::ShapeError);
  check_sentinel(target);
  check_sentinel(second);
}
TEST_CASE_TEMPLATE_APPLY(la_errors_eigen_names, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: slice bounds", T, la_errors_slice) {
  auto a = counting<T>({3, 4});
  auto target = sentinel<T>();
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::slice(a("i,j"), {0, 0}, {2, 5}),
                       "tenex: slice: bound hi = 5 of label \"j\" is out of range for extent 4 in (\"i,j\") {3, 4}",
                       tenex::ShapeError);
  check_sentinel(target);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::slice(a("i,j"), {0, 0}, {4, 4}),
                       "tenex: slice: bound hi = 4 of label \"i\" is out of range for extent 3 in (\"i,j\") {3, 4}",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::slice(a("i,j"), {2, 0}, {1, 4}),
                       "tenex: slice: bounds [2, 1) of label \"i\" are reversed in (\"i,j\") {3, 4}",
                       tenex::ShapeError);
  check_sentinel(target);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::slice(a("i,j"), {0}, {1}),
                       "tenex: slice: (\"i,j\") {3, 4} needs 2 bounds in lo and hi, got 1 and 1", tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::slice(a("i,j"), {0, 0}, {1}),
                       "tenex: slice: (\"i,j\") {3, 4} needs 2 bounds in lo and hi, got 2 and 1", tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i,j") = tenex::slice(a("i,j"), {0, 0, 0}, {1, 1, 1}),
                       "tenex: slice: (\"i,j\") {3, 4} needs 2 bounds in lo and hi, got 3 and 3", tenex::ShapeError);
  check_sentinel(target);
  // The bounds are checked against the operand expression's labels and extents.
  CHECK_THROWS_WITH_AS(target("j,i") = tenex::slice(tenex::permute(a("i,j"), "j,i"), {0, 0}, {4, 4}),
                       "tenex: slice: bound hi = 4 of label \"i\" is out of range for extent 3 in (\"j,i\") {4, 3}",
                       tenex::ShapeError);
  check_sentinel(target);
  // Edges that are fine: hi = extent, lo = hi (empty).
  Tensor<T> ok;
  CHECK_NOTHROW(ok("i,j") = tenex::slice(a("i,j"), {3, 4}, {3, 4}));
  CHECK(ok.shape() == Shape{0, 0});
}
TEST_CASE_TEMPLATE_APPLY(la_errors_slice, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: chip label and index", T, la_errors_chip) {
  auto a = counting<T>({3, 4});
  auto target = sentinel<T>();
  CHECK_THROWS_WITH_AS(target("j") = tenex::chip(a("i,j"), "x", 0),
                       "tenex: chip: label \"x\" is not among the labels of (\"i,j\") {3, 4}", tenex::ShapeError);
  check_sentinel(target);
  CHECK_THROWS_WITH_AS(target("j") = tenex::chip(a("i,j"), "i", 3),
                       "tenex: chip: index 3 of label \"i\" is out of range for extent 3 in (\"i,j\") {3, 4}",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(target("i") = tenex::chip(a("i,j"), "j", 4),
                       "tenex: chip: index 4 of label \"j\" is out of range for extent 4 in (\"i,j\") {3, 4}",
                       tenex::ShapeError);
  check_sentinel(target);
  CHECK_NOTHROW(target("i") = tenex::chip(a("i,j"), "j", 3));
  CHECK(target.shape() == Shape{3});
  CHECK(target.at(1) == a.at(1, 3));
}
TEST_CASE_TEMPLATE_APPLY(la_errors_chip, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: cholesky of a matrix that is not positive definite", T,
                          la_errors_not_spd) {
  // Symmetric with eigenvalues 1 - 2 sqrt(2), 1 and 1 + 2 sqrt(2): indefinite.
  Tensor<T> a(Shape{3, 3}, {1, 2, 0, 2, 1, 2, 0, 2, 1});
  Tensor<T> l;
  CHECK_NOTHROW(l("i,j") = tenex::cholesky(a("i,j")));
  CHECK(l.shape() == Shape{3, 3});
  const Tensor<T>& cl = l;
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    CHECK_THROWS_AS(l.at(0, 0), tenex::NumericalError);
    CHECK_THROWS_AS(cl.at(2, 2), tenex::NumericalError);
    CHECK_THROWS_AS(l.data(), tenex::NumericalError);
    CHECK_THROWS_AS(cl.data(), tenex::NumericalError);
    CHECK_THROWS_AS(l.wait(), tenex::NumericalError);
    CHECK_THROWS_AS(l.to_vector(), tenex::NumericalError);
  }
  try {
    l.wait();
    FAIL("no exception");
  } catch (const tenex::NumericalError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("potrf") != std::string::npos);
    CHECK(what.find("info") != std::string::npos);
  }

  // A later statement that reads the failed result fails at its own read.
  Tensor<T> b(Shape{3}, {1, 1, 1}), y;
  bool thrown_at_statement = false;
  try {
    y("i") = l("i,j") * b("j");
  } catch (const tenex::Error&) {
    thrown_at_statement = true;
  }
  CHECK_FALSE(thrown_at_statement);
  CHECK_THROWS_AS(y.at(0), tenex::Error);
  CHECK_THROWS_AS(y.to_vector(), tenex::Error);
  try {
    y.wait();
    FAIL("no exception");
  } catch (const tenex::Error& e) {
    CHECK(std::string(e.what()).find("potrf") != std::string::npos);
  }

  // In one set with a consumer: both report the error.
  Tensor<T> l2, z;
  {
    auto lij = tenex::cholesky(a("i,j"));
    l2("i,j") = lij;
    z("i") = lij * b("j");
  }
  CHECK_THROWS_AS(l2.wait(), tenex::NumericalError);
  CHECK_THROWS_AS(z.wait(), tenex::Error);

  // Failures of a decomposition in a composed expression: the leading 2 x 2 block of a is
  // indefinite too.
  Tensor<T> x;
  CHECK_NOTHROW(x("i") = tenex::cholesky(tenex::slice(a("i,j"), {0, 0}, {2, 2})) * tenex::slice(b("j"), {0}, {2}));
  CHECK_THROWS_AS(x.wait(), tenex::NumericalError);

  // The operand is untouched and the target takes a new value.
  CHECK(a.to_vector() == std::vector<T>{1, 2, 0, 2, 1, 2, 0, 2, 1});
  Tensor<T> spd(Shape{3, 3}, {4, 2, 0, 2, 5, 1, 0, 1, 3});
  l("i,j") = tenex::cholesky(spd("i,j"));
  CHECK_NOTHROW(l.wait());
  CHECK(l.at(0, 0) > T(0));
  CHECK(l.at(0, 1) == T(0));
}
TEST_CASE_TEMPLATE_APPLY(la_errors_not_spd, Scalars);

TEST_CASE("linear algebra errors: a negative definite b in the generalized eigenproblem") {
  // sygvd factorises b with potrf first: an indefinite b is an evaluation error.
  Tensor<double> a(Shape{2, 2}, {1, 0, 0, 1});
  Tensor<double> b(Shape{2, 2}, {1, 2, 2, 1});
  Tensor<double> v, w;
  CHECK_NOTHROW(std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j"), b("i,j")));
  CHECK_THROWS_AS(v.wait(), tenex::NumericalError);
  CHECK_THROWS_AS(w.wait(), tenex::NumericalError);
  CHECK_THROWS_AS(w.at(0), tenex::NumericalError);
  try {
    w.wait();
    FAIL("no exception");
  } catch (const tenex::Error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("sygvd") != std::string::npos);
    CHECK(what.find("info") != std::string::npos);
  }
}

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: a non-finite input to a decomposition", T, la_errors_non_finite) {
  // LAPACK cannot be given NaN or infinity: an evaluation error naming the operation,
  // rethrown by every read of every factor, never NaN results or a crash.
  for (const T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity()}) {
    CAPTURE(bad);
    Tensor<T> a(Shape{3, 3}, {4, 2, 0, 2, 5, 1, 0, 1, 3});
    a.at(2, 1) = bad;
    a.at(1, 2) = bad;
    Tensor<T> l, v, w, q, r, u, s, vt;
    CHECK_NOTHROW(l("i,j") = tenex::cholesky(a("i,j")));
    CHECK_NOTHROW(std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j")));
    CHECK_NOTHROW(tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a("i,j")));
    CHECK_NOTHROW(tenex::tie(u("i,k"), s("k"), vt("k,j")) = tenex::svd(a("i,j")));
    const std::vector<std::pair<const char*, std::vector<const Tensor<T>*>>> results{
        {"cholesky", {&l}}, {"eigen_solve", {&v, &w}}, {"qr", {&q, &r}}, {"svd", {&u, &s, &vt}}};
    for (const auto& [operation, tensors] : results) {
      CAPTURE(operation);
      for (const Tensor<T>* t : tensors) {
        CHECK_THROWS_AS(t->wait(), tenex::NumericalError);
        CHECK_THROWS_AS(t->to_vector(), tenex::NumericalError);
        try {
          t->wait();
          FAIL("no exception");
        } catch (const tenex::Error& e) {
          const std::string what = e.what();
          INFO(what);
          CHECK(what.find(operation) != std::string::npos);
          CHECK(what.find("non-finite") != std::string::npos);
        }
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(la_errors_non_finite, Scalars);

TEST_CASE_TEMPLATE_DEFINE("linear algebra errors: inverse, solve and negative powers of matrices of tiny entries", T,
                          la_errors_tiny) {
  // Subnormal entries: LAPACK's LU of them overflowed (1 / pivot) and handed NaN to gecon
  // ("dgecon failed (info = -4) ... this is a bug in tenex"). The inverse is exact where it is
  // representable, and an overflow NumericalError where it is not; never "a bug".
  auto diagonal = [](T d) {
    Tensor<T> a(Shape{3, 3});
    for (std::size_t i = 0; i < 3; ++i) a.at(i, i) = d;
    return a;
  };
  Tensor<T> ones(Shape{3}, {T(1), T(1), T(1)});
  const T representable = std::numeric_limits<T>::min() / 2;  // subnormal; 1 / it is finite
  {
    Tensor<T> a = diagonal(representable), inv, x, p;
    inv("i,j") = tenex::inverse(a("i,j"));
    x("j") = tenex::solve(a("i,j"), ones("i"));
    p("i,j") = tenex::pow(a("i,j"), -1);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(inv.at(i, i) == T(1) / representable);
      CHECK(p.at(i, i) == T(1) / representable);
      CHECK(x.at(i) == T(1) / representable);
      for (std::size_t j = 0; j < 3; ++j) {
        if (i != j) CHECK(inv.at(i, j) == T(0));
      }
    }
  }
  const T tiny = std::numeric_limits<T>::min() / 16;  // 1 / it overflows
  Tensor<T> a = diagonal(tiny), inv, x, p, root;
  inv("i,j") = tenex::inverse(a("i,j"));
  x("j") = tenex::solve(a("i,j"), ones("i"));
  p("i,j") = tenex::pow(a("i,j"), -2);
  root("i,j") = tenex::pow(a("i,j"), -1.5);
  for (const Tensor<T>* t : {&inv, &x, &p, &root}) {
    CHECK_THROWS_AS(t->wait(), tenex::NumericalError);
    try {
      t->wait();
    } catch (const tenex::Error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("overflows") != std::string::npos);
      CHECK(what.find("cannot be represented") != std::string::npos);
      CHECK(what.find("bug") == std::string::npos);
    }
  }
  // A tiny pivot beside entries of 1: singular to working precision.
  Tensor<T> mixed(Shape{2, 2}, {tiny, T(0), T(0), T(1)}), mixed_inv;
  mixed_inv("i,j") = tenex::inverse(mixed("i,j"));
  try {
    mixed_inv.wait();
    FAIL("no exception");
  } catch (const tenex::NumericalError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("singular") != std::string::npos);
    CHECK(what.find("bug") == std::string::npos);
  }
}
TEST_CASE_TEMPLATE_APPLY(la_errors_tiny, Scalars);
