// passes::fold_gemm_beta seen through public behaviour: `c += a*b`, `c = a*b + d`,
// `c = 2*a*b - d`... run as one contraction with an addend (GEMM with beta), checked
// against naive loops in float and double, in the optimized graph (TENEX_DUMP_GRAPH), in
// the kernels counted and in the peak of intermediates (no temporary of c's size).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#include "support/dumped_graphs.hpp"
#include "support/environment_scope.hpp"
#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;
using tenex_test::dumped_graphs;

template <class T>
Tensor<T> random_tensor(const Shape& shape, std::uint64_t seed) {
  Tensor<T> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

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

/// (a b)(i, j) with naive loops, in double.
template <class T>
std::vector<double> matmul(const Tensor<T>& a, const Tensor<T>& b) {
  const std::size_t m = a.shape().extent(0), k = a.shape().extent(1), n = b.shape().extent(1);
  std::vector<double> c(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::size_t l = 0; l < k; ++l) s += double(a.at(i, l)) * double(b.at(l, j));
      c[i * n + j] = s;
    }
  }
  return c;
}

template <class T>
double tolerance() {
  return sizeof(T) == sizeof(float) ? 1e-4 : 1e-12;
}

/// `c` (m x n, or n x m when `transposed`) against expected(i, j).
template <class T, class F>
void check_values(const Tensor<T>& c, std::size_t m, std::size_t n, bool transposed, F expected) {
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double want = expected(i, j);
      const double got = transposed ? double(c.at(j, i)) : double(c.at(i, j));
      INFO("element (", i, ", ", j, ")");
      CHECK(std::abs(got - want) <= tolerance<T>() * (1.0 + std::abs(want)));
    }
  }
}

