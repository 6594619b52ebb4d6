// Benchmark: how tenex's own work grows with the size of one set (issue 29, "slow paths").
//
//   bench_scale [--filter accumulate|sum|sum_distinct|hadamard|chain|chain2|chain2_end|trace] [--n N] [--repeat R]
//
// Each case builds one set of N statements or one expression of N terms on tiny tensors, so
// the arithmetic is negligible and the time is recording, building, optimizing and running:
//
//   accumulate    N statements `acc("i,j") += h`, h = a("i,k") * b("k,j") named in a scope
//   sum           sum = a("i") + a("i"); then N - 2 times sum = sum + a("i"); r("i") = sum
//   sum_distinct  the same with a different tensor per term (x_k("i"), 16 tensors reused)
//   hadamard      p = x_0("i") * x_1("i") * ... (N factors), r("i") = p
//   chain         p = m_0("i0,i1") * m_1("i1,i2") * ... (N factors), r("i0,iN") = p
//   chain2        the same with 2x2 matrices (issue 45: writing the chain was quadratic)
//   chain2_end    the same written from its end: p = m_k("ik,ik+1") * p
//   trace         p = m("i,i") * m("i,i") * ... (N factors), r("") = p
//
// Each line gives the seconds to record (build the expression and the statements) and to
// evaluate (the set's graph, passes and run), the best of --repeat runs, and the largest
// difference from the same result computed here with plain loops. Linear growth shows as a
// time that doubles when N doubles. The process's CPU seconds are given beside the wall
// clock's: on a machine shared with builds, they are the steadier figure.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <time.h>

#include <tenex/tenex.hpp>

namespace {

using tenex::Tensor;
using Clock = std::chrono::steady_clock;

/// Wall-clock and process CPU seconds.
struct Instant {
  Clock::time_point wall;
  double cpu;
  static Instant now() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return {Clock::now(), static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec)};
  }
};

struct Seconds {
  double wall = 0, cpu = 0;
};

Seconds seconds_since(const Instant& start) {
  const Instant end = Instant::now();
  return {std::chrono::duration<double>(end.wall - start.wall).count(), end.cpu - start.cpu};
}

struct Timing {
  Seconds record, evaluate;
  double error = 0;
};

Tensor<double> filled(std::vector<std::size_t> extents, double seed) {
  Tensor<double> t{tenex::Shape(std::move(extents))};
  double* d = t.data();
  for (std::size_t i = 0; i < t.shape().size(); ++i) d[i] = 0.5 + 0.25 * std::sin(seed + static_cast<double>(i));
  return t;
}

double max_difference(const Tensor<double>& t, const std::vector<double>& expected) {
  const std::vector<double> got = t.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, std::abs(got.at(i) - expected[i]) / std::max(1.0, std::abs(expected[i])));
  }
  return worst;
}

constexpr std::size_t kExtent = 4;

Timing accumulate(long n) {
  Tensor<double> a = filled({kExtent, kExtent}, 1), b = filled({kExtent, kExtent}, 2);
  Tensor<double> acc = filled({kExtent, kExtent}, 3);
  const std::vector<double> start = acc.to_vector(), av = a.to_vector(), bv = b.to_vector();
  Timing t;
  auto begin = Instant::now();
  {
    auto h = a("i,k") * b("k,j");
    for (long s = 0; s < n; ++s) acc("i,j") += h;
    t.record = seconds_since(begin);
    begin = Instant::now();
  }
  (void)acc.data();
  t.evaluate = seconds_since(begin);
  std::vector<double> expected = start;
  for (std::size_t i = 0; i < kExtent; ++i) {
    for (std::size_t j = 0; j < kExtent; ++j) {
      double p = 0;
      for (std::size_t k = 0; k < kExtent; ++k) p += av[i * kExtent + k] * bv[k * kExtent + j];
      for (long s = 0; s < n; ++s) expected[i * kExtent + j] += p;
    }
  }
  t.error = max_difference(acc, expected);
  return t;
}

Timing sum(long n, bool distinct) {
  std::vector<Tensor<double>> x;
  for (int k = 0; k < (distinct ? 16 : 1); ++k) x.push_back(filled({kExtent}, k));
  Tensor<double> r;
  Timing t;
  auto begin = Instant::now();
  {
    auto s = x[0]("i") + x[distinct ? 1 : 0]("i");
    for (long k = 2; k < n; ++k) s = s + x[static_cast<std::size_t>(k) % x.size()]("i");
    r("i") = s;
    t.record = seconds_since(begin);
    begin = Instant::now();
  }
  (void)r.data();
  t.evaluate = seconds_since(begin);
  std::vector<double> expected(kExtent, 0.0);
  for (long k = 0; k < n; ++k) {
    const std::vector<double> v = x[static_cast<std::size_t>(k) % x.size()].to_vector();
    for (std::size_t i = 0; i < kExtent; ++i) expected[i] += v[i];
  }
  t.error = max_difference(r, expected);
  return t;
}

Timing hadamard(long n) {
  std::vector<Tensor<double>> x;
  for (long k = 0; k < n; ++k) x.push_back(filled({kExtent}, static_cast<double>(k % 7)));
  // Factors near 1 so that a long product stays finite.
  for (Tensor<double>& v : x) {
    for (std::size_t i = 0; i < kExtent; ++i) v.data()[i] = 1.0 + 0.001 * v.data()[i];
  }
  Tensor<double> r;
  Timing t;
  auto begin = Instant::now();
  {
    auto p = x[0]("i") * x[1]("i");
    for (long k = 2; k < n; ++k) p = p * x[static_cast<std::size_t>(k)]("i");
    r("i") = p;
    t.record = seconds_since(begin);
    begin = Instant::now();
  }
  (void)r.data();
  t.evaluate = seconds_since(begin);
  std::vector<double> expected(kExtent, 1.0);
  for (long k = 0; k < n; ++k) {
    for (std::size_t i = 0; i < kExtent; ++i) expected[i] *= x[static_cast<std::size_t>(k)].data()[i];
  }
  t.error = max_difference(r, expected);
  return t;
}

