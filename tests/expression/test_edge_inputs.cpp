// Bad input at the edges (issue "Reliability"): element counts that overflow or exceed
// memory, zero extents and rank 0 in every operation, NaN and Inf in every operation (IEEE
// propagation; division by a zero element is Inf, not an error), non-finite input to every
// decomposition (a NumericalError, never a hang), and malformed labels of every kind. Each is
// a clear tenex::Error or the IEEE result, and a statement that throws changes nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

template <class T>
Tensor<T> filled(const Shape& shape, T value) {
  return Tensor<T>(shape, std::vector<T>(shape.size(), value));
}

template <class T>
constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
template <class T>
constexpr T kInf = std::numeric_limits<T>::infinity();

/// The message of the tenex::Error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const tenex::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- Sizes ---------------------------------------------------------------------------------

TEST_CASE("edges: element counts that overflow or exceed memory are errors that name the shape") {
  const std::size_t big = std::size_t{1} << 40;
  // Through shapes alone (nothing allocated): an outer product of 2^40 x 2^40 elements.
  Shape a{big}, b{big}, c;
  const std::string overflow = error_of([&] { c("i,j") = a("i") * b("j"); });
  CHECK(overflow.find("more elements than std::size_t can count") != std::string::npos);
  CHECK(overflow.find("1099511627776") != std::string::npos);
  CHECK(c.rank() == 0);
  // A tensor of 2^40 doubles (8 TiB) cannot be allocated: an error at construction.
  const std::string huge = error_of([&] { Tensor<double> t(Shape{big}); });
  CHECK(huge.find("cannot allocate") != std::string::npos);
  CHECK(huge.find("{1099511627776}") != std::string::npos);
  // Extents of one label that disagree, with a huge one: named in the error, nothing changed.
  Shape small{3}, d;
  const std::string disagree = error_of([&] { d("i") = small("i") + a("i"); });
  CHECK(disagree.find("1099511627776") != std::string::npos);
  CHECK(d.rank() == 0);
}

// ---- Zero extents --------------------------------------------------------------------------

