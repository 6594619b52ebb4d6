// tenex::explain: the plan of an expression and of the last set, and the costs DOT shows.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/dumped_graphs.hpp"
#include "support/environment_scope.hpp"
#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

template <class T>
Tensor<T> random_tensor(const Shape& shape, unsigned seed) {
  Tensor<T> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::vector<std::string> lines_with(const std::string& text, const std::string& what) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (contains(line, what)) found.push_back(line);
  }
  return found;
}

/// The whitespace-separated words of `line`.
std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool has_word(const std::string& line, const std::string& word) {
  for (const std::string& w : words(line)) {
    if (w == word) return true;
  }
  return false;
}

/// The number after "speed-up " (0 when there is none).
double speed_up(const std::string& plan) {
  const std::size_t at = plan.find("speed-up ");
  if (at == std::string::npos) return 0;
  return std::stod(plan.substr(at + 9));
}

/// Plain matrix product.
template <class T>
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, std::size_t m, std::size_t k,
                           std::size_t n) {
  std::vector<double> c(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t l = 0; l < k; ++l) {
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + l] * b[l * n + j];
    }
  }
  return c;
}

template <class T>
std::vector<double> values(const Tensor<T>& t) {
  const std::vector<T> v = t.to_vector();
  return {v.begin(), v.end()};
}

}  // namespace

// A chain written in its expensive order: p (q r) costs 2*50*40*30 + 2*2*50*30 = 126000 flops,
// (p q) r costs 2*2*50*40 + 2*2*40*30 = 8000 + 4800 = 12800.
TEST_CASE_TEMPLATE_DEFINE("explain: a chain written in a bad order shows two GEMMs and the speed-up", T,
                          explain_chain) {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  auto p = random_tensor<T>(Shape{2, 50}, 1), q = random_tensor<T>(Shape{50, 40}, 2);
  auto r = random_tensor<T>(Shape{40, 30}, 3);
  const auto e = p("i,j") * (q("j,k") * r("k,l"));
  const std::string plan = tenex::explain(e);
  CAPTURE(plan);
  const std::vector<std::string> gemms = lines_with(plan, "GEMM");
  REQUIRE(gemms.size() == 2);
  CHECK(has_word(gemms[0], "8000"));
  CHECK(has_word(gemms[1], "4800"));
  CHECK(contains(gemms[0], "(i=2,j=50)"));
  CHECK(contains(gemms[0], "-> (i=2,k=40)"));
  CHECK(contains(gemms[1], "#1(i=2,k=40)"));
  CHECK(contains(plan, "total: 12800 flops in 2 kernels"));
  CHECK(contains(plan, "written order: 126000 flops"));
  CHECK(speed_up(plan) == doctest::Approx(126000.0 / 12800.0).epsilon(0.01));
  CHECK(speed_up(plan) > 1.0);
  // The intermediate (i,k) {2, 40}: 80 elements.
  CHECK(contains(plan, "largest intermediate: " + std::to_string(80 * sizeof(T)) + " B (step 1, (i=2,k=40))"));
  CHECK(contains(plan, sizeof(T) == 4 ? "(float)" : "(double)"));
  // Asking again gives the same plan: nothing changed.
  CHECK(tenex::explain(e) == plan);

  // A chain in its good order gains nothing.
  const std::string good = tenex::explain(p("i,j") * q("j,k") * r("k,l"));
  CHECK(speed_up(good) == doctest::Approx(1.0));
}
TEST_CASE_TEMPLATE_APPLY(explain_chain, tenex_test::Scalars);

TEST_CASE("explain: before any set ran on a thread it says so") {
  std::string plan;
  bool threw = false;
  std::thread other([&] {
    try {
      plan = tenex::explain();
    } catch (...) {
      threw = true;
    }
  });
  other.join();
  CHECK_FALSE(threw);
  CHECK(contains(plan, "no set has been evaluated on this thread yet"));
}

