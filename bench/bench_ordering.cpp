// Ordering of long products: how long the ordering of N factors takes (passes::order_product
// alone) and how long a whole set evaluating such a product takes (graph building, passes,
// execution: RunStats::seconds), for a chain x(i0) m1(i0,i1) ... mN(iN-1,iN) and a ring
// m1(i0,i1) ... mN(iN-1,i0) (a trace).
//
//   ./build/bench/bench_ordering            # N = 100, 400, 1000
//   ./build/bench/bench_ordering 2000 5000  # other sizes
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

#include "tenex/graph/passes/contraction_order.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string label(std::size_t k) { return "i" + std::to_string(k); }

struct Timing {
  double order = 0, build = 0, set = 0;
  std::size_t nodes = 0;
};

Timing run(std::size_t n, bool ring, std::size_t d) {
  Timing t;
  // The ordering alone.
  std::vector<std::vector<std::string>> operands;
  std::map<std::string, std::size_t> extents;
  std::vector<std::string> keep;
  if (!ring) operands.push_back({label(0)});
  for (std::size_t k = 0; k < n; ++k) operands.push_back({label(k), ring && k + 1 == n ? label(0) : label(k + 1)});
  for (const auto& op : operands) {
    for (const auto& l : op) extents[l] = d;
  }
  if (!ring) keep = {label(n)};
  auto start = Clock::now();
  const tenex::passes::ContractionPath path = tenex::passes::order_product(operands, extents, keep);
  t.order = since(start);
  if (path.size() + 1 != operands.size()) std::printf("bad path\n");

  // The whole set: the expression built in a loop, then evaluated.
  std::vector<tenex::Tensor<double>> m;
  for (std::size_t k = 0; k < n; ++k) {
    m.emplace_back(tenex::Shape{d, d});
    tenex::fill_random(m.back(), k + 1);
  }
  tenex::Tensor<double> x(tenex::Shape{d});
  tenex::fill_random(x, 0);
  start = Clock::now();
  std::string first = label(0) + "," + label(1);
  tenex::Multiplication<tenex::Tensor<double>> product =
      ring ? m[0](first) * m[1](label(1) + "," + label(2)) : x(label(0)) * m[0](first);
  for (std::size_t k = ring ? 2 : 1; k < n; ++k) {
    product = product * m[k](label(k) + "," + (ring && k + 1 == n ? label(0) : label(k + 1)));
  }
  t.build = since(start);
  tenex::Tensor<double> result;
  result(ring ? "" : label(n)) = product;
  result.wait();
  const tenex::RunStats stats = tenex::last_run_stats();
  t.set = stats.seconds;
  t.nodes = stats.graph_nodes;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes{100, 400, 1000};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  std::printf("%-6s %6s %12s %14s %12s %8s\n", "shape", "N", "order [s]", "expression [s]", "set [s]", "nodes");
  for (bool ring : {false, true}) {
    for (std::size_t n : sizes) {
      const Timing t = run(n, ring, 4);
      std::printf("%-6s %6zu %12.4f %14.4f %12.4f %8zu\n", ring ? "ring" : "chain", n, t.order, t.build, t.set,
                  t.nodes);
    }
  }
  return 0;
}
