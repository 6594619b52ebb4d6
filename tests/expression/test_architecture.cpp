// The architecture issue's guarantees: user classes take part in evaluation, program order
// holds through every handle, a failed multi-target statement changes nothing, depth and
// set length cost no recursion and no quadratic time, moved-from handles, the labels of
// cholesky, pow's domain, scale chains, the backend variable and the graph dump.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/dumped_graphs.hpp"
#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

template <class T>
class Twice : public tenex::Nary<1, T> {
 public:
  explicit Twice(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
  std::string_view name() const override { return "Twice"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    return (2.0 * this->child(0)).add_to_graph(graph);
  }
};

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

template <class F>
std::vector<std::string> dumped(F&& statements) {
  return tenex_test::dumped_graphs(statements);
}

}  // namespace

TEST_CASE("architecture: a user class overriding add_to_graph is evaluated through it") {
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

TEST_CASE("architecture: user classes nest: each object's add_to_graph is honoured") {
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

TEST_CASE("architecture: a user class must draw the value it declares") {
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

TEST_CASE("architecture: a user class's product keeps its own summed label under every pass list") {
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

TEST_CASE("architecture: a user Nary's operands agree on each label's extent where it is written") {
  using TD = tenex::Tensor<double>;
  TD x(tenex::Shape{4}), y(tenex::Shape{6});
  CHECK_THROWS_AS(Difference<TD>(x("i"), y("i")), tenex::ShapeError);
  CHECK_NOTHROW(Difference<TD>(x("i"), y("j")));
}

TEST_CASE_TEMPLATE_DEFINE("architecture: a user class adding a node through OpGraph::add", T, arch_0) {
  Tensor<T> a(Shape{3}, {5, 7, 9}), b(Shape{3}, {1, 2, 3}), c, d;
  c("i") = Difference<Tensor<T>>(a("i"), b("i"));
  CHECK(c.to_vector() == std::vector<T>{4, 5, 6});
  // Reading a pending result inside the user class links the sets: program order holds.
  d("i") = Difference<Tensor<T>>(c("i"), b("i")) * 2.0;
  CHECK(d.to_vector() == std::vector<T>{6, 6, 6});
}

TEST_CASE("architecture: a Nary without add_to_graph is an error, not a wrong result") {
  Tensor<double> x(Shape{2}, {1, 2}), z;
  CHECK_THROWS_WITH_AS(z("i") = Meaningless<Tensor<double>>(x("i")),
                       "tenex: the expression class Meaningless derives from Nary but does not override "
                       "add_to_graph, so it has no meaning to evaluate",
                       tenex::Error);
  CHECK_FALSE(z.has_value());
}

TEST_CASE_TEMPLATE_DEFINE("architecture: += and -= through a stored handle read the current value", T, arch_1) {
  Tensor<T> a(Shape{3}, {1, 2, 3}), b(Shape{3}, {10, 20, 30}), c(Shape{3}, {100, 100, 100});
  {
    auto h = c("i");
    c("i") = a("i");
    h += b("i");
  }
  CHECK(c.to_vector() == std::vector<T>{11, 22, 33});
  // t = a; t -= a through a handle kept in a vector gives zero.
  Tensor<T> t;
  std::vector<tenex::Indexed<Tensor<T>>> handles;
  handles.push_back(t("i"));
  handles[0] = a("i");
  handles[0] -= a("i");
  handles.clear();
  CHECK(t.to_vector() == std::vector<T>{0, 0, 0});
}

TEST_CASE_TEMPLATE_DEFINE("architecture: a failed multi-target statement changes none of its targets", T, arch_2) {
  Tensor<T> a(Shape{3, 3}, {4, 1, 0, 1, 3, 1, 0, 1, 2});
  Tensor<T> v(Shape{2}, {7, 8}), w(Shape{1}, {9});
  CHECK_THROWS_AS(std::make_pair(v("i,j"), w("i")) = tenex::eigen_solve(a("i,j")), tenex::ShapeError);
  CHECK(v.shape() == Shape{2});
  CHECK(v.to_vector() == std::vector<T>{7, 8});
  CHECK(w.to_vector() == std::vector<T>{9});

  Tensor<T> q(Shape{1}, {5}), r(Shape{1}, {6});
  CHECK_THROWS_AS(tenex::tie(q("i,k"), r("k,x")) = tenex::qr(a("i,j")), tenex::ShapeError);
  CHECK(q.to_vector() == std::vector<T>{5});
  CHECK(r.to_vector() == std::vector<T>{6});

  // A good statement after the failed one works, and separate statements stay separate.
  Tensor<T> vv, ww;
  std::make_pair(vv("i,j"), ww("j")) = tenex::eigen_solve(a("i,j"));
  CHECK(vv.shape() == Shape{3, 3});
  CHECK(ww.shape() == Shape{3});
}

TEST_CASE("architecture: deep expressions build, evaluate and die without recursion") {
  Tensor<double> a(Shape{2}, {1, 2}), c;
  {
    tenex::Addition<Tensor<double>> sum = a("i") + a("i");
    for (int n = 2; n < 10000; ++n) sum = sum + a("i");
    c("i") = sum;
  }
  CHECK(c.at(0) == doctest::Approx(10000.0));
  CHECK(c.at(1) == doctest::Approx(20000.0));
  // A million-term expression dropped unevaluated.
  {
    tenex::Addition<Tensor<double>> sum = a("i") + a("i");
    for (int n = 2; n < 1000000; ++n) sum = sum + a("i");
  }
  CHECK(a.at(1) == 2.0);
}

TEST_CASE("architecture: a set kept open by one handle records many statements") {
  Tensor<double> a(Shape{4}, {1, 2, 3, 4}), c;
  auto h = a("i");
  for (int n = 0; n < 16000; ++n) c("i") = 0.5 * a("i") + h;
  CHECK(c.at(3) == 6.0);
}

TEST_CASE("architecture: a moved-from expression is an error") {
  Tensor<double> a(Shape{2}, {1, 2}), c;
  auto x = a("i") + a("i");
  auto y = std::move(x);
  CHECK_THROWS_WITH_AS(c("i") = x, doctest::Contains("moved from"), tenex::Error);
  CHECK_THROWS_AS((void)x.labels(), tenex::Error);
  c("i") = y;
  CHECK(c.at(1) == 4.0);
}

TEST_CASE_TEMPLATE_DEFINE("architecture: cholesky reads the triangle its labels name", T, arch_3) {
  // SPD in its lower triangle; garbage above, so the storage is not symmetric.
  const std::size_t n = 3;
  Tensor<T> a(Shape{n, n}, {4, 100, -50, 2, 5, 70, 1, 1, 6});
  // The transpose's lower triangle is a's upper one: make that SPD too.
  Tensor<T> b(Shape{n, n}, {4, 2, 1, -9, 5, 1, 8, 7, 6});
  auto lower_of = [&](const Tensor<T>& m, bool transpose) {
    std::vector<double> s(n * n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t r = std::max(i, j), c = std::min(i, j);
        s[i * n + j] = transpose ? m.at(c, r) : m.at(r, c);
      }
    }
    return s;
  };
  auto check = [&](const Tensor<T>& l, const std::vector<double>& s) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) CHECK(l.at(i, j) == T(0));
      for (std::size_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::size_t k = 0; k < n; ++k) sum += static_cast<double>(l.at(i, k)) * l.at(j, k);
        CHECK(sum == doctest::Approx(s[i * n + j]).epsilon(1e-4));
      }
    }
  };
  Tensor<T> l1, l2;
  l1("i,j") = tenex::cholesky(a("i,j"));  // a's lower triangle
  check(l1, lower_of(a, false));
  l2("j,i") = tenex::cholesky(b("j,i"));  // the transpose of b: b's upper triangle
  check(l2, lower_of(b, true));
}

