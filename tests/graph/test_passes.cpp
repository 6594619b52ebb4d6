// The optimization passes seen through public behaviour: the optimized graph of each
// evaluated set (dumped with TENEX_DUMP_GRAPH), the flops the run counted, and results
// compared with plain loops.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <tenex/tenex.hpp>

#include "support/dumped_graphs.hpp"
#include "support/environment_scope.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

Tensor<double> random_tensor(const Shape& shape, std::uint64_t seed) {
  Tensor<double> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

using tenex_test::dumped_graphs;

// Nodes of one kind in DOT text: each node's label starts with its kind.
std::size_t count_nodes(const std::string& dot, const std::string& kind) {
  const std::string needle = "label=\"" + kind;
  std::size_t n = 0;
  for (std::size_t at = dot.find(needle); at != std::string::npos; at = dot.find(needle, at + 1)) {
    const char next = dot[at + needle.size()];
    n += next == ' ' || next == '\\' || next == '"' ? 1 : 0;
  }
  return n;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Plain matrix product.
std::vector<double> matmul(const Tensor<double>& a, const Tensor<double>& b) {
  const std::size_t m = a.shape().extent(0), k = a.shape().extent(1), n = b.shape().extent(1);
  std::vector<double> c(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::size_t l = 0; l < k; ++l) s += a.at(i, l) * b.at(l, j);
      c[i * n + j] = s;
    }
  }
  return c;
}

void check_values(const Tensor<double>& got, const Shape& shape, const std::vector<double>& expected) {
  REQUIRE(got.shape() == shape);
  const std::vector<double> v = got.to_vector();
  REQUIRE(v.size() == expected.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    CHECK(v[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("passes: a factor outside a product folds into the contraction") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  auto a = random_tensor({4, 6}, 1), b = random_tensor({6, 5}, 2);
  Tensor<double> c;
  const auto graphs = dumped_graphs([&] { c("i,j") = 2.0 * (a("i,k") * b("k,j")); });
  REQUIRE(graphs.size() == 1);
  const std::string& dot = graphs[0];
  CHECK_MESSAGE(count_nodes(dot, "scale") == 0, dot);
  CHECK_MESSAGE(count_nodes(dot, "contract") == 1, dot);
  CHECK_MESSAGE(contains(dot, "contract alpha=2"), dot);
  std::vector<double> expected = matmul(a, b);
  for (double& x : expected) x *= 2.0;
  check_values(c, Shape{4, 5}, expected);
}

TEST_CASE("passes: a factor on an operand of a product folds into the contraction") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  auto a = random_tensor({4, 6}, 3), b = random_tensor({6, 5}, 4);
  Tensor<double> c;
  const auto graphs = dumped_graphs([&] { c("i,j") = a("i,k") * (3.0 * b("k,j")); });
  REQUIRE(graphs.size() == 1);
  const std::string& dot = graphs[0];
  CHECK_MESSAGE(count_nodes(dot, "scale") == 0, dot);
  CHECK_MESSAGE(count_nodes(dot, "contract") == 1, dot);
  CHECK_MESSAGE(contains(dot, "contract alpha=3"), dot);
  std::vector<double> expected = matmul(a, b);
  for (double& x : expected) x *= 3.0;
  check_values(c, Shape{4, 5}, expected);
}

TEST_CASE("passes: a scaled term folds into the element-wise node") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  auto a = random_tensor({3, 7}, 5), b = random_tensor({3, 7}, 6);
  Tensor<double> d;
  const auto graphs = dumped_graphs([&] { d("i,j") = a("i,j") - 2.0 * b("i,j"); });
  REQUIRE(graphs.size() == 1);
  const std::string& dot = graphs[0];
  CHECK_MESSAGE(count_nodes(dot, "scale") == 0, dot);
  // a - 2 b: a subtract with its second factor 2, or an add with -2.
  const bool folded = contains(dot, "subtract alpha=1,2") || contains(dot, "add alpha=1,-2");
  CHECK_MESSAGE(folded, dot);
  CHECK_MESSAGE(count_nodes(dot, "subtract") + count_nodes(dot, "add") == 1, dot);
  std::vector<double> expected(21);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 7; ++j) expected[i * 7 + j] = a.at(i, j) - 2.0 * b.at(i, j);
  }
  check_values(d, Shape{3, 7}, expected);
}

