// Long runs keep memory flat: 100,000 iterations of small statements of every common form
// (products, element-wise chains, reductions, sets kept open by a handle, compound
// assignments, reads in the middle of a set, casts, decompositions, errors caught and
// discarded), with extents that cycle through more shapes than the plan cache holds, so that
// caches fill, evict and reuse. The resident set size (/proc/self/statm) after a warm-up of
// 10,000 iterations, in the middle and at the end must show no steady growth (the second half
// adds less than kAllowedSteadyMiB) and no large one-off growth: no handle, graph, plan cache
// or pool grows without bound. Run by ctest (reliability_long_run); prints its
// figures (it is a test program, not the library). Exits 0 when every check holds.
#include <malloc.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::Tensor;

constexpr std::size_t kIterations = 100000;
constexpr std::size_t kWarmUp = 10000;
constexpr std::size_t kMiddle = 55000;
// A leak of 90 bytes per iteration adds 4 MiB over the 45,000 iterations of the second half.
constexpr double kAllowedSteadyMiB = 4.0;
// Pools that fill once, at a moment that depends on thread timing (OpenBLAS's per-thread
// buffers when calls first overlap, a malloc arena of a thread), may add to the resident set
// after the warm-up, once: bounded here, but not counted as a leak.
constexpr double kAllowedOnceMiB = 24.0;

/// Resident memory after glibc has returned its free heap pages (malloc_trim): memory freed
/// but kept by an arena is not growth, and how much an arena keeps varies between runs with
/// the threads that freed into it.
double resident_mib() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * 4096.0 / (1024.0 * 1024.0);
}

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "long_run: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

/// One iteration: a handful of statements whose shapes depend on `it`.
double iterate(std::size_t it, Tensor<double>& big) {
  // 300 distinct extents: more plans than the cache's 256, so it evicts.
  const std::size_t n = 2 + it % 300;
  Tensor<double> a(Shape{n, 3}), b(Shape{3, n}), c, d, e;
  a.at(it % n, 1) = 1.0;
  b.at(2, it % n) = 2.0;
  c("i,j") = a("i,k") * b("k,j");                                         // a product
  d("i") = tenex::sum(tenex::exp(a("i,k")) + 2.0 * b("k,i") - 1.0, "k");  // a fused chain and a sum
  {
    auto handle = c("i,j");  // a set kept open across statements
    e("j,i") = handle + 1.0;
    c("i,j") += handle * 0.5;
    if (it % 7 == 0) (void)e.at(0, 0);  // a read in the middle of the set
  }
  Tensor<float> f;
  f("i") = tenex::cast<float>(d("i"));
  double total = c.at(it % n, it % n) + e.at(0, 0) + static_cast<double>(f.at(0));
  if (it % 50 == 0) {
    Tensor<double> l, s;
    l("i,j") = tenex::cholesky(big("i,j"));
    s("") = tenex::norm2(l("i,j"));
    total += s.at();
  }
  if (it % 101 == 0) {
    try {  // an error at the statement, and one stored in the results
      Tensor<double> bad;
      bad("i,j") = a("i,j") + b("i,j");
    } catch (const tenex::Error&) {
      total += 1.0;
    }
    Tensor<double> not_spd(Shape{2, 2}, {1, 2, 2, 1}), l;
    l("i,j") = tenex::cholesky(not_spd("i,j"));
    try {
      l.wait();
    } catch (const tenex::Error&) {
      total += 1.0;
    }
  }
  return total;
}

}  // namespace

int main() {
  Tensor<double> big(Shape{8, 8});
  for (std::size_t i = 0; i < 8; ++i) big.at(i, i) = 2.0 + static_cast<double>(i);

  double sum = 0;
  for (std::size_t it = 0; it < kWarmUp; ++it) sum += iterate(it, big);
  const double after_warm_up = resident_mib();
  double peak = after_warm_up, middle = after_warm_up;
  std::string samples;
  for (std::size_t it = kWarmUp; it < kIterations; ++it) {
    sum += iterate(it, big);
    if (it % 10000 == 0 || it == kMiddle) {
      const double now = resident_mib();
      peak = std::max(peak, now);
      if (it == kMiddle) middle = now;
      char sample[32];
      std::snprintf(sample, sizeof sample, " %.1f", now);
      samples += sample;
    }
  }
  const double at_end = resident_mib();
  peak = std::max(peak, at_end);
  std::printf(
      "long_run: %zu iterations; resident %.1f MiB after %zu, %.1f MiB after %zu, %.1f MiB at the end (peak %.1f "
      "MiB)\n",
      kIterations, after_warm_up, kWarmUp, middle, kMiddle, at_end, peak);
  check(std::isfinite(sum), "the iterations computed a non-finite checksum");
  // A leak grows with the iterations: the second half may add less than kAllowedSteadyMiB.
  check(at_end - middle < kAllowedSteadyMiB, "resident memory grew by " + std::to_string(at_end - middle) +
                                                 " MiB over the second half (allowed " +
                                                 std::to_string(kAllowedSteadyMiB) + "); samples:" + samples);
  check(peak - after_warm_up < kAllowedOnceMiB, "resident memory grew by " + std::to_string(peak - after_warm_up) +
                                                    " MiB after the warm-up (allowed " +
                                                    std::to_string(kAllowedOnceMiB) + "); samples:" + samples);
  return failures == 0 ? 0 : 1;
}