Timing chain(long n, std::size_t extent, bool from_end = false) {
  std::vector<Tensor<double>> m;
  for (long k = 0; k < n; ++k) {
    Tensor<double> e = filled({extent, extent}, static_cast<double>(k % 5));
    for (std::size_t i = 0; i < extent; ++i) {  // rows summing to one: the product stays bounded
      double row = 0;
      for (std::size_t j = 0; j < extent; ++j) row += e.data()[i * extent + j];
      for (std::size_t j = 0; j < extent; ++j) e.data()[i * extent + j] /= row;
    }
    m.push_back(std::move(e));
  }
  auto label = [](long k) { return "i" + std::to_string(k); };
  Tensor<double> r;
  Timing t;
  auto begin = Instant::now();
  {
    auto factor = [&](long k) { return m[static_cast<std::size_t>(k)](label(k) + "," + label(k + 1)); };
    auto p = from_end ? factor(n - 2) * factor(n - 1) : factor(0) * factor(1);
    if (from_end) {
      for (long k = n - 2; k-- > 0;) p = factor(k) * p;
    } else {
      for (long k = 2; k < n; ++k) p = p * factor(k);
    }
    r(label(0) + "," + label(n)) = p;
    t.record = seconds_since(begin);
    begin = Instant::now();
  }
  (void)r.data();
  t.evaluate = seconds_since(begin);
  std::vector<double> expected = m[0].to_vector();
  for (long k = 1; k < n; ++k) {
    const std::vector<double> f = m[static_cast<std::size_t>(k)].to_vector();
    std::vector<double> next(extent * extent, 0.0);
    for (std::size_t i = 0; i < extent; ++i)
      for (std::size_t l = 0; l < extent; ++l)
        for (std::size_t j = 0; j < extent; ++j) next[i * extent + j] += expected[i * extent + l] * f[l * extent + j];
    expected = next;
  }
  t.error = max_difference(r, expected);
  return t;
}

Timing trace(long n) {
  Tensor<double> m = filled({kExtent, kExtent}, 1);
  for (std::size_t i = 0; i < kExtent; ++i) m.data()[i * kExtent + i] = 1.0 + 0.0001 * static_cast<double>(i);
  Tensor<double> r;
  Timing t;
  auto begin = Instant::now();
  {
    auto p = m("i,i") * m("i,i");
    for (long k = 2; k < n; ++k) p = p * m("i,i");
    r("") = p;
    t.record = seconds_since(begin);
    begin = Instant::now();
  }
  (void)r.data();
  t.evaluate = seconds_since(begin);
  // Every factor holds i: the whole product sums over i once.
  double expected = 0;
  for (std::size_t i = 0; i < kExtent; ++i) expected += std::pow(m.data()[i * kExtent + i], static_cast<double>(n));
  t.error = max_difference(r, {expected});
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter;
  long n = 0;
  int repeat = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view arg = argv[i];
    if (arg == "--filter") {
      filter = argv[i + 1];
    } else if (arg == "--n") {
      n = std::strtol(argv[i + 1], nullptr, 10);
    } else if (arg == "--repeat") {
      repeat = static_cast<int>(std::strtol(argv[i + 1], nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: bench_scale [--filter NAME] [--n N] [--repeat R]\n");
      return 2;
    }
  }
  struct Case {
    std::string name;
    std::vector<long> sizes;
    std::function<Timing(long)> run;
  };
  const std::vector<Case> cases = {
      {"accumulate", {1000, 10000, 100000}, accumulate},
      {"sum", {5000, 20000, 200000}, [](long k) { return sum(k, false); }},
      {"sum_distinct", {5000, 20000, 200000}, [](long k) { return sum(k, true); }},
      {"hadamard", {250, 1000, 4000}, hadamard},
      {"chain", {250, 1000, 4000}, [](long k) { return chain(k, kExtent); }},
      {"chain2", {1000, 10000, 20000}, [](long k) { return chain(k, 2); }},
      {"chain2_end", {1000, 10000, 20000}, [](long k) { return chain(k, 2, true); }},
      {"trace", {250, 1000, 4000}, trace},
  };
  std::printf("# bench_scale: %zu-element modes, double; seconds (wall, and the process's CPU), best of %d\n", kExtent,
              repeat);
  std::printf("%-13s %8s %10s %10s %10s %10s %10s %10s\n", "case", "N", "record", "evaluate", "total", "record cpu",
              "eval cpu", "error");
  for (const Case& c : cases) {
    if (!filter.empty() && c.name != filter) continue;
    for (long size : n > 0 ? std::vector<long>{n} : c.sizes) {
      Timing best;
      double best_total = std::numeric_limits<double>::infinity();
      for (int r = 0; r < std::max(1, repeat); ++r) {
        const Timing t = c.run(size);
        if (t.record.wall + t.evaluate.wall < best_total) {
          best = t;
          best_total = t.record.wall + t.evaluate.wall;
        }
      }
      std::printf("%-13s %8ld %10.4f %10.4f %10.4f %10.4f %10.4f %10.1e\n", c.name.c_str(), size, best.record.wall,
                  best.evaluate.wall, best_total, best.record.cpu, best.evaluate.cpu, best.error);
      std::fflush(stdout);
    }
  }
  return 0;
}