TEST_CASE("explain: explain() describes the last set evaluated") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  auto p = random_tensor<double>(Shape{2, 50}, 4), q = random_tensor<double>(Shape{50, 40}, 5);
  auto r = random_tensor<double>(Shape{40, 30}, 6);
  Tensor<double> x;
  x("i,l") = p("i,j") * (q("j,k") * r("k,l"));
  const std::string plan = tenex::explain();
  CAPTURE(plan);
  CHECK(contains(plan, "last set evaluated on this thread"));
  const std::vector<std::string> gemms = lines_with(plan, "GEMM");
  REQUIRE(gemms.size() == 2);
  CHECK(has_word(gemms[0], "8000"));
  CHECK(has_word(gemms[1], "4800"));
  CHECK(contains(plan, "total: 12800 flops"));
  CHECK(contains(plan, "written order: 126000 flops"));
  CHECK(speed_up(plan) > 1.0);
  CHECK(contains(plan, "measured: "));
  // The output names its target; the inputs are t0, t1, t2.
  const std::vector<std::string> outputs = lines_with(plan, "output");
  REQUIRE(outputs.size() == 1);
  CHECK(contains(outputs[0], "-> t3(i=2,l=30)"));
  CHECK(contains(outputs[0], "hand-over"));
  CHECK(tenex::explain() == plan);  // describing changes nothing

  // The next set replaces it.
  Tensor<double> y;
  y("j,i") = p("i,j");
  const std::string next = tenex::explain();
  CHECK(lines_with(next, "GEMM").empty());
  CHECK(lines_with(next, "permute").size() == 1);
}

TEST_CASE("explain: the last plan keeps no tensor alive") {
  std::weak_ptr<void> watched;
  {
    auto a = random_tensor<double>(Shape{30, 40}, 7), b = random_tensor<double>(Shape{40, 20}, 8);
    Tensor<double> c;
    c("i,j") = a("i,k") * b("k,j");
    watched = tenex::detail::Access::storage(a);
    REQUIRE_FALSE(watched.expired());
  }
  CHECK(watched.expired());
  CHECK(lines_with(tenex::explain(), "GEMM").size() == 1);
}

TEST_CASE_TEMPLATE_DEFINE("explain: explain(e) evaluates nothing and the set still runs", T, explain_pending) {
  auto p = random_tensor<T>(Shape{2, 5}, 9), q = random_tensor<T>(Shape{5, 4}, 10);
  auto r = random_tensor<T>(Shape{4, 3}, 11);
  Tensor<T> c;
  std::string plan;
  {
    const auto e = p("i,j") * q("j,k") * r("k,l");
    c("i,l") = e;  // joins e's set: runs when e is gone
    CHECK(c.pending());
    plan = tenex::explain(e);
    CHECK(c.pending());
    CHECK(tenex::explain(e) == plan);
  }
  CAPTURE(plan);
  CHECK_FALSE(c.pending());
  // The statement's target and e's value: the products are shared.
  CHECK(contains(plan, "with the 1 statement its set has recorded"));
  CHECK(lines_with(plan, "GEMM").size() == 2);
  CHECK(lines_with(plan, "output").size() == 2);
  CHECK(contains(plan, "-> value(i=2,l=3)"));
  const std::vector<double> expected = matmul<T>(matmul<T>(values(p), values(q), 2, 5, 4), values(r), 2, 4, 3);
  const std::vector<double> got = values(c);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-4));
}
TEST_CASE_TEMPLATE_APPLY(explain_pending, tenex_test::Scalars);

TEST_CASE("explain: a decomposition names its LAPACK routine and counts") {
  auto s = random_tensor<double>(Shape{6, 6}, 12);
  const std::string plan = tenex::explain(tenex::cholesky(s("i,k") * s("j,k")));
  CAPTURE(plan);
  const std::vector<std::string> potrf = lines_with(plan, "LAPACK potrf");
  REQUIRE(potrf.size() == 1);
  CHECK(has_word(potrf[0], "72"));  // n^3 / 3 for n = 6
  CHECK(lines_with(plan, "GEMM").size() == 1);
  CHECK(contains(tenex::explain(tenex::eigen_solve(s("i,j") + s("j,i")).second), "LAPACK syevd"));
}

TEST_CASE("explain: a Shape expression computes shapes only") {
  Shape a{3, 4};
  const tenex::Indexed<Shape> x(a, "i,j");
  const std::string plan = tenex::explain(x);
  CHECK(contains(plan, "Shape expression computes shapes only"));
}

