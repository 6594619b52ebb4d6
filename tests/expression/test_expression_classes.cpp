// Expression classes: the library's carry their own typed data and lower themselves
// (add_to_graph), and a user's (derived from Nary, docs/extending.md) take part in evaluation
// like them: nested, as operands of library expressions, adding nodes through the op table,
// checked to draw the value they declare, and an error when they give no meaning.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#include "support/scalars.hpp"
#include "support/user_classes.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// A user class that adds its node directly through the op table's typed parameters.
template <class T>
class Difference : public tenex::Nary<2, T> {
 public:
  Difference(const tenex::Expression<T>& a, const tenex::Expression<T>& b) : tenex::Nary<2, T>(a, b) {}
  std::string_view name() const override { return "Difference"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    const tenex::NodeId a = this->child(0).add_to_graph(graph);
    const tenex::NodeId b = this->child(1).add_to_graph(graph);
    tenex::SubtractParams params;
    params.alpha_b = 1.0;
    return graph.add(params, {a, b});
  }
};

// Derives from Nary but gives no meaning.
template <class T>
class Meaningless : public tenex::Nary<1, T> {
 public:
  explicit Meaningless(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
  std::string_view name() const override { return "Meaningless"; }
};

// Draws the leading 2 x 2 block of its operand, and declares it through Nary's constructor.
template <class T>
class Block : public tenex::Nary<1, T> {
 public:
  explicit Block(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x.labels(), {2, 2}, x) {}
  std::string_view name() const override { return "Block"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    return graph.add(tenex::SliceParams{{0, 0}, {2, 2}}, {this->child(0).add_to_graph(graph)});
  }
};

// The same block, undeclared: it claims its operand's extents and draws others.
template <class T>
class UndeclaredBlock : public tenex::Nary<1, T> {
 public:
  explicit UndeclaredBlock(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
  std::string_view name() const override { return "UndeclaredBlock"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    return graph.add(tenex::SliceParams{{0, 0}, {2, 2}}, {this->child(0).add_to_graph(graph)});
  }
};

// Draws a tensor of its own with a label the operand lacks.
template <class T>
class Stranger : public tenex::Nary<1, T> {
 public:
  Stranger(const tenex::Expression<T>& x, T& other) : tenex::Nary<1, T>(x), other_(&other) {}
  std::string_view name() const override { return "Stranger"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override { return graph.add_input(*other_, "q"); }

 private:
  T* other_;
};

// Declares its value badly.
template <class T>
class Misdeclared : public tenex::Nary<1, T> {
 public:
  Misdeclared(const tenex::Expression<T>& x, std::vector<std::string> labels, std::vector<std::size_t> extents)
      : tenex::Nary<1, T>(std::move(labels), std::move(extents), x) {}
  std::string_view name() const override { return "Misdeclared"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override { return this->child(0).add_to_graph(graph); }
};

}  // namespace

TEST_CASE("expression classes: a user class overriding add_to_graph is evaluated through it") {
  tenex::Tensor<double> x(tenex::Shape{2}, {1, 2}), z;
  z("i") = Twice<tenex::Tensor<double>>(x("i"));
  CHECK(z.at(0) == 2.0);
  CHECK(z.at(1) == 4.0);
  // Inside a library expression, twice, and as an operand of another user class.
  tenex::Tensor<double> y(tenex::Shape{2}, {10, 20}), w, v;
  auto twice = Twice<tenex::Tensor<double>>(x("i"));
  w("i") = twice + y("i") - twice;
  CHECK(w.at(0) == 10.0);
  CHECK(w.at(1) == 20.0);
  v("i") = Twice<tenex::Tensor<double>>(Twice<tenex::Tensor<double>>(x("i")) * 1.0);
  CHECK(v.at(0) == 4.0);
  CHECK(v.at(1) == 8.0);
  // The same drawn on its own graph: a scale node over the input.
  tenex::OpGraph g;
  const tenex::NodeId id = twice.add_to_graph(g);
  CHECK(g.node(id).kind == tenex::OpKind::scale);
  CHECK(contains(g.to_dot(), "scale alpha=2"));
}

TEST_CASE("expression classes: user classes nest: each object's add_to_graph is honoured") {
  // Through a function (a class's constructor given its own class copies, docs/extending.md).
  using TD = tenex::Tensor<double>;
  auto twice = [](const tenex::Expression<TD>& e) { return Twice<TD>(e); };
  TD x(tenex::Shape{2}, {1, 2}), y(tenex::Shape{2}, {10, 20}), z, w, v, u, d;
  z("i") = twice(twice(x("i")));
  CHECK(z.to_vector() == std::vector<double>{4, 8});
  const Twice<TD> inner = twice(x("i"));
  w("i") = twice(inner) + inner;
  CHECK(w.to_vector() == std::vector<double>{6, 12});
  v("i") = twice(twice(twice(x("i"))) + inner) * twice(y("i"));
  CHECK(v.to_vector() == std::vector<double>{2 * (4 + 2) * 20.0, 2 * (8 + 4) * 40.0});
  // Another user class around and inside, by a const Expression<T>& operand.
  const tenex::Expression<TD>& as_operand = inner;
  u("i") = Difference<TD>(Twice<TD>(as_operand), Difference<TD>(inner, x("i")));
  CHECK(u.to_vector() == std::vector<double>{4 - 1, 8 - 2});
  // The same nested object in two statements of one set, and read by the graph API.
  {
    const Twice<TD> four = twice(inner);
    d("i") = four - y("i");
    z("i") = four * four;
  }
  CHECK(d.to_vector() == std::vector<double>{-6, -12});
  CHECK(z.to_vector() == std::vector<double>{16, 64});
}

TEST_CASE("expression classes: a user class must draw the value it declares") {
  using TD = Tensor<double>;
  TD a(Shape{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), b, c, d;
  // Declared: the block, with the extents it draws.
  const Block<TD> declared(a("i,j"));
  CHECK(declared.extents() == std::vector<std::size_t>{2, 2});
  b("i,j") = declared;
  CHECK(b.shape() == Shape{2, 2});
  CHECK(b.to_vector() == std::vector<double>{1, 2, 4, 5});
  // Not declared: it claims (i,j) {3, 3} and draws {2, 2}. Before, b took {2, 2} silently.
  auto sentinel = TD(Shape{1}, {7});
  c = sentinel;
  CHECK_THROWS_WITH_AS(
      c("i,j") = UndeclaredBlock<TD>(a("i,j")),
      "tenex: UndeclaredBlock::add_to_graph returned a node (\"i,j\") {2, 2} that is not the value the class "
      "declares, (\"i,j\") {3, 3} (its labels() and extents()): label \"i\" has extent 2, declared 3; "
      "draw the declared value, or declare the value's labels and extents through Nary's constructor "
      "(docs/extending.md)",
      tenex::ShapeError);
  CHECK(c.to_vector() == std::vector<double>{7});
  // Also as an operand of a library expression.
  CHECK_THROWS_AS(d("i,j") = 2.0 * UndeclaredBlock<TD>(a("i,j")), tenex::ShapeError);
  // A label the class does not declare.
  TD q(Shape{4}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(d("q") = Stranger<TD>(a("i,j"), q),
                       "tenex: Stranger::add_to_graph returned a node (\"q\") {4} that is not the value the class "
                       "declares, (\"i,j\") {3, 3} (its labels() and extents()): label \"q\" is not declared; draw "
                       "the declared value, or declare the value's labels and extents through Nary's constructor "
                       "(docs/extending.md)",
                       tenex::ShapeError);
  // Declared labels the node lacks are summed away: a product declares its summed labels too.
  TD x(Shape{2, 3}, {1, 2, 3, 4, 5, 6}), y(Shape{3, 2}, {1, 0, 0, 1, 1, 1}), xy;
  xy("i,j") = Twice<TD>(x("i,k") * y("k,j"));
  CHECK(xy.to_vector() == std::vector<double>{8, 10, 20, 22});
  // Declarations that cannot be.
  CHECK_THROWS_WITH_AS(Misdeclared<TD>(a("i,j"), {"i", "j"}, {2}),
                       "tenex: Nary: the declared labels \"i,j\" are 2 but the declared extents {2} are 1; declare one "
                       "extent a label",
                       tenex::ShapeError);
  CHECK_THROWS_AS(Misdeclared<TD>(a("i,j"), {"i", "i"}, {2, 2}), tenex::ShapeError);
  CHECK_THROWS_AS(Misdeclared<TD>(a("i,j"), {"i,j"}, {2}), tenex::Error);
}

TEST_CASE("expression classes: a user class's product keeps its own summed label under every pass list") {
  // The fragment of twice() sums its p; the product beside it sums another p. Flattening both
  // into one chain (the ordering pass) would sum them as one label.
  using TD = tenex::Tensor<double>;
  auto twice = [](const tenex::Expression<TD>& e) { return Twice<TD>(e); };
  TD a(tenex::Shape{2, 3}, {1, 2, 3, 4, 5, 6}), b(tenex::Shape{2}, {1, -1}), c(tenex::Shape{2, 3}, {2, 0, 1, 1, 3, 2}),
      d(tenex::Shape{2}, {3, 1});
  // (a b)_j = a_0j - a_1j = -3 each; (c d)_j = 3 c_0j + c_1j = {7, 3, 5}.
  const std::vector<double> ab_ab{18, 18, 18}, ab_cd{-42, -18, -30};
  for (const char* passes : {"all", "none", "order", "cse,order", "order,fuse", "fold_scales,order"}) {
    CAPTURE(std::string(passes));
    ::setenv("TENEX_PASSES", passes, 1);
    TD r, s;
    r("j") = twice(a("p,j") * b("p")) * (a("p,j") * b("p"));
    s("j") = twice(a("p,j") * b("p")) * (c("p,j") * d("p"));
    CHECK(r.to_vector() == ab_ab);
    CHECK(s.to_vector() == ab_cd);
  }
  ::unsetenv("TENEX_PASSES");
}

TEST_CASE("expression classes: a user Nary's operands agree on each label's extent where it is written") {
  using TD = tenex::Tensor<double>;
  TD x(tenex::Shape{4}), y(tenex::Shape{6});
  CHECK_THROWS_AS(Difference<TD>(x("i"), y("i")), tenex::ShapeError);
  CHECK_NOTHROW(Difference<TD>(x("i"), y("j")));
}

TEST_CASE_TEMPLATE_DEFINE("expression classes: a user class adding a node through OpGraph::add", T,
                          expression_classes_op_graph_add) {
  Tensor<T> a(Shape{3}, {5, 7, 9}), b(Shape{3}, {1, 2, 3}), c, d;
  c("i") = Difference<Tensor<T>>(a("i"), b("i"));
  CHECK(c.to_vector() == std::vector<T>{4, 5, 6});
  // Reading a pending result inside the user class links the sets: program order holds.
  d("i") = Difference<Tensor<T>>(c("i"), b("i")) * 2.0;
  CHECK(d.to_vector() == std::vector<T>{6, 6, 6});
}
TEST_CASE_TEMPLATE_APPLY(expression_classes_op_graph_add, tenex_test::Scalars);

TEST_CASE("expression classes: a Nary without add_to_graph is an error, not a wrong result") {
  Tensor<double> x(Shape{2}, {1, 2}), z;
  CHECK_THROWS_WITH_AS(z("i") = Meaningless<Tensor<double>>(x("i")),
                       "tenex: the expression class Meaningless derives from Nary but does not override "
                       "add_to_graph, so it has no meaning to evaluate",
                       tenex::Error);
  CHECK_FALSE(z.has_value());
}

TEST_CASE("expression classes: the public classes carry their own typed data") {
  Tensor<double> a(Shape{3, 4}), s(Shape{3, 3});
  const auto sl = tenex::slice(a("i,j"), {0, 1}, {2, 4});
  CHECK(sl.lo() == std::vector<std::size_t>{0, 1});
  CHECK(sl.hi() == std::vector<std::size_t>{2, 4});
  const auto ch = tenex::chip(a("i,j"), "j", 2);
  CHECK(ch.mode() == 1);
  CHECK(ch.index() == 2);
  CHECK(tenex::pow(s("i,j"), 3).power() == 3);
  CHECK((2.0 * (3.0 * a("i,j"))).factor() == 6.0);
  // Each lowers itself: through a reference to the base, the graph is the class's own.
  tenex::OpGraph g;
  const tenex::Expression<Tensor<double>>& base = sl;
  const tenex::NodeId id = base.add_to_graph(g);
  CHECK(g.node(id).kind == tenex::OpKind::slice);
  CHECK(g.node(id).get<tenex::SliceParams>().hi == std::vector<std::size_t>{2, 4});
}
