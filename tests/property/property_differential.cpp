// Seeded property test: random tenex programs, each run under every pass list, with the plan
// cache on and off, with one and two OpenMP threads, several times in a row, against a naive
// reference (tests/fuzz/differential.hpp, shared with the libFuzzer target).
//
// The programs are the fuzzer's, decoded from bytes drawn from a seeded RNG, over ten labels
// whose extents reach 50 and tensors of up to a few thousand elements, with templates that
// make tensors of 33,000 to 90,000 elements (past the kernels' thresholds for running in
// parallel and in blocks). A third of the programs compute in float.
//
//   tenex_property_differential                      # seeds 1..40 (the ctest)
//   tenex_property_differential --seeds 1:500 --seconds 600 --matrix full
//   tenex_property_differential --seed 17 --verbose  # one program, printed as it runs
//
// Options: --seeds A:B (inclusive), --seed N, --seconds S (stop starting programs after S
// seconds), --matrix ci|full (ci: every pass list, each configuration not crossed with every
// other; full: the cross product), --keep-going (report every failing seed, not the first
// three), --each-config (run each configuration on its own and say which ones agree), --only N
// (run only the Nth configuration of the matrix, counted from 0 in --each-config's order), --input
// FILE (the program of a libFuzzer input of fuzz_differential, run with one and two threads),
// --check-each (read every target right after its statement: finds the statement that
// goes wrong, though it closes linked sets earlier), --rule early (the reference sums each
// operand of + - / before combining, as before issue 29: isolates other mismatches from that
// change), --verbose. Exits 1 when any program fails; each failure prints the seed, the
// configuration and the program.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "differential.hpp"

namespace {

using tenex_fuzz::Config;

void set_threads(int n) {
#if defined(_OPENMP)
  omp_set_num_threads(n);
#else
  (void)n;
#endif
}

std::vector<Config> configs(bool full, const std::vector<std::string>& passes) {
  std::vector<std::string> lists{"", "none"};
  lists.insert(lists.end(), passes.begin(), passes.end());
  std::vector<Config> out;
  if (full) {
    for (const std::string& p : lists) {
      for (int threads : {2, 1}) {
        out.push_back(Config{p, true, threads, 3});
        out.push_back(Config{p, false, threads, 2});
      }
    }
    return out;
  }
  for (int threads : {2, 1}) {
    out.push_back(Config{"", true, threads, 3});
    out.push_back(Config{"none", true, threads, 3});
    out.push_back(Config{"", false, threads, 1});
    out.push_back(Config{"none", false, threads, 1});
  }
  for (const std::string& p : passes) {
    out.push_back(Config{p, true, 2, 2});
    out.push_back(Config{p, false, 1, 1});
  }
  return out;
}

std::vector<std::uint8_t> program_bytes(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> bytes(4096);
  for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(rng() >> 56);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t first = 1, last = 40;
  double seconds = 0;
  bool full = false, verbose = false, keep_going = false, each_config = false;
  int only = -1;
  std::string input;  // a libFuzzer input (fuzz_differential's limits), instead of seeds
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seeds") {
      const std::string v = value();
      const std::size_t colon = v.find(':');
      first = std::stoull(v.substr(0, colon));
      last = colon == std::string::npos ? first : std::stoull(v.substr(colon + 1));
    } else if (a == "--seed") {
      first = last = std::stoull(value());
    } else if (a == "--seconds") {
      seconds = std::stod(value());
    } else if (a == "--matrix") {
      full = value() == "full";
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "--keep-going") {
      keep_going = true;
    } else if (a == "--rule") {
      tenex_fuzz::g_ref.early_sums = value() == "early";
    } else if (a == "--input") {
      input = value();
    } else if (a == "--only") {
      only = std::stoi(value());
    } else if (a == "--each-config") {
      each_config = true;
    } else if (a == "--check-each") {
      tenex_fuzz::g_ref.check_each = true;
    } else {
      std::fprintf(stderr, "unknown option %s (see the file's header)\n", a.c_str());
      return 2;
    }
  }
  // One plan per contraction shape: repetitions must then agree bit for bit.
  ::setenv("TENEX_PLAN_SEARCH", "model", 1);
  std::vector<Config> matrix = configs(full, tenex_fuzz::pass_names());
  if (only >= 0 && only < static_cast<int>(matrix.size())) matrix = {matrix[static_cast<std::size_t>(only)]};
  const tenex_fuzz::Limits limits = input.empty() ? tenex_fuzz::property_limits() : tenex_fuzz::fuzz_limits();
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int programs = 0, failures = 0;
  long runs = 0;
  tenex_fuzz::Counts counts;
  double worst = 0;
  if (!input.empty()) first = last = 0;
  for (std::uint64_t seed = first; seed <= last; ++seed) {
    if (seconds > 0 && elapsed() > seconds) break;
    std::vector<std::uint8_t> bytes = program_bytes(seed);
    if (!input.empty()) {
      std::FILE* file = std::fopen(input.c_str(), "rb");
      if (!file) {
        std::fprintf(stderr, "cannot read %s\n", input.c_str());
        return 2;
      }
      bytes.clear();
      for (int c; (c = std::fgetc(file)) != EOF;) bytes.push_back(static_cast<std::uint8_t>(c));
      std::fclose(file);
    }
    if (each_config) {
      // Every configuration on its own, each line saying whether it agreed.
      for (const Config& c : matrix) {
        const tenex_fuzz::Outcome o =
            tenex_fuzz::run_program(bytes.data(), bytes.size(), limits, {c}, false, set_threads);
        std::string first_line = o.failure.substr(0, o.failure.find('\n'));
        const std::size_t what = o.failure.rfind("\n--- ");
        if (what != std::string::npos) first_line += ": " + o.failure.substr(what + 5);
        std::printf("seed %llu %-52s %s\n", static_cast<unsigned long long>(seed), c.name().c_str(),
                    o.failure.empty() ? "ok" : first_line.c_str());
      }
      ++programs;
      continue;
    }
    const double t0 = elapsed();
    const tenex_fuzz::Outcome o =
        tenex_fuzz::run_program(bytes.data(), bytes.size(), limits, matrix, verbose, set_threads);
    ++programs;
    runs += o.runs;
    worst = std::max(worst, o.worst_ratio);
    counts.valid += o.counts.valid;
    counts.invalid += o.counts.invalid;
    counts.left_out += o.counts.left_out;
    counts.templates += o.counts.templates;
    if (verbose)
      std::fprintf(stderr, "seed %llu: %d runs, %.2f s\n", static_cast<unsigned long long>(seed), o.runs,
                   elapsed() - t0);
    if (!o.failure.empty()) {
      ++failures;
      std::printf("seed %llu (found after %.1f s): %s\n\n", static_cast<unsigned long long>(seed), elapsed(),
                  o.failure.c_str());
      std::fflush(stdout);
      if (!keep_going && failures >= 3) break;
    }
  }
  std::printf(
      "property_differential: %d programs (seeds %llu..), %ld runs of %zu configurations, %d failing; "
      "statements: %d valid, %d invalid, %d left out, %d templates; worst deviation %.2f of the rounding "
      "bound (tolerance %.0f); %.1f s\n",
      programs, static_cast<unsigned long long>(first), runs, matrix.size(), failures, counts.valid, counts.invalid,
      counts.left_out, counts.templates, worst, tenex_fuzz::kBoundFactor, elapsed());
  return failures ? 1 : 0;
}
