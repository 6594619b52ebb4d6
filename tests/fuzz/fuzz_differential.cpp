// libFuzzer target: differential testing of whole programs against a naive reference.
//
// The input bytes decode into a program (tests/fuzz/differential.hpp: the generator, the
// reference and the runner, shared with the seeded property test in tests/property/): random
// tensors over six labels with per-program extents (small, or now and then up to 13), the
// statements and templates that header describes, double or (one input in five) float.
//
// Each input runs six times: every pass (TENEX_PASSES unset) and TENEX_PASSES=none twice each
// with the plan cache, every pass once with TENEX_PLAN_CACHE=0, and once one single pass the
// input's hash chooses, with or without the cache. Every read must agree with the reference
// within its rounding bound, invalid statements must throw tenex::Error where they are
// written, and the repetitions of one configuration must be bitwise identical
// (TENEX_PLAN_SEARCH=model, set here, keeps each contraction's plan).
//
// TENEX_FUZZ_MATRIX=full runs every pass list with the cache on (three times) and off (twice).
// This build has no OpenMP: the property test varies the threads. TENEX_FUZZ_RULE=early makes
// the reference sum each operand of + - / before combining (the rule before issue 29), to look
// for other mismatches in a library that does.
//
//   ./fuzz_differential corpus/fuzz_differential     # docs/reliability.md
//   TENEX_FUZZ_VERBOSE=1 ./fuzz_differential crash-...   # prints the program as it runs
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "differential.hpp"

namespace {

using tenex_fuzz::Config;

std::vector<std::string>& passes() {
  static std::vector<std::string> names;
  return names;
}

std::vector<Config> configs_for(const std::uint8_t* data, std::size_t size) {
  static const bool full = [] {
    const char* m = std::getenv("TENEX_FUZZ_MATRIX");
    return m && std::string(m) == "full";
  }();
  std::vector<Config> configs;
  if (full) {
    std::vector<std::string> lists{"", "none"};
    lists.insert(lists.end(), passes().begin(), passes().end());
    for (const std::string& p : lists) {
      configs.push_back(Config{p, true, 0, 3});
      configs.push_back(Config{p, false, 0, 2});
    }
    return configs;
  }
  std::uint64_t hash = 1469598103934665603ull;
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ull;
  const std::size_t n = passes().size();
  configs = {Config{"", true, 0, 2}, Config{"none", true, 0, 2}, Config{"", false, 0, 1}};
  if (n > 0) configs.push_back(Config{passes()[hash % n], (hash / n) % 2 == 0, 0, 1});
  return configs;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // One plan per contraction shape: repetitions must then agree bit for bit.
  ::setenv("TENEX_PLAN_SEARCH", "model", 1);
  passes() = tenex_fuzz::pass_names();
  const char* rule = std::getenv("TENEX_FUZZ_RULE");
  tenex_fuzz::g_ref.early_sums = rule && std::string(rule) == "early";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 1024) return 0;
  static const bool verbose = std::getenv("TENEX_FUZZ_VERBOSE") != nullptr;
  static const tenex_fuzz::Limits limits = tenex_fuzz::fuzz_limits();
  const tenex_fuzz::Outcome outcome = tenex_fuzz::run_program(data, size, limits, configs_for(data, size), verbose);
  if (!outcome.failure.empty()) {
    std::fprintf(stderr, "fuzz_differential: %s\n", outcome.failure.c_str());
    std::abort();
  }
  return 0;
}