TEST_CASE_TEMPLATE_DEFINE("edges: zero extents in every operation", T, edges_zero_extents) {
  Tensor<T> z03(Shape{0, 3}), z30(Shape{3, 0}), e00(Shape{0, 0}), a33(Shape{3, 3});
  tenex::fill_random(a33, 3);

  SUBCASE("contraction over an empty index is zero; an empty free index gives an empty result") {
    Tensor<T> c;
    c("i,j") = z30("i,k") * z03("k,j");
    CHECK(c.shape() == Shape{3, 3});
    for (T x : c.to_vector()) CHECK(x == T(0));
    Tensor<T> d;
    d("i,j") = z03("i,k") * z30("k,j");
    CHECK(d.shape() == Shape{0, 0});
    Tensor<T> dot;
    dot("") = z03("i,j") * z03("i,j");
    CHECK(dot.at() == T(0));
  }
  SUBCASE("element-wise work, broadcasts, permutations and casts of empty tensors are empty") {
    Tensor<T> c, p, q;
    c("i,j") = tenex::exp(z03("i,j")) * 2.0 + z03("i,j") / z03("i,j") - 1.0;
    CHECK(c.shape() == Shape{0, 3});
    p("j,i") = z03("i,j");
    CHECK(p.shape() == Shape{3, 0});
    Tensor<T> v(Shape{3});
    q("i,j") = z03("i,j") + v("j");
    CHECK(q.shape() == Shape{0, 3});
    Tensor<double> w;
    w("i,j") = tenex::cast<double>(z03("i,j"));
    CHECK(w.shape() == Shape{0, 3});
  }
  SUBCASE("reductions over nothing give their identities") {
    Tensor<T> s, m, n, f;
    s("j") = tenex::sum(z03("i,j"), "i");
    m("j") = tenex::max_over(z03("i,j"), "i");
    n("j") = tenex::min_over(z03("i,j"), "i");
    f("") = tenex::norm2(z03("i,j"));
    CHECK(s.to_vector() == std::vector<T>(3, T(0)));
    CHECK(m.to_vector() == std::vector<T>(3, -kInf<T>));
    CHECK(n.to_vector() == std::vector<T>(3, kInf<T>));
    CHECK(f.at() == T(0));
    Tensor<T> trace;
    trace("") = e00("i,i");
    CHECK(trace.at() == T(0));
  }
  SUBCASE("decompositions and matrix functions of a 0 x 0 matrix are empty") {
    Tensor<T> l, v, w, q, r, u, s, vt, inv, p, h, x;
    l("i,j") = tenex::cholesky(e00("i,j"));
    std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(e00("i,j"));
    tenex::tie(q("i,k"), r("k,j")) = tenex::qr(e00("i,j"));
    auto [uu, ss, vv] = tenex::svd(e00("i,j"));
    u("i,k") = uu;
    s("k") = ss;
    vt("k,j") = vv;
    inv("i,j") = tenex::inverse(e00("i,j"));
    p("i,j") = tenex::pow(e00("i,j"), 3);
    h("i,j") = tenex::pow(e00("i,j"), -0.5);
    Tensor<T> b(Shape{0});
    x("j") = tenex::solve(e00("i,j"), b("i"));
    for (const Tensor<T>* t : {&l, &v, &w, &q, &r, &u, &s, &vt, &inv, &p, &h, &x}) CHECK(t->size() == 0);
    CHECK(l.shape() == Shape{0, 0});
    CHECK(w.shape() == Shape{0});
  }
  SUBCASE("QR and SVD of 0 x 3 and 3 x 0 matrices have an empty inner mode") {
    Tensor<T> q, r, u, s, vt;
    tenex::tie(q("i,k"), r("k,j")) = tenex::qr(z03("i,j"));
    CHECK(q.shape() == Shape{0, 0});
    CHECK(r.shape() == Shape{0, 3});
    auto [uu, ss, vv] = tenex::svd(z30("i,j"));
    u("i,k") = uu;
    s("k") = ss;
    vt("k,j") = vv;
    CHECK(u.shape() == Shape{3, 0});
    CHECK(s.shape() == Shape{0});
    CHECK(vt.shape() == Shape{0, 0});
  }
  SUBCASE("an empty slice is empty; chipping an empty mode is an error that leaves the target") {
    Tensor<T> c;
    c("i,j") = tenex::slice(a33("i,j"), {1, 1}, {1, 3});
    CHECK(c.shape() == Shape{0, 2});
    Tensor<T> t = filled<T>(Shape{2}, T(4));
    const std::string chip = error_of([&] { t("j") = tenex::chip(z03("i,j"), "i", 0); });
    CHECK(chip.find("out of range for extent 0") != std::string::npos);
    CHECK(t.to_vector() == std::vector<T>(2, T(4)));
  }
}
TEST_CASE_TEMPLATE_APPLY(edges_zero_extents, tenex_test::Scalars);

// ---- Rank 0 --------------------------------------------------------------------------------

TEST_CASE_TEMPLATE_DEFINE("edges: rank 0 in every operation", T, edges_rank_zero) {
  Tensor<T> two(Shape{}, {T(2)}), three(Shape{}, {T(3)}), vec(Shape{2}, {T(1), T(2)});
  Tensor<T> c;
  c("") = two("") + three("");
  CHECK(c.at() == T(5));
  c("") = two("") - three("");
  CHECK(c.at() == T(-1));
  c("") = two("") * three("");
  CHECK(c.at() == T(6));
  c("") = three("") / two("");
  CHECK(c.at() == T(1.5));
  c("") = 2.0 * two("") + 1.0;
  CHECK(c.at() == T(5));
  c("") = tenex::square(three(""));
  CHECK(c.at() == T(9));
  c("") = tenex::max(two(""), three("")) - tenex::min(two(""), three(""));
  CHECK(c.at() == T(1));
  c("") = tenex::sum(two(""), "");
  CHECK(c.at() == T(2));
  c("") = tenex::norm2(three(""));
  CHECK(c.at() == T(3));
  c("") = tenex::map(three(""), "twice", [](T x) { return 2 * x; });
  CHECK(c.at() == T(6));
  c("") = tenex::slice(three(""), {}, {});
  CHECK(c.at() == T(3));
  c("") += two("");
  c("") *= three("");
  c("") /= 2.0;
  CHECK(c.at() == T(7.5));
  Tensor<T> b;
  b("i") = vec("i") * two("");  // a scalar broadcasts
  CHECK(b.to_vector() == std::vector<T>{T(2), T(4)});
  Tensor<double> d;
  d("") = tenex::cast<double>(three(""));
  CHECK(d.at() == 3.0);

  // Matrix operations need rank 2; chip needs the label: errors that leave the target.
  Tensor<T> keep(Shape{}, {T(9)});
  for (const std::string& m :
       {error_of([&] { keep("") = tenex::cholesky(two("")); }), error_of([&] { keep("") = tenex::inverse(two("")); }),
        error_of([&] { keep("") = tenex::pow(two(""), 2); }), error_of([&] { keep("") = tenex::pow(two(""), 0.5); }),
        error_of([&] { keep("") = std::get<0>(tenex::eigen_solve(two(""))); }),
        error_of([&] { keep("") = std::get<0>(tenex::qr(two(""))); }),
        error_of([&] { keep("") = std::get<1>(tenex::svd(two(""))); })}) {
    CHECK(m.find("has rank 0; a matrix (rank 2) is needed") != std::string::npos);
  }
  CHECK(error_of([&] { keep("") = tenex::chip(two(""), "i", 0); }).find("not among the labels") != std::string::npos);
  CHECK(keep.at() == T(9));
}
TEST_CASE_TEMPLATE_APPLY(edges_rank_zero, tenex_test::Scalars);