TEST_CASE("explain: a moved-from expression is an error") {
  auto a = random_tensor<double>(Shape{2, 2}, 13);
  auto e = a("i,j") * 2.0;
  auto f = std::move(e);
  CHECK_THROWS_AS((void)tenex::explain(e), tenex::Error);
  CHECK_NOTHROW((void)tenex::explain(f));
}

TEST_CASE("explain: DOT shows each node's flops and bytes and names the targets") {
  auto a = random_tensor<double>(Shape{10, 20}, 14), b = random_tensor<double>(Shape{20, 40}, 15);
  Tensor<double> c;
  const auto graphs = tenex_test::dumped_graphs([&] { c("i,j") = a("i,k") * b("k,j"); });
  REQUIRE(graphs.size() == 1);
  const std::string& dot = graphs[0];
  CAPTURE(dot);
  CHECK(contains(dot, "xlabel=\"16000 flops\\n3.1 KiB\""));  // 2 * 10 * 20 * 40; 400 doubles
  CHECK(contains(dot, "output [target t2]"));                // a and b are t0 and t1
  CHECK(contains(dot, "xlabel=\"t0\\n1.6 KiB\""));

  tenex::OpGraph g;
  (void)(a("i,k") * b("k,j")).add_to_graph(g);
  CHECK(contains(g.to_dot(), "16000 flops"));
}

TEST_CASE("explain: explain() names the plan each CPU contraction ran and why") {
  tenex::set_default_backend(tenex::BackendKind::cpu);
  // estimate: the cost model's plan, whatever the suite runs under (read when a thread first
  // meets a shape, so the extents here are this case's own).
  EnvironmentScope estimate("TENEX_PLAN_SEARCH", "estimate");
  Tensor<double> a = random_tensor<double>(Shape{37, 41}, 1), b = random_tensor<double>(Shape{41, 43}, 2);
  Tensor<double> c;
  c("i,j") = a("i,k") * b("k,j");
  const std::string text = tenex::explain();
  CHECK(lines_with(text, "contraction 1 ran: ").size() == 1);
  CHECK(contains(text, "[model]"));
  CHECK_FALSE(contains(text, "contraction 2 ran: "));
  // A contraction large enough to probe the machine (unless TENEX_PROBE=0): the model's rates.
  {
    EnvironmentScope probing("TENEX_PROBE", "1");
    Tensor<double> e = random_tensor<double>(Shape{160, 160}, 3), f;
    f("i,j") = e("i,k") * e("k,j");
    CHECK(contains(tenex::explain(), "\nmachine probe (one core): dgemm "));
  }
  // A set without a contraction has no such line.
  Tensor<double> d;
  d("i,j") = a("i,j") + a("i,j");
  CHECK_FALSE(contains(tenex::explain(), " ran: "));
  tenex::set_default_backend(tenex::BackendKind::automatic);
}

TEST_CASE("explain: plan_of gives explain(e)'s steps as data, and evaluates nothing") {
  Tensor<double> a(Shape{2, 50}), b(Shape{50, 40}), c(Shape{40, 30}), d;
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  tenex::fill_random(c, 3);
  auto e = a("i,j") * b("j,k") * c("k,l");
  const std::vector<tenex::PlanStep> steps = tenex::plan_of(e);
  const std::string text = tenex::explain(e);
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].operation == "contract");
  CHECK(steps[0].kernel == "GEMM");
  CHECK(steps[0].flops == 2.0 * 2 * 50 * 40);
  CHECK(steps[0].bytes == 2 * 40 * sizeof(double));
  CHECK(steps[1].operands.at(0).rfind("#1(", 0) == 0);
  CHECK(steps[2].operation == "output");
  CHECK(steps[2].result.rfind("value(", 0) == 0);
  for (const tenex::PlanStep& s : steps) {
    CAPTURE(s.result);
    CHECK(text.find(s.result) != std::string::npos);
    for (const std::string& o : s.operands) CHECK(text.find(o) != std::string::npos);
  }
  d("i,l") = e;  // plan_of ran nothing: the set still runs, once
  CHECK(d.shape() == Shape{2, 30});
  CHECK(tenex::plan_of(Shape{3}("i") * Shape{3}("i")).empty());
}
