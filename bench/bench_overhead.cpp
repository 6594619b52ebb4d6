// Benchmark: what one tiny statement costs beyond its arithmetic (the per-statement overhead).
//
//   bench_overhead [--iterations 20000] [--repeat 5] [--filter product|elementwise|linked3]
//                  [--cache on|off|both]
//
// Each case is a loop body repeated --iterations times on 2 x 2 tensors (double), so the
// arithmetic is a few nanoseconds and the time is tenex's own work per statement: making
// the expression nodes, recording the set, building and optimizing its graph, choosing the
// backend, running the kernels and fulfilling the results.
//
//   product      c("i,j") = a("i,k") * b("k,j")                  one statement per set
//   elementwise  c("i,j") = a("i,j") + b("j,i")                  one statement per set
//   linked3      three statements kept in one set by a named handle (b("k,j")), the second
//                reading the first's pending result, the third the second's
//
// Every case runs with the plan cache on and off (TENEX_PLAN_CACHE=0, read by each set),
// alternating so that drift in machine load hits both; each side reports the best of
// --repeat runs after a warm-up, in microseconds per statement, and off/on is the ratio.
// A check column compares the last result with the product computed here. The allocations
// column counts calls of operator new per statement (this program replaces it, so the
// library's allocations count too), in the last timed run with the plan cache on (and off).
// Instructions, which do not depend on load either, come from valgrind (docs/performance.md):
//   valgrind --tool=callgrind bench_overhead --iterations N --repeat 1 --cache on --filter product
// at two values of N; the difference of the totals over 1.1 x the difference of N.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

// Counted with a relaxed load and store, not an atomic increment: a locked add in every
// allocation would be part of the time measured. Allocations made by two threads at once
// may be counted once (the statements here run on one thread).
std::atomic<long> allocations{0};

}  // namespace

void* operator new(std::size_t size) {
  allocations.store(allocations.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using tenex::Tensor;
using Clock = std::chrono::steady_clock;

struct Options {
  long iterations = 20000;
  int repeat = 5;
  std::string filter;          // run only the case of this name
  std::string cache = "both";  // on, off or both (one side alone: for profiling)
};

bool parse_options(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) return false;
    if (arg == "--filter" || arg == "--cache") {
      (arg == "--filter" ? options.filter : options.cache) = argv[++i];
      continue;
    }
    const long value = std::strtol(argv[++i], nullptr, 10);
    if (value <= 0) return false;
    if (arg == "--iterations") {
      options.iterations = value;
    } else if (arg == "--repeat") {
      options.repeat = static_cast<int>(value);
    } else {
      return false;
    }
  }
  return true;
}

void set_plan_cache(bool on) {
  if (on) {
    ::unsetenv("TENEX_PLAN_CACHE");
  } else {
    ::setenv("TENEX_PLAN_CACHE", "0", 1);
  }
}

/// Seconds for `iterations` runs of `body`.
double time_loop(long iterations, const std::function<void()>& body) {
  const auto start = Clock::now();
  for (long n = 0; n < iterations; ++n) body();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Case {
  std::string name;
  int statements;  // per run of body
  std::function<void()> body;
  std::function<double()> check;  // largest absolute difference from the reference
};

Tensor<double> matrix(double a00, double a01, double a10, double a11) {
  Tensor<double> t(tenex::Shape{2, 2});
  double* d = t.data();
  d[0] = a00;
  d[1] = a01;
  d[2] = a10;
  d[3] = a11;
  return t;
}

/// Row-major 2 x 2 product.
std::vector<double> product(const std::vector<double>& a, const std::vector<double>& b) {
  return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
}

double max_difference(const Tensor<double>& t, const std::vector<double>& expected) {
  const std::vector<double> got = t.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(got.at(i) - expected[i]));
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, options)) {
    std::fprintf(stderr, "usage: bench_overhead [--iterations N] [--repeat N] [--filter NAME] [--cache on|off|both]\n");
    return 2;
  }
  Tensor<double> a = matrix(1, 2, 3, 4);
  Tensor<double> b = matrix(0.5, -1, 2, 0.25);
  Tensor<double> c, t, u, v;
  const std::vector<double> av = a.to_vector(), bv = b.to_vector();

  std::vector<Case> cases;
  cases.push_back(
      {"product", 1, [&] { c("i,j") = a("i,k") * b("k,j"); }, [&] { return max_difference(c, product(av, bv)); }});
  cases.push_back({"elementwise", 1, [&] { c("i,j") = a("i,j") + b("j,i"); },
                   [&] {
                     return max_difference(c, {av[0] + bv[0], av[1] + bv[2], av[2] + bv[1], av[3] + bv[3]});
                   }});
  cases.push_back({"linked3", 3,
                   [&] {
                     auto bkj = b("k,j");  // keeps the three statements in one set
                     t("i,j") = a("i,k") * bkj;
                     u("i,j") = t("i,k") * bkj;
                     v("i,j") = u("i,j") - a("i,j");
                   },
                   [&] {
                     const std::vector<double> uv = product(product(av, bv), bv);
                     return max_difference(v, {uv[0] - av[0], uv[1] - av[1], uv[2] - av[2], uv[3] - av[3]});
                   }});

  std::printf("# bench_overhead: 2 x 2 double, %ld iterations, best of %d; microseconds per statement\n",
              options.iterations, options.repeat);
  std::printf("%-12s %10s %10s %8s %10s %10s %10s\n", "case", "cache on", "cache off", "off/on", "allocs on",
              "allocs off", "check");
  for (const Case& test : cases) {
    if (!options.filter.empty() && test.name != options.filter) continue;
    double best[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
    long allocated[2] = {-1, -1};  // in the last timed run of each side
    double worst_check = 0;
    const int first = options.cache == "off" ? 1 : 0, last = options.cache == "on" ? 1 : 2;
    for (int side = first; side < last; ++side) {  // warm-up: fills the caches, pages in the code
      set_plan_cache(side == 0);
      time_loop(std::max(1L, options.iterations / 10), test.body);
    }
    for (int r = 0; r < options.repeat; ++r) {
      for (int side = first; side < last; ++side) {
        set_plan_cache(side == 0);
        const long before = allocations.load(std::memory_order_relaxed);
        best[side] = std::min(best[side], time_loop(options.iterations, test.body));
        allocated[side] = allocations.load(std::memory_order_relaxed) - before;
        worst_check = std::max(worst_check, test.check());
      }
    }
    const double per = 1e6 / (static_cast<double>(options.iterations) * test.statements);
    const double statements = static_cast<double>(options.iterations) * test.statements;
    std::printf("%-12s %10.2f %10.2f %8.2f %10.1f %10.1f %10.1e\n", test.name.c_str(), best[0] * per, best[1] * per,
                best[1] / best[0], static_cast<double>(allocated[0]) / statements,
                static_cast<double>(allocated[1]) / statements, worst_check);
  }
  set_plan_cache(true);
  return 0;
}
