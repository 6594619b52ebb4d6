// What the three application benchmarks share (bench/apps/): options, the deterministic
// inputs that their numpy twins (app_common.py) compute bit for bit the same way, and the
// machine-readable report that scripts/bench-apps and the apps ctest read.
//
// Inputs are not random: element n (row-major) of an input is scale * sin((0.0123 n + 0.37) n
// + k), evaluated in that order in both languages (the programs are compiled with
// -ffp-contract=off, so no fused multiply-add changes a rounding), so the two programs start
// from the same numbers (up to the last bit of the sine) and their checksums agree to
// rounding. The quadratic phase keeps contractions over these patterns from cancelling: a
// sum over a mode grows like the square root of its length, as over random numbers, so each
// term of a program weighs about the same at every size.
//
// The report is one `key value` pair a line:
//
//   program ccd
//   implementation tenex
//   size nocc=20 nvirt=100
//   flops_per_iteration 9.1e10
//   iteration 1 0.734
//   ...
//   cold_seconds 0.734        (the first iteration, in a fresh process)
//   steady_seconds 0.612      (the median of the later iterations)
//   cold_gflops 124.0
//   steady_gflops 148.7
//   checksum -1.234567890123456e-01
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

namespace apps {

/// `--name value` pairs of positive integers, with defaults; `--iterations` among them.
class Options {
 public:
  Options(std::string program, std::map<std::string, std::size_t> defaults)
      : program_(std::move(program)), values_(std::move(defaults)) {}

  /// False (after saying why on stderr) on an unknown name or a value that is not a
  /// positive integer.
  bool parse(int argc, char** argv) {
    for (int arg = 1; arg < argc; ++arg) {
      const std::string_view name = argv[arg];
      const auto found = name.size() > 2 ? values_.find(std::string(name.substr(2))) : values_.end();
      if (name.substr(0, 2) != "--" || found == values_.end() || arg + 1 >= argc) {
        std::fprintf(stderr, "%s: unknown option or missing value: %s\n", program_.c_str(), argv[arg]);
        usage();
        return false;
      }
      const char* value = argv[++arg];
      char* end = nullptr;
      const unsigned long long parsed = std::strtoull(value, &end, 10);
      if (*value < '0' || *value > '9' || *end != '\0' || parsed == 0) {
        std::fprintf(stderr, "%s: %s takes a positive integer, not '%s'\n", program_.c_str(), argv[arg - 1], value);
        return false;
      }
      found->second = static_cast<std::size_t>(parsed);
    }
    return true;
  }

  std::size_t operator[](const std::string& name) const { return values_.at(name); }

  /// "nocc=20 nvirt=100" (without iterations), for the report's `size` line.
  std::string sizes() const {
    std::string text;
    for (const auto& [name, value] : values_) {
      if (name == "iterations") continue;
      text += (text.empty() ? "" : " ") + name + "=" + std::to_string(value);
    }
    return text;
  }

 private:
  void usage() const {
    std::fprintf(stderr, "usage: %s", program_.c_str());
    for (const auto& [name, value] : values_) std::fprintf(stderr, " [--%s %zu]", name.c_str(), value);
    std::fprintf(stderr, "\n");
  }

  std::string program_;
  std::map<std::string, std::size_t> values_;
};

/// A tensor whose element n (row-major) is scale * sin((0.0123 n + 0.37) n + k):
/// app_common.py's `pattern`.
inline tenex::Tensor<double> pattern(tenex::Shape shape, double k, double scale) {
  tenex::Tensor<double> t(std::move(shape));
  double* x = t.data();
  for (std::size_t n = 0; n < t.size(); ++n) {
    const double index = static_cast<double>(n);
    x[n] = scale * std::sin((index * 0.0123 + 0.37) * index + k);
  }
  return t;
}

/// Runs `iteration` `count` times, timing each call (which must end with its results read,
/// so that nothing deferred is left), and prints the report; `checksum` is read after the
/// last iteration.
inline void run_and_report(const std::string& program, const Options& options, double flops_per_iteration,
                           const std::function<void()>& iteration, const std::function<double()>& checksum) {
  const std::size_t count = options["iterations"];
  std::vector<double> seconds;
  for (std::size_t i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    iteration();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("program %s\nimplementation tenex\nsize %s\niterations %zu\nflops_per_iteration %.6e\n", program.c_str(),
              options.sizes().c_str(), count, flops_per_iteration);
  for (std::size_t i = 0; i < count; ++i) std::printf("iteration %zu %.6f\n", i + 1, seconds[i]);
  // The steady time is the median of the iterations after the first (the first alone when
  // there is only one).
  std::vector<double> later(seconds.begin() + (count > 1 ? 1 : 0), seconds.end());
  std::sort(later.begin(), later.end());
  const std::size_t half = later.size() / 2;
  const double steady = later.size() % 2 == 1 ? later[half] : 0.5 * (later[half - 1] + later[half]);
  std::printf("cold_seconds %.6f\nsteady_seconds %.6f\n", seconds.front(), steady);
  std::printf("cold_gflops %.3f\nsteady_gflops %.3f\n", flops_per_iteration / seconds.front() * 1e-9,
              flops_per_iteration / steady * 1e-9);
  std::printf("checksum %.17e\n", checksum());
}

}  // namespace apps