TEST_CASE("architecture: pow takes whole powers, negative ones of the inverse, fractional ones of SPD matrices") {
  Tensor<double> a(Shape{2, 2}, {2, 0, 0, 3}), p;
  CHECK_THROWS_WITH_AS(p("i,j") = tenex::pow(a("i,j"), std::numeric_limits<double>::infinity()),
                       doctest::Contains("not finite"), tenex::Error);
  CHECK_FALSE(p.has_value());
  p("i,j") = tenex::pow(a("i,j"), -1);
  CHECK(p.at(0, 0) == doctest::Approx(0.5));
  CHECK(p.at(1, 1) == doctest::Approx(1.0 / 3.0));
  p("i,j") = tenex::pow(a("i,j"), 0.5);
  CHECK(p.at(1, 1) == doctest::Approx(std::sqrt(3.0)));
  CHECK(p.at(0, 1) == doctest::Approx(0.0));
  p("i,j") = tenex::pow(a("i,j"), 2.0);
  CHECK(p.at(1, 1) == 9.0);
  p("i,j") = tenex::pow(a("i,j"), 3u);
  CHECK(p.at(0, 0) == 8.0);
}

TEST_CASE("architecture: a chain of scales folds into one factor") {
  Tensor<double> x(Shape{2, 2}, {1, 2, 3, 4}), y(Shape{2, 2}, {1, 0, 0, 1}), r;
  const auto graphs = dumped([&] { r("i,j") = 2.0 * (x("i,k") * y("k,j")) * 3.0; });
  REQUIRE(graphs.size() == 1);
  CHECK_FALSE(contains(graphs[0], "scale"));
  CHECK(contains(graphs[0], "contract alpha=6"));
  CHECK(r.at(1, 1) == 24.0);
  CHECK(tenex::last_run_stats().graph_nodes == 4);  // two inputs, the contraction, the output
}

