// Fused element-wise work against the machine: bytes moved per second by tenex (fused, and
// with the fusion pass off), by a hand-written fused OpenMP loop, by a copy of the same bytes,
// and by numpy evaluating the same expression (Debian's /usr/bin/python3 with python3-numpy,
// bench/elementwise_numpy.py), side by side in one run; then the MP2 tail before and after
// fusion (time, kernels, peak bytes of intermediates).
//
//   ./build/bench/bench_elementwise [--n 4096] [--repeat 5] [--no-numpy]
//
// The chains: streaming  r(i,j) = a(i,j) + 2 b(i,j) - c(i,j) / d(i)
//             transposed r(i,j) = a(i,j) + 2 b(j,i) - c(i,j) / d(i)
// Bytes moved: a, b, c read and r written (d is small): 4 n^2 elements.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using Clock = std::chrono::steady_clock;
using tenex::Shape;
using tenex::Tensor;

double best_of(int repeat, const std::function<void()>& f) {
  f();  // warm up: page faults, the plan cache, OpenMP threads
  double best = 1e300;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

struct PassesScope {
  explicit PassesScope(const char* value) {
    if (value) {
      ::setenv("TENEX_PASSES", value, 1);
    } else {
      ::unsetenv("TENEX_PASSES");
    }
  }
  ~PassesScope() { ::unsetenv("TENEX_PASSES"); }
};

// Every pass but the fusion pass: the graph as 0.1 ran it (one kernel per operation).
constexpr const char* kUnfused = "cse,order,fold_scales,gemm_beta,collapse";

double numpy_seconds(std::size_t n, int repeat, bool transposed) {
  const std::string script = std::string(TENEX_BENCH_DIR) + "/elementwise_numpy.py";
  const std::string command = "/usr/bin/python3 " + script + " " + std::to_string(n) + " " + std::to_string(repeat) +
                              (transposed ? " transposed" : " streaming") + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return -1;
  double seconds = -1;
  if (std::fscanf(pipe, "%lf", &seconds) != 1) seconds = -1;
  ::pclose(pipe);
  return seconds;
}

void report(const char* what, double seconds, double bytes, double reference) {
  std::printf("  %-34s %9.2f ms %8.2f GB/s %8.2fx\n", what, seconds * 1e3, bytes / seconds / 1e9, reference / seconds);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 4096;
  int repeat = 5;
  bool numpy = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--n" && i + 1 < argc) {
      n = std::stoul(argv[++i]);
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::stoi(argv[++i]);
    } else if (arg == "--no-numpy") {
      numpy = false;
    } else {
      std::fprintf(stderr, "usage: %s [--n N] [--repeat R] [--no-numpy]\n", argv[0]);
      return 2;
    }
  }
  const int threads = omp_get_max_threads();
  std::printf("fused element-wise, double, n = %zu (%.0f MB per operand), %d threads, best of %d\n", n,
              double(n * n * 8) / 1e6, threads, repeat);
  Tensor<double> a(Shape{n, n}), b(Shape{n, n}), c(Shape{n, n}), d(Shape{n}), r;
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  tenex::fill_random(c, 3);
  for (std::size_t i = 0; i < n; ++i) d.at(i) = 2.0 + double(i % 7);
  const double* pa = a.data();
  const double* pb = b.data();
  const double* pc = c.data();
  const double* pd = d.data();
  std::vector<double> out(n * n), src(n * n, 1.0);
  const double bytes = 4.0 * double(n * n) * sizeof(double);

  // A copy of the same bytes: 3 n^2 read... as one read and one write stream of 2 n^2 each.
  std::vector<double> copy_in(2 * n * n, 1.0), copy_out(2 * n * n);
  const double t_copy = best_of(repeat, [&] {
    const std::size_t total = 2 * n * n;
#pragma omp parallel for schedule(static)
    for (std::size_t x = 0; x < total; ++x) copy_out[x] = copy_in[x];
  });

  for (const bool transposed : {false, true}) {
    std::printf("%s: r(i,j) = a(i,j) + 2 b(%s) - c(i,j) / d(i)\n", transposed ? "transposed" : "streaming",
                transposed ? "j,i" : "i,j");
    const double t_hand = best_of(repeat, [&] {
      if (!transposed) {
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < n; ++i) {
          const double di = pd[i];
          for (std::size_t j = 0; j < n; ++j) out[i * n + j] = pa[i * n + j] + 2.0 * pb[i * n + j] - pc[i * n + j] / di;
        }
      } else {
        // Blocked, as one would write it by hand.
        constexpr std::size_t B = 32;
#pragma omp parallel for schedule(static)
        for (std::size_t i0 = 0; i0 < n; i0 += B) {
          for (std::size_t j0 = 0; j0 < n; j0 += B) {
            for (std::size_t i = i0; i < std::min(n, i0 + B); ++i) {
              const double di = pd[i];
              for (std::size_t j = j0; j < std::min(n, j0 + B); ++j)
                out[i * n + j] = pa[i * n + j] + 2.0 * pb[j * n + i] - pc[i * n + j] / di;
            }
          }
        }
      }
    });
    auto statement = [&] {
      if (transposed) {
        r("i,j") = a("i,j") + 2.0 * b("j,i") - c("i,j") / d("i");
      } else {
        r("i,j") = a("i,j") + 2.0 * b("i,j") - c("i,j") / d("i");
      }
    };
    double t_fused = 0, t_unfused = 0;
    std::size_t peak_fused = 0, peak_unfused = 0, kernels_fused = 0, kernels_unfused = 0;
    {
      const PassesScope scope(nullptr);
      t_fused = best_of(repeat, statement);
      peak_fused = tenex::last_run_stats().peak_bytes;
      kernels_fused = tenex::last_run_stats().kernels;
    }
    {
      const PassesScope scope(kUnfused);
      t_unfused = best_of(repeat, statement);
      peak_unfused = tenex::last_run_stats().peak_bytes;
      kernels_unfused = tenex::last_run_stats().kernels;
    }
    double worst = 0;
    for (std::size_t x = 0; x < n * n; x += 4099) worst = std::max(worst, std::abs(out[x] - r.data()[x]));
    std::printf("  %-34s %9s    %8s      %8s   (ratio: hand loop time / time)\n", "", "time", "rate", "vs hand");
    report("copy of the same bytes (2 threads)", t_copy, bytes, t_hand);
    report("hand-written fused loop", t_hand, bytes, t_hand);
    report("tenex, fused", t_fused, bytes, t_hand);
    report("tenex, fusion pass off", t_unfused, bytes, t_hand);
    if (numpy) {
      const double t_numpy = numpy_seconds(n, repeat, transposed);
      if (t_numpy > 0) {
        report("numpy (/usr/bin/python3)", t_numpy, bytes, t_hand);
        std::printf("  tenex fused vs numpy: %.2fx faster\n", t_numpy / t_fused);
      } else {
        std::printf("  numpy: not available (/usr/bin/python3 with python3-numpy)\n");
      }
    }
    std::printf(
        "  tenex fused / hand loop: %.2f;  fused: %zu kernel(s), peak %.0f MB;  unfused: %zu kernels, peak %.0f MB"
        ";  max |difference| %.1e\n",
        t_hand / t_fused, kernels_fused, double(peak_fused) / 1e6, kernels_unfused, double(peak_unfused) / 1e6, worst);
  }

  // The MP2 tail: D = eo(i) - ev(a) + eo(j) - ev(b); T = V / D; E = T (2 V - V').
  {
    const std::size_t o = 32, v = 160;
    Tensor<double> V(Shape{o, v, o, v}), eo(Shape{o}), ev(Shape{v}), E;
    tenex::fill_random(V, 4);
    for (std::size_t i = 0; i < o; ++i) eo.at(i) = -2.0 + 0.01 * double(i);
    for (std::size_t x = 0; x < v; ++x) ev.at(x) = 0.5 + 0.01 * double(x);
    std::printf("MP2 tail, o = %zu, v = %zu (V: %.0f MB): E = (V / D) (2 V - V'), D = eo - ev + eo - ev\n", o, v,
                double(V.size() * 8) / 1e6);
    auto tail = [&] {
      auto D = eo("i") - ev("a") + eo("j") - ev("b");
      auto T = V("i,a,j,b") / D;
      E("") = T * (2.0 * V("i,a,j,b") - V("i,b,j,a"));
    };
    for (const char* passes : {kUnfused, static_cast<const char*>(nullptr)}) {
      const PassesScope scope(passes);
      const double t = best_of(repeat, tail);
      const tenex::RunStats s = tenex::last_run_stats();
      std::printf("  %-22s %9.2f ms  %zu kernel(s)  peak of intermediates %8.1f MB  E = %.12g\n",
                  passes ? "before (fusion off)" : "after (fused)", t * 1e3, s.kernels, double(s.peak_bytes) / 1e6,
                  E.at());
    }
  }
  return 0;
}