// ---- NaN and Inf ---------------------------------------------------------------------------

TEST_CASE_TEMPLATE_DEFINE("edges: NaN and Inf propagate through every element-wise operation", T, edges_ieee) {
  const T nan = kNaN<T>, inf = kInf<T>;
  Tensor<T> x(Shape{4}, {nan, inf, -inf, T(1)}), zero = filled<T>(Shape{4}, T(0)), one = filled<T>(Shape{4}, T(1));
  Tensor<T> c;

  // Division by a zero element is Inf (0/0 is NaN), not an error.
  c("i") = one("i") / zero("i");
  CHECK(std::isinf(c.at(0)));
  CHECK(c.at(0) > 0);
  c("i") = zero("i") / zero("i");
  CHECK(std::isnan(c.at(0)));
  c("i") = tenex::reciprocal(zero("i"));
  CHECK(std::isinf(c.at(1)));
  c("i") = 1.0 / zero("i");
  CHECK(std::isinf(c.at(2)));

  // Arithmetic, scaling and functions: NaN stays NaN, Inf follows IEEE.
  c("i") = 2.0 * x("i") + one("i");
  CHECK(std::isnan(c.at(0)));
  CHECK(c.at(1) == inf);
  CHECK(c.at(2) == -inf);
  CHECK(c.at(3) == T(3));
  struct Case {
    const char* name;
    std::function<void(Tensor<T>&, Tensor<T>&)> run;
  };
  const std::vector<Case> functions = {
      {"exp", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::exp(i("i")); }},
      {"log", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::log(i("i")); }},
      {"sqrt", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::sqrt(i("i")); }},
      {"abs", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::abs(i("i")); }},
      {"square", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::square(i("i")); }},
      {"sin", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::sin(i("i")); }},
      {"cos", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::cos(i("i")); }},
      {"tanh", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::tanh(i("i")); }},
      {"sign", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::sign(i("i")); }},
      {"reciprocal", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::reciprocal(i("i")); }},
      {"power", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::power(i("i"), 3.0); }},
      {"clamp", [](Tensor<T>& o, Tensor<T>& i) { o("i") = tenex::clamp(i("i"), -1.0, 1.0); }},
      {"negate", [](Tensor<T>& o, Tensor<T>& i) { o("i") = -i("i"); }},
  };
  for (const Case& f : functions) {
    CAPTURE(f.name);
    f.run(c, x);
    CHECK(std::isnan(c.at(0)));  // NaN in, NaN out, for every function
  }
  c("i") = tenex::sign(x("i"));
  CHECK(c.at(1) == T(1));
  CHECK(c.at(2) == T(-1));
  c("i") = tenex::clamp(x("i"), -1.0, 1.0);
  CHECK(c.at(1) == T(1));
  CHECK(c.at(2) == T(-1));
  c("i") = tenex::exp(x("i"));
  CHECK(c.at(1) == inf);
  CHECK(c.at(2) == T(0));

  // max and min give NaN when either side is NaN, whichever side it is on.
  c("i") = tenex::max(x("i"), one("i"));
  CHECK(std::isnan(c.at(0)));
  CHECK(c.at(1) == inf);
  CHECK(c.at(2) == T(1));
  c("i") = tenex::max(one("i"), x("i"));
  CHECK(std::isnan(c.at(0)));
  c("i") = tenex::min(one("i"), x("i"));
  CHECK(std::isnan(c.at(0)));
  CHECK(c.at(2) == -inf);

  // Reductions: a NaN anywhere makes the result NaN; Inf wins a max; Inf - Inf is NaN.
  Tensor<T> s;
  s("") = tenex::max_over(x("i"), "i");
  CHECK(std::isnan(s.at()));
  s("") = tenex::min_over(x("i"), "i");
  CHECK(std::isnan(s.at()));
  s("") = tenex::sum(x("i"), "i");
  CHECK(std::isnan(s.at()));
  Tensor<T> y(Shape{3}, {inf, T(1), T(-5)});
  s("") = tenex::max_over(y("i"), "i");
  CHECK(s.at() == inf);
  s("") = tenex::min_over(y("i"), "i");
  CHECK(s.at() == T(-5));
  s("") = tenex::norm2(y("i"));
  CHECK(s.at() == inf);
  Tensor<T> opposite(Shape{2}, {inf, -inf});
  s("") = tenex::sum(opposite("i"), "i");
  CHECK(std::isnan(s.at()));

  // Contractions: a NaN reaches every element it is multiplied into, and only those.
  Tensor<T> m(Shape{2, 2}, {nan, T(0), T(0), T(1)}), id(Shape{2, 2}, {T(1), T(0), T(0), T(1)});
  Tensor<T> p;
  p("i,j") = m("i,k") * id("k,j");
  CHECK(std::isnan(p.at(0, 0)));
  CHECK(std::isnan(p.at(0, 1)));  // NaN * 0 is NaN
  CHECK(p.at(1, 1) == T(1));
  s("") = x("i") * one("i");
  CHECK(std::isnan(s.at()));
  // Scalars that are not finite.
  c("i") = one("i") * static_cast<double>(nan);
  CHECK(std::isnan(c.at(3)));
  c("i") = one("i") / static_cast<double>(inf);
  CHECK(c.at(3) == T(0));
}
TEST_CASE_TEMPLATE_APPLY(edges_ieee, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("edges: non-finite input to a decomposition is a NumericalError, never a hang", T,
                          edges_nonfinite_decompositions) {
  const T bad_values[] = {kNaN<T>, kInf<T>, -kInf<T>};
  for (T bad : bad_values) {
    CAPTURE(bad);
    // An SPD matrix with one non-finite entry, deep inside (not only at (0, 0)).
    Tensor<T> a(Shape{4, 4});
    for (std::size_t i = 0; i < 4; ++i) a.at(i, i) = T(4);
    a.at(2, 3) = bad;
    a.at(3, 2) = bad;
    Tensor<T> spd(Shape{4, 4});
    for (std::size_t i = 0; i < 4; ++i) spd.at(i, i) = T(2);
    Tensor<T> rhs(Shape{4}, {T(1), T(2), T(3), T(4)});
    using Run = std::function<Tensor<T>()>;
    const std::vector<std::pair<std::string, Run>> runs = {
        {"cholesky",
         [&] {
           Tensor<T> l;
           l("i,j") = tenex::cholesky(a("i,j"));
           return l;
         }},
        {"eigen_solve",
         [&] {
           Tensor<T> v, w;
           std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j"));
           return w;
         }},
        {"generalized eigen_solve (a)",
         [&] {
           Tensor<T> v, w;
           std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j"), spd("i,j"));
           return w;
         }},
        {"generalized eigen_solve (b)",
         [&] {
           Tensor<T> v, w;
           std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(spd("i,j"), a("i,j"));
           return w;
         }},
        {"qr",
         [&] {
           Tensor<T> q, r;
           tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a("i,j"));
           return r;
         }},
        {"svd",
         [&] {
           Tensor<T> s;
           s("k") = std::get<1>(tenex::svd(a("i,j")));
           return s;
         }},
        {"inverse",
         [&] {
           Tensor<T> x;
           x("i,j") = tenex::inverse(a("i,j"));
           return x;
         }},
        {"solve",
         [&] {
           Tensor<T> x;
           x("j") = tenex::solve(a("i,j"), rhs("i"));
           return x;
         }},
        {"pow(a, -1)",
         [&] {
           Tensor<T> x;
           x("i,j") = tenex::pow(a("i,j"), -1);
           return x;
         }},
        {"pow(a, 0.5)",
         [&] {
           Tensor<T> x;
           x("i,j") = tenex::pow(a("i,j"), 0.5);
           return x;
         }},
    };
    for (const auto& [name, run] : runs) {
      CAPTURE(name);
      Tensor<T> result = run();
      // The statement is accepted (values are not known when it is written); every read fails.
      CHECK_THROWS_AS(result.wait(), tenex::NumericalError);
      const std::string message = error_of([&] { (void)result.to_vector(); });
      CHECK(message.find("non-finite entry") != std::string::npos);
      // The entry is named (symmetric routines read the lower triangle, so (3, 2) there).
      CHECK((message.find("at (2, 3)") != std::string::npos || message.find("at (3, 2)") != std::string::npos));
    }
    // The operands are untouched and still usable.
    CHECK(a.at(0, 0) == T(4));
    Tensor<T> l;
    l("i,j") = tenex::cholesky(spd("i,j"));
    CHECK(l.at(3, 3) == doctest::Approx(std::sqrt(2.0)).epsilon(1e-6));
  }
}
TEST_CASE_TEMPLATE_APPLY(edges_nonfinite_decompositions, tenex_test::Scalars);