constexpr std::size_t m = 5, k = 7, n = 6;

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("gemm beta: sums with a product match naive loops", T, gemm_beta_values) {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  auto a = random_tensor<T>({m, k}, 1), b = random_tensor<T>({k, n}, 2);
  auto c0 = random_tensor<T>({m, n}, 3), d = random_tensor<T>({m, n}, 4), dt = random_tensor<T>({n, m}, 5);
  const std::vector<double> ab = matmul(a, b);
  auto at = [&](std::size_t i, std::size_t j) { return ab[i * n + j]; };
  Tensor<T> c = c0;
  SUBCASE("c += a*b") {
    c("i,j") += a("i,k") * b("k,j");
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) { return double(c0.at(i, j)) + at(i, j); });
  }
  SUBCASE("c -= a*b") {
    c("i,j") -= a("i,k") * b("k,j");
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) { return double(c0.at(i, j)) - at(i, j); });
  }
  SUBCASE("c += 2.5*a*b (alpha)") {
    c("i,j") += 2.5 * (a("i,k") * b("k,j"));
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) { return double(c0.at(i, j)) + 2.5 * at(i, j); });
  }
  SUBCASE("c = a*b + d") {
    c("i,j") = a("i,k") * b("k,j") + d("i,j");
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) { return at(i, j) + double(d.at(i, j)); });
  }
  SUBCASE("c = 2*a*b - d") {
    c("i,j") = 2.0 * a("i,k") * b("k,j") - d("i,j");
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) { return 2 * at(i, j) - double(d.at(i, j)); });
  }
  SUBCASE("c = 0.5*d - 3*a*b (the product second)") {
    c("i,j") = 0.5 * d("i,j") - 3.0 * (a("i,k") * b("k,j"));
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) { return 0.5 * double(d.at(i, j)) - 3 * at(i, j); });
  }
  SUBCASE("a transposed addend: c = a*b + dt(j,i)") {
    c("i,j") = a("i,k") * b("k,j") + dt("j,i");
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) { return at(i, j) + double(dt.at(j, i)); });
  }
  SUBCASE("a transposed target: ct(j,i) += a*b") {
    Tensor<T> ct = dt;
    ct("j,i") += a("i,k") * b("k,j");
    check_values(ct, m, n, true, [&](std::size_t i, std::size_t j) { return double(dt.at(j, i)) + at(i, j); });
  }
  SUBCASE("a transposed target: ct(j,i) -= 2*a*b") {
    Tensor<T> ct = dt;
    ct("j,i") -= 2.0 * (a("i,k") * b("k,j"));
    check_values(ct, m, n, true, [&](std::size_t i, std::size_t j) { return double(dt.at(j, i)) - 2 * at(i, j); });
  }
  SUBCASE("the addend is another product: c = a*b + d*e") {
    auto e = random_tensor<T>({n, n}, 6);
    c("i,j") = a("i,k") * b("k,j") + d("i,l") * e("l,j");
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) {
      double de = 0;
      for (std::size_t l = 0; l < n; ++l) de += double(d.at(i, l)) * double(e.at(l, j));
      return at(i, j) + de;
    });
    // d*e's buffer became the result: one buffer of c's size (rounded up to 64 bytes) at the peak.
    CHECK(tenex::last_run_stats().peak_bytes == (m * n * sizeof(T) + 63) / 64 * 64);
  }
  SUBCASE("a broadcast addend stays an element-wise node: c = a*b + v(j)") {
    auto v = random_tensor<T>({n}, 7);
    c("i,j") = a("i,k") * b("k,j") + v("j");
    check_values(c, m, n, false, [&](std::size_t i, std::size_t j) { return at(i, j) + double(v.at(j)); });
  }
}
TEST_CASE_TEMPLATE_APPLY(gemm_beta_values, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("gemm beta: c += a*b is one contraction with beta, no temporary", T, gemm_beta_graph) {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  auto a = random_tensor<T>({m, k}, 11), b = random_tensor<T>({k, n}, 12), c0 = random_tensor<T>({m, n}, 13);
  Tensor<T> plain = c0, accumulated = c0;
  plain("i,j") = a("i,k") * b("k,j");
  plain.wait();
  const tenex::RunStats product = tenex::last_run_stats();
  std::string dot;
  const auto graphs = dumped_graphs([&] {
    accumulated("i,j") += a("i,k") * b("k,j");
    accumulated.wait();
  });
  REQUIRE(graphs.size() == 1);
  dot = graphs[0];
  const tenex::RunStats sum = tenex::last_run_stats();
  INFO(dot);
  CHECK(count_nodes(dot, "contract") == 1);
  CHECK(count_nodes(dot, "add") == 0);
  CHECK(dot.find("beta=1") != std::string::npos);
  // The accumulation costs no kernel of its own (it was one more before the pass)...
  CHECK(sum.kernels == product.kernels);
  // ... and no temporary of c's size: the only intermediate is the result itself.
  CHECK(sum.peak_bytes == (m * n * sizeof(T) + 63) / 64 * 64);  // buffers are whole 64-byte lines
  CHECK(sum.peak_bytes == product.peak_bytes);
}
TEST_CASE_TEMPLATE_APPLY(gemm_beta_graph, tenex_test::Scalars);

TEST_CASE("gemm beta: a broadcast addend is not folded") {
  auto a = random_tensor<double>({m, k}, 21), b = random_tensor<double>({k, n}, 22);
  auto v = random_tensor<double>({n}, 23);
  Tensor<double> c;
  const auto graphs = dumped_graphs([&] {
    c("i,j") = a("i,k") * b("k,j") + v("j");
    c.wait();
  });
  REQUIRE(graphs.size() == 1);
  INFO(graphs[0]);
  CHECK(count_nodes(graphs[0], "add") == 1);
  CHECK(graphs[0].find("beta=") == std::string::npos);
}

TEST_CASE("gemm beta: the shape rule of a contraction with an addend") {
  auto a = random_tensor<double>({m, k}, 31), b = random_tensor<double>({k, n}, 32);
  auto d = random_tensor<double>({n, m}, 33), v = random_tensor<double>({n}, 34);
  tenex::OpGraph g;
  const tenex::NodeId ia = g.add_input(a, "i,k"), ib = g.add_input(b, "k,j");
  tenex::ContractParams params;
  params.alpha = 2.0;
  params.beta = -1.0;
  SUBCASE("the addend in another order is accepted, and DOT shows beta") {
    const tenex::NodeId id = g.add(params, {ia, ib, g.add_input(d, "j,i")});
    CHECK(g.node(id).labels == std::vector<std::string>{"i", "j"});
    CHECK(g.operands(id).size() == 3);
    CHECK(g.to_dot().find("alpha=2 beta=-1") != std::string::npos);
    CHECK_NOTHROW(g.validate());
  }
  SUBCASE("an addend without the result's labels is rejected") {
    CHECK_THROWS_AS(g.add(params, {ia, ib, g.add_input(v, "j")}), tenex::ShapeError);
  }
  SUBCASE("an addend with other extents is rejected") {
    CHECK_THROWS_AS(g.add(params, {ia, ib, g.add_input(d, "i,j")}), tenex::ShapeError);
  }
  SUBCASE("one or four operands are rejected") {
    CHECK_THROWS_AS(g.add(params, {ia}), tenex::ShapeError);
    CHECK_THROWS_AS(g.add(params, {ia, ib, ia, ib}), tenex::ShapeError);
  }
}