TEST_CASE("architecture: an unknown TENEX_BACKEND is an error of the first set") {
  Tensor<double> a(Shape{2}, {1, 2}), c;
  ::setenv("TENEX_BACKEND", "gpu", 1);
  c("i") = 2.0 * a("i");
  ::unsetenv("TENEX_BACKEND");
  CHECK_THROWS_WITH_AS(c.wait(),
                       "tenex: TENEX_BACKEND=gpu names no backend; use TENEX_BACKEND=cpu, TENEX_BACKEND=cuda or "
                       "TENEX_BACKEND=auto (or leave it unset)",
                       tenex::BackendError);
  ::setenv("TENEX_BACKEND", "CUDA", 1);
  Tensor<double> d;
  d("i") = 2.0 * a("i");
  ::unsetenv("TENEX_BACKEND");
  CHECK_THROWS_WITH_AS(d.wait(), doctest::Contains("TENEX_BACKEND=CUDA names no backend"), tenex::BackendError);
  ::setenv("TENEX_BACKEND", "auto", 1);
  Tensor<double> e;
  e("i") = 2.0 * a("i");
  ::unsetenv("TENEX_BACKEND");
  CHECK(e.at(1) == 4.0);
}

TEST_CASE("architecture: TENEX_DUMP_GRAPH creates a missing folder, or says why it cannot") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tenex-missing-" + std::to_string(::getpid())) / "deeper";
  fs::remove_all(dir.parent_path());
  Tensor<double> a(Shape{2}, {1, 2}), c;
  ::setenv("TENEX_DUMP_GRAPH", dir.c_str(), 1);
  c("i") = 2.0 * a("i");
  ::unsetenv("TENEX_DUMP_GRAPH");
  CHECK(c.at(0) == 2.0);
  REQUIRE(fs::is_directory(dir));
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  // A file where the folder should be: the set fails with a message naming it.
  const fs::path file = dir.parent_path() / "a-file";
  std::ofstream(file) << "x";
  ::setenv("TENEX_DUMP_GRAPH", file.c_str(), 1);
  Tensor<double> d;
  d("i") = 2.0 * a("i");
  ::unsetenv("TENEX_DUMP_GRAPH");
  CHECK_THROWS_WITH_AS(d.wait(), doctest::Contains("cannot create the folder"), tenex::Error);
  fs::remove_all(dir.parent_path());
}

TEST_CASE("architecture: a sparse map after an early read is refused") {
  Tensor<double> a(Shape{2, 2}, {1, 2, 3, 4}), c, d;
  tenex::SparseMap map;
  map.insert({0}, {{0}});
  map.insert({1}, {{1}});
  auto h = a("i,j");
  c("i,j") = h * 2.0;
  CHECK(c.at(0, 1) == 4.0);  // an early read runs what the set recorded so far
  CHECK_THROWS_WITH_AS(h.set_sparse_map("i", "j", map), doctest::Contains("already evaluated"), tenex::Error);
  d("i,j") = h * 1.0;
  CHECK(d.at(0, 1) == 2.0);
}

#if !defined(__SANITIZE_ADDRESS__)
// (AddressSanitizer aborts on an allocation this large instead of failing it.)
TEST_CASE("architecture: out of memory names the node, its labels, extents and bytes") {
  Tensor<double> a(Shape{200000}), b(Shape{200000}), c(Shape{200000}), r;
  // An outer product of three vectors: 8e15 elements, written to a rank-3 target.
  r("i,j,k") = a("i") * b("j") * c("k");
  try {
    r.wait();
    FAIL("an 8e15-element result was allocated");
  } catch (const tenex::BackendError& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(contains(message, "out of memory"), message);
    CHECK_MESSAGE(contains(message, "200000"), message);
    CHECK_MESSAGE(contains(message, "bytes"), message);
  }
}
#endif

TEST_CASE_TEMPLATE_APPLY(arch_0, tenex_test::Scalars);
TEST_CASE_TEMPLATE_APPLY(arch_1, tenex_test::Scalars);
TEST_CASE_TEMPLATE_APPLY(arch_2, tenex_test::Scalars);
TEST_CASE_TEMPLATE_APPLY(arch_3, tenex_test::Scalars);

TEST_CASE("architecture: the public classes carry their own typed data") {
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