// ---- Labels --------------------------------------------------------------------------------

TEST_CASE("edges: malformed labels of every kind are errors that leave every object as it was") {
  Tensor<double> v(Shape{3}, {1, 2, 3}), target(Shape{2}, {7, 8});
  const std::string ten_thousand(10000, 'x');
  std::string many_labels;
  for (int i = 0; i < 2000; ++i) many_labels += (i ? ",i" : "i") + std::to_string(i);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {",", "empty label at position 1"},
      {"i,", "empty label at position 2"},
      {",i", "empty label at position 1"},
      {"i,,j", "empty label at position 2"},
      {"1", "\"1\" is not an identifier"},
      {"2i", "\"2i\" is not an identifier"},
      {"i-j", "\"i-j\" is not an identifier"},
      {"a b", "\"a b\" is not an identifier"},
      {"\xc3\xa4", "\"\\xc3\\xa4\" is not an identifier"},           // non-ASCII, shown escaped
      {std::string("i\0j", 3), "\"i\\x00j\" is not an identifier"},  // a NUL inside
      {"i;j", "is not an identifier"},
      {ten_thousand, "(10000 characters): longer than 1024 characters"},
      {many_labels, "characters): longer than 1024 characters"},
  };
  for (const auto& [labels, expected] : cases) {
    CAPTURE(labels.size());
    CAPTURE(expected);
    // As an operand, as a target, in a reduction and in a sparse map: one clear message.
    const std::string as_operand = error_of([&] { target("i") = v(labels); });
    const std::string as_target = error_of([&] { target(labels) = v("i"); });
    const std::string as_reduction = error_of([&] { target("") = tenex::sum(v("i"), labels); });
    for (const std::string& m : {as_operand, as_target, as_reduction}) {
      CHECK(m.rfind("tenex: malformed labels \"", 0) == 0);
      CHECK(m.find(expected) != std::string::npos);
      CHECK(m.size() < 300);                               // a 10,000-character text is not echoed whole
      for (char ch : m) CHECK((ch >= 0x20 && ch < 0x7f));  // printable: no NUL, no raw bytes
    }
    CHECK(target.to_vector() == std::vector<double>{7, 8});
    CHECK(target.shape() == Shape{2});
    CHECK(v.to_vector() == std::vector<double>{1, 2, 3});
  }
  // Labels that are fine: "" for a scalar, spaces and tabs around, a long but sane name.
  Tensor<double> s;
  s("") = v(" \tmode_with_a_long_but_reasonable_name_0123456789 ");
  CHECK(s.at() == 6.0);
  // A label count that does not match the rank names both.
  const std::string rank = error_of([&] { target("i") = v("i,j"); });
  CHECK(rank.find("labels \"i,j\" name 2 modes but the tensor has rank 1 with extents {3}") != std::string::npos);
}