TEST_CASE("passes: a common subexpression is computed once") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  auto a = random_tensor({5, 4}, 7), b = random_tensor({4, 6}, 8);
  Tensor<double> c;
  const auto graphs = dumped_graphs([&] { c("i,j") = a("i,k") * b("k,j") + a("i,k") * b("k,j"); });
  REQUIRE(graphs.size() == 1);
  const std::string& dot = graphs[0];
  CHECK_MESSAGE(count_nodes(dot, "contract") == 1, dot);
  CHECK_MESSAGE(count_nodes(dot, "input") == 2, dot);
  std::vector<double> expected = matmul(a, b);
  for (double& x : expected) x *= 2.0;
  check_values(c, Shape{5, 6}, expected);
}

TEST_CASE("passes: a product chain is evaluated in its cheaper order") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  // (p q) r costs 2*2*50*40 + 2*2*40*30 = 12800 flops; p (q r) costs
  // 2*50*40*30 + 2*2*50*30 = 126000.
  auto p = random_tensor({2, 50}, 9), q = random_tensor({50, 40}, 10), r = random_tensor({40, 30}, 11);
  Tensor<double> x;
  const auto graphs = dumped_graphs([&] { x("i,l") = p("i,j") * q("j,k") * r("k,l"); });
  REQUIRE(graphs.size() == 1);
  const tenex::RunStats stats = tenex::last_run_stats();
  const std::string& dot = graphs[0];
  CHECK_MESSAGE(count_nodes(dot, "contract") == 2, dot);
  // The intermediate is p q: (i,k) {2, 40}, not q r: (j,l) {50, 30}.
  CHECK_MESSAGE(contains(dot, "(i,k) {2, 40}"), dot);
  CHECK_FALSE(contains(dot, "{50, 30}"));
  CHECK(stats.flops == doctest::Approx(12800.0));
  CHECK(stats.flops < 126000.0);

  // The written order p (q r) is reordered too.
  Tensor<double> y;
  y("i,l") = p("i,j") * (q("j,k") * r("k,l"));
  CHECK(tenex::last_run_stats().flops == doctest::Approx(12800.0));

  const std::vector<double> pq = matmul(p, q);
  const Tensor<double> pq_tensor(Shape{2, 40}, pq);
  const std::vector<double> expected = matmul(pq_tensor, r);
  check_values(x, Shape{2, 30}, expected);
  check_values(y, Shape{2, 30}, expected);
}

TEST_CASE("passes: the dump holds one file per evaluated set") {
  auto a = random_tensor({2, 3}, 12);
  Tensor<double> b, c;
  const auto graphs = dumped_graphs([&] {
    b("j,i") = a("i,j");
    c("i,j") = 2.0 * a("i,j");
  });
  CHECK(graphs.size() == 2);
  ::unsetenv("TENEX_DUMP_GRAPH");
  const auto none = [&] {
    Tensor<double> d;
    d("i,j") = a("i,j") + a("i,j");
    return d;
  }();
  CHECK(none.at(1, 2) == doctest::Approx(2.0 * a.at(1, 2)));
  CHECK(c.at(1, 2) == doctest::Approx(2.0 * a.at(1, 2)));
  CHECK(b.at(2, 1) == a.at(1, 2));
}

TEST_CASE("passes: a chain of scales folds into one factor") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  Tensor<double> x(Shape{2, 2}, {1, 2, 3, 4}), y(Shape{2, 2}, {1, 0, 0, 1}), r;
  const auto graphs = dumped_graphs([&] { r("i,j") = 2.0 * (x("i,k") * y("k,j")) * 3.0; });
  REQUIRE(graphs.size() == 1);
  CHECK_FALSE(contains(graphs[0], "scale"));
  CHECK(contains(graphs[0], "contract alpha=6"));
  CHECK(r.at(1, 1) == 24.0);
  CHECK(tenex::last_run_stats().graph_nodes == 4);  // two inputs, the contraction, the output
}
