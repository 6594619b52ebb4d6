// The plan search of contractions (backend/cpu/plan_search.hpp) and the plan file
// (tenex/plans.hpp): results that do not depend on the mode or the thread count, the amortized
// search's one plan per call, and plan files saved, loaded, and refused when bad.
//
// Every contraction is checked against plain loops in double, with a tolerance relative to the
// magnitude of what it sums. When beta == 0 the output starts as NaN: a plan that reads it fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <unistd.h>

#include <tenex/error.hpp>
#include <tenex/plans.hpp>

#include "machine_profiles.hpp"
#include "support/environment_scope.hpp"
#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/contraction_problem.hpp"
#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/machine.hpp"
#include "tenex/backend/cpu/plan_search.hpp"
#include "tenex/backend/cpu/tuning.hpp"

#if TENEX_OPENMP
#include <omp.h>
#endif

namespace cpu = tenex::detail::cpu;
namespace search = tenex::detail::cpu::plan_search;

namespace {

/// One contraction: modes (ints) and the extent of each mode id.
struct Shape {
  const char* name;
  cpu::Modes a, b, c;
  std::vector<std::size_t> extent;  // by mode id
  cpu::Extents of(const cpu::Modes& modes) const {
    cpu::Extents e;
    for (int m : modes) e.push_back(extent[static_cast<std::size_t>(m)]);
    return e;
  }
};

// A GEMM-like product, a batched one (a Hadamard mode) and one of many small modes.
std::vector<Shape> shapes() {
  return {
      {"gemm-like i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {96, 80, 72}},
      {"batched b,i,k * b,k,j", {0, 1, 3}, {0, 3, 2}, {0, 1, 2}, {6, 40, 36, 44}},
      {"many small modes a,c,d,e * d,b,e,f", {0, 2, 3, 4}, {3, 1, 4, 5}, {5, 0, 1, 2}, {5, 6, 7, 6, 5, 4}},
  };
}

std::size_t volume(const cpu::Extents& e) {
  std::size_t n = 1;
  for (std::size_t x : e) n *= x;
  return n;
}

template <class T>
std::vector<T> random_values(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<T> out(n);
  for (T& x : out) x = static_cast<T>(value(rng));
  return out;
}

/// Plain loops over every mode: c = alpha a b + beta c0, and the sum of |terms| per element.
template <class T>
void reference(const Shape& s, double alpha, const std::vector<T>& a, const std::vector<T>& b, double beta,
               const std::vector<T>& c0, std::vector<double>& c, std::vector<double>& magnitude) {
  const std::size_t modes = s.extent.size();
  auto offset = [&](const cpu::Modes& m, const std::vector<std::size_t>& at) {
    std::size_t o = 0;
    for (int d : m) o = o * s.extent[static_cast<std::size_t>(d)] + at[static_cast<std::size_t>(d)];
    return o;
  };
  const std::size_t n = volume(s.of(s.c));
  c.assign(n, 0.0);
  magnitude.assign(n, 0.0);
  std::vector<std::size_t> at(modes, 0);
  for (;;) {
    const std::size_t o = offset(s.c, at);
    const double term = alpha * static_cast<double>(a[offset(s.a, at)]) * static_cast<double>(b[offset(s.b, at)]);
    c[o] += term;
    magnitude[o] += std::abs(term);
    std::size_t d = modes;
    while (d > 0 && ++at[d - 1] == s.extent[d - 1]) at[--d] = 0;
    if (d == 0) break;
  }
  if (beta != 0) {
    for (std::size_t x = 0; x < n; ++x) {
      c[x] += beta * static_cast<double>(c0[x]);
      magnitude[x] += std::abs(beta * static_cast<double>(c0[x]));
    }
  }
}

template <class T>
std::size_t mismatches(const std::vector<T>& got, const std::vector<double>& want,
                       const std::vector<double>& magnitude) {
  const double eps = std::numeric_limits<T>::epsilon();
  std::size_t bad = 0;
  for (std::size_t x = 0; x < got.size(); ++x) {
    const double error = std::abs(static_cast<double>(got[x]) - want[x]);
    if (!(error <= 64 * eps * (magnitude[x] + 1e-30))) ++bad;
  }
  return bad;
}

/// Operands, c's starting values and the expected result of one shape.
template <class T>
struct Operands {
  std::vector<T> a, b, c0;
  std::vector<double> want, magnitude;
  T alpha, beta;
  Operands(const Shape& s, std::mt19937& rng, T alpha_, T beta_) : alpha(alpha_), beta(beta_) {
    a = random_values<T>(volume(s.of(s.a)), rng);
    b = random_values<T>(volume(s.of(s.b)), rng);
    const std::size_t n = volume(s.of(s.c));
    c0 = beta == T(0) ? std::vector<T>(n, std::numeric_limits<T>::quiet_NaN()) : random_values<T>(n, rng);
    reference(s, static_cast<double>(alpha), a, b, static_cast<double>(beta), c0, want, magnitude);
  }
  /// One call of contract on a fresh copy of c0: the number of wrong elements.
  std::size_t run(const Shape& s) const {
    std::vector<T> c = c0;
    cpu::contract(alpha, a.data(), s.of(s.a), s.a, b.data(), s.of(s.b), s.b, beta, c.data(), s.c);
    return mismatches(c, want, magnitude);
  }
};

/// Holds the OpenMP thread count for a scope.
struct Threads {
#if TENEX_OPENMP
  int before = omp_get_max_threads();
  explicit Threads(int n) { omp_set_num_threads(n); }
  ~Threads() { omp_set_num_threads(before); }
#else
  explicit Threads(int) {}
#endif
};

/// A fresh planner (this thread's shapes and, with `store`, the shared plans and rates).
struct FreshPlanner {
  explicit FreshPlanner(bool store = true) { search::reset_for_testing(store); }
  ~FreshPlanner() { search::reset_for_testing(true); }
};

/// The model's plan for a shape, as plan_identity names it.
std::string model_plan(const Shape& s, std::size_t element_size, bool beta_zero) {
  const cpu::contraction::Prepared prepared =
      cpu::contraction::prepare(element_size, beta_zero, s.of(s.a), s.a, s.of(s.b), s.b, s.c);
  const std::vector<cpu::contraction::Plan> plans = search::candidate_plans(prepared.problem, prepared.flops, 1);
  return search::plan_identity(prepared.problem, plans.front());
}

/// What the model predicts for the amortized search's candidates of a shape, the model's plan
/// first (plan_search::start's list).
std::vector<double> predicted_candidates(const Shape& s, std::size_t element_size, bool beta_zero) {
  const cpu::contraction::Prepared prepared =
      cpu::contraction::prepare(element_size, beta_zero, s.of(s.a), s.a, s.of(s.b), s.b, s.c);
  std::vector<double> seconds;
  for (const cpu::contraction::Plan& plan :
       search::candidate_plans(prepared.problem, prepared.flops, cpu::tuning::kPlansTried)) {
    seconds.push_back(plan.seconds);
  }
  return seconds;
}

/// The plan this thread's last contraction call ran.
std::string ran_plan() {
  const auto& plan = search::last_call().plan;
  return plan ? *plan : std::string();
}

/// A temporary folder, removed with its contents.
struct Folder {
  std::filesystem::path path;
  Folder() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("tenex-plan-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~Folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string file(const char* name) const { return (path / name).string(); }
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

/// Runs the GEMM-like shape under measure until its search settles (one call: a small problem
/// whose c is only written searches in its first call), so that the store holds its plan.
std::string measured_plan(const Shape& s, std::mt19937& rng) {
  const EnvironmentScope mode("TENEX_PLAN_SEARCH", "measure");
  const Operands<double> ops(s, rng, 1.0, 0.0);
  for (int call = 0; call < 8 && !search::last_call().chosen; ++call) CHECK(ops.run(s) == 0);
  REQUIRE(search::last_call().chosen);
  CHECK(ops.run(s) == 0);  // the kept plan (the search's call ended with the last candidate)
  CHECK(search::last_call().plan_runs == 1);
  return ran_plan();
}

}  // namespace

TEST_CASE_TEMPLATE("plan search: results do not depend on the mode or the thread count", T, float, double) {
  std::mt19937 rng(31);
  for (const char* mode : {"estimate", "amortized", "measure", "model", "no-such-mode"}) {
    const EnvironmentScope scope("TENEX_PLAN_SEARCH", mode);
    for (int threads : {1, 2}) {
      const FreshPlanner fresh;
      const Threads held(threads);
      for (const Shape& s : shapes()) {
        for (const T beta : {T(0), T(0.5)}) {
          const Operands<T> ops(s, rng, T(-1.5), beta);
          // Enough calls for the amortized search to try candidates on the larger shapes.
          for (int call = 0; call < 60; ++call) {
            INFO(mode, ", ", threads, " threads, ", s.name, ", beta ", static_cast<double>(beta), ", call ", call);
            REQUIRE(ops.run(s) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("plan search: amortized runs one plan per call, the model's first, and settles on a candidate") {
  const EnvironmentScope scope("TENEX_PLAN_SEARCH", "amortized");
  // The model's constant rates and each machine profile's caches (machine_profiles.hpp): the
  // candidates and what the model predicts for them are then the same on every CPU; with
  // probed rates, the GETT plan can lead by more than kTrialLimit, and no other candidate is
  // then worth a try (the search's steps are the subject).
  const EnvironmentScope constants("TENEX_PROBE", "0");
  const Threads held(2);
  std::mt19937 rng(5);
  // Large enough (a model plan over 50 us) to be searched.
  const Shape s{"i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {192, 160, 256}};
  machine_profiles::for_each_profile([&](std::size_t profile) {
    INFO("machine profile ", std::string(machine_profiles::kProfiles[profile].name));
    const FreshPlanner fresh;
    for (const double beta : {0.0, 1.0}) {
      INFO("beta ", beta);
      const std::vector<double> predicted = predicted_candidates(s, 8, beta == 0.0);
      const Operands<double> ops(s, rng, 1.0, beta);
      std::size_t tried = 0, calls = 0;
      REQUIRE(ops.run(s) == 0);
      const search::LastCall first = search::last_call();
      CHECK(*first.plan == model_plan(s, 8, beta == 0.0));
      CHECK(first.plan_runs == 1);
      REQUIRE(first.candidates > 1);
      CHECK(first.candidates == predicted.size());
      CHECK(first.origin == search::Origin::searching);
      // The search is paid for by the calls before it: a candidate other than the model's runs
      // only while what the search has cost, plus kTrialLimit times the model plan's time, is
      // within kSearchShare of the shape's accumulated time.
      std::size_t trials = 0;
      tried = first.tried;
      while (!search::last_call().chosen && calls < 5000) {
        REQUIRE(ops.run(s) == 0);
        ++calls;
        const search::LastCall& last = search::last_call();
        CHECK(last.plan_runs == 1);
        CHECK(last.tried >= tried);
        CHECK(last.tried <= tried + 1);  // one candidate per call at most
        if (last.tried > tried) {
          ++trials;
          CHECK(last.spent + search::trial_limit() * last.model_seconds <= search::search_share() * last.accumulated);
        }
        tried = last.tried;
      }
      // Tried: at least every candidate the model predicts within kTrialLimit of the model
      // plan's best measured time, or of its predicted time where the machine ran it faster
      // (the limit only falls as the model plan's time does); at most every candidate.
      const double limit = search::trial_limit() * std::max(search::last_call().model_seconds, predicted.front());
      const auto within = static_cast<std::size_t>(
          std::count_if(predicted.begin() + 1, predicted.end(), [&](double x) { return x <= limit; }));
      CHECK(trials >= within);
      CHECK(trials < predicted.size());
      // With c only written, a candidate is predicted within kTrialLimit of the model plan
      // (1.19x): at least one trial on every machine, however fast.
      if (beta == 0.0) CHECK(within >= 1);
      const search::LastCall settled = search::last_call();
      REQUIRE(settled.chosen);
      CHECK(*settled.chosen < settled.candidates);
      CHECK(settled.origin == search::Origin::measured);
      // From then on, the kept plan.
      REQUIRE(ops.run(s) == 0);
      const std::string kept = ran_plan();
      for (int call = 0; call < 3; ++call) {
        REQUIRE(ops.run(s) == 0);
        CHECK(ran_plan() == kept);
        CHECK(search::last_call().chosen == settled.chosen);
        CHECK(search::last_call().origin == search::Origin::measured);
      }
    }
  });
}

TEST_CASE("plan search: estimate runs the model's plan, untimed; measure searches in the first call") {
  const FreshPlanner fresh;
  const Threads held(2);
  std::mt19937 rng(6);
  const Shape s{"i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {192, 160, 256}};
  {
    const EnvironmentScope scope("TENEX_PLAN_SEARCH", "estimate");
    const Operands<double> ops(s, rng, 1.0, 0.0);
    for (int call = 0; call < 5; ++call) {
      REQUIRE(ops.run(s) == 0);
      CHECK(search::last_call().origin == search::Origin::model);
      CHECK(search::last_call().candidates == 1);
      CHECK(ran_plan() == model_plan(s, 8, true));
    }
  }
  search::reset_for_testing(true);
  {
    // The counter of plan runs can fail: measure's first call runs several.
    const EnvironmentScope scope("TENEX_PLAN_SEARCH", "measure");
    const Operands<double> ops(s, rng, 1.0, 0.0);
    REQUIRE(ops.run(s) == 0);
    CHECK(search::last_call().plan_runs > 1);
    CHECK(search::last_call().chosen);
  }
}

TEST_CASE("plan search: the mode is read from TENEX_PLAN_SEARCH, model naming estimate") {
  const auto mode_of = [](const char* value) {
    const EnvironmentScope scope("TENEX_PLAN_SEARCH", value);
    return search::read_settings();
  };
  CHECK(mode_of("estimate").mode == search::Mode::estimate);
  CHECK(mode_of("model").mode == search::Mode::estimate);
  CHECK(mode_of("measure").mode == search::Mode::measure);
  CHECK(mode_of("amortized").mode == search::Mode::amortized);
  CHECK(mode_of("").mode == search::Mode::amortized);
  CHECK(mode_of("fast").mode == search::Mode::amortized);
  CHECK(mode_of("fast").unknown == "fast");
  const EnvironmentScope scope("TENEX_PLAN_SEARCH", "fast");
  CHECK(tenex::plan_file_status().find("TENEX_PLAN_SEARCH=fast names no mode") != std::string::npos);
}

TEST_CASE("plan file: a saved plan is loaded and used at once, with the rates, and no search") {
  const FreshPlanner fresh;
  const Threads held(2);
  std::mt19937 rng(7);
  const Folder folder;
  const Shape s{"i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {192, 160, 256}};
  const std::string plan = measured_plan(s, rng);
  const std::string path = folder.file("plans.txt");
  tenex::save_plans(path);
  const std::string text = read(path);
  CHECK(text.rfind("tenex-plans 1\nversion ", 0) == 0);
  CHECK(text.find("\nprobe ") != std::string::npos);  // planning the shape probed the machine
  CHECK(text.find("\nend 1\n") != std::string::npos);

  search::reset_for_testing(true);  // as a fresh process
  CHECK(tenex::load_plans(path) == 1);
  CHECK(tenex::plan_file_status().find("loaded 1 plan") != std::string::npos);
  const EnvironmentScope scope("TENEX_PLAN_SEARCH", "amortized");
  const Operands<double> ops(s, rng, 1.0, 0.0);
  REQUIRE(ops.run(s) == 0);
  CHECK(search::last_call().origin == search::Origin::loaded);
  CHECK(ran_plan() == plan);
  CHECK(search::last_call().plan_runs == 1);
  CHECK(search::last_call().chosen);

  // The rates come from the file: a rate written there is the one the model uses, unprobed.
  search::reset_for_testing(true);
  search::set_rates_for_testing(8, 25e9, 50e9);
  tenex::save_plans(path);
  search::reset_for_testing(true);
  const std::size_t probes = cpu::machine::probe_count();
  CHECK(tenex::load_plans(path) == 0);
  const search::RateScope large(1e12);
  CHECK(search::gemm_rate(8).rate == 25e9);
  CHECK(search::gett_rate(8).rate == 50e9);
  CHECK(search::gemm_rate(8).probed);
  CHECK(cpu::machine::probe_count() == probes);
}

TEST_CASE("plan file: a plan of every kind round-trips, and a plan line of this format is read") {
  // c(i,j) = a(i,k) b(k,j) with 8 values of j: the plain loops, the narrow and GETT kernels and
  // GEMM plans (c direct, buffered and tiled, an operand packed chunk by chunk) all run on it.
  // For the first plan of each, a file of this format is written by hand (the header of a saved
  // file, one plan line: shape key, index in all_plans, identity) and loaded; the next call
  // runs that plan at once (origin loaded), right; saved again, the file holds the same line.
  // Such lines (index and identity) are what files written before plans were variants hold.
  namespace contraction = cpu::contraction;
  const FreshPlanner fresh;
  const Threads held(1);
  const EnvironmentScope mode("TENEX_PLAN_SEARCH", "amortized");
  std::mt19937 rng(53);
  const Folder folder;
  const Shape s{"i,k * k,j, narrow", {0, 2}, {2, 1}, {0, 1}, {120, 8, 64}};
  const contraction::Prepared prepared = contraction::prepare(8, true, s.of(s.a), s.a, s.of(s.b), s.b, s.c);
  const std::vector<contraction::Plan> plans = contraction::all_plans(prepared.problem, prepared.flops);
  const std::string key = search::shape_key(8, false, true, 1, s.a, s.of(s.a), s.b, s.of(s.b), s.c);
  // The first plan of each kind, and of each way a GEMM plan writes c or packs an operand.
  std::vector<std::size_t> firsts;
  std::vector<std::string> kinds;
  for (std::size_t x = 0; x < plans.size(); ++x) {
    const contraction::Gemm* gemm = plans[x].gemm();
    std::string kind = std::to_string(plans[x].kernel.index());
    if (gemm) kind += "," + std::to_string(static_cast<int>(gemm->output)) + "," + std::to_string(gemm->k_chunk > 0);
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) continue;
    kinds.push_back(kind);
    firsts.push_back(x);
  }
  for (std::size_t alternative = 0; alternative < std::variant_size_v<contraction::Kernel>; ++alternative) {
    CHECK(std::any_of(firsts.begin(), firsts.end(),
                      [&](std::size_t x) { return plans[x].kernel.index() == alternative; }));
  }
  CHECK(firsts.size() >= 7);  // the plain loops, narrow, GETT, and four GEMM forms at least
  // The identities a plan file holds for this shape, as earlier builds wrote them too: such a
  // file keeps loading.
  const std::vector<std::pair<std::size_t, std::string>> written{
      {0, "narrow kernel, b packed"},
      {1, "GETT kernel, b packed in panels, a in strips"},
      {2, "a as is, b as is, c direct; m {0:120} n {2:8} k {1:64}"},
      {plans.size() - 1, "plain loops"},
  };
  for (const auto& [x, identity] : written) CHECK(search::plan_identity(prepared.problem, plans[x]) == identity);

  const std::string header_path = folder.file("header.txt");
  tenex::save_plans(header_path);  // nothing held: the header and "end 0"
  const std::string saved = read(header_path);
  const std::string header = saved.substr(0, saved.find("end 0\n"));
  const Operands<double> ops(s, rng, 1.0, 0.0);
  for (std::size_t x : firsts) {
    const std::string identity = search::plan_identity(prepared.problem, plans[x]);
    INFO(x, ": ", identity);
    const std::string line = "plan " + key + " " + std::to_string(x) + " " + identity + "\n";
    const std::string path = folder.file("one.txt");
    write(path, header + line + "end 1\n");
    search::reset_for_testing(true);
    REQUIRE(tenex::load_plans(path) == 1);
    CHECK(ops.run(s) == 0);
    CHECK(search::last_call().origin == search::Origin::loaded);
    CHECK(search::last_call().plan_runs == 1);
    CHECK(ran_plan() == identity);
    tenex::save_plans(path);
    CHECK(read(path) == header + line + "end 1\n");
  }
}

TEST_CASE("plan file: missing, unreadable, corrupt, truncated and foreign files are ignored, and say why") {
  const FreshPlanner fresh;
  const Threads held(2);
  std::mt19937 rng(8);
  const Folder folder;
  const Shape s{"i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {192, 160, 256}};
  measured_plan(s, rng);
  const std::string good = folder.file("good.txt");
  tenex::save_plans(good);
  const std::string text = read(good);
  search::reset_for_testing(true);

  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    const std::size_t at = out.find(from);
    REQUIRE(at != std::string::npos);
    return out.replace(at, from.size(), to);
  };
  const auto line_starting = [&](const std::string& prefix) {
    const std::size_t at = text.find("\n" + prefix) + 1;
    return text.substr(at, text.find('\n', at) - at);
  };
  struct Bad {
    const char* what;
    std::string path, contents, status;
  };
  const std::vector<Bad> bad{
      {"missing", folder.file("absent.txt"), "", "missing"},
      // A folder stands for an unreadable file: chmod 000 does not stop root, who runs the suite.
      {"a folder", folder.path.string(), "", "unreadable"},
      {"not a plan file", folder.file("junk.txt"), "hello\n", "corrupt at line 1"},
      {"empty", folder.file("empty.txt"), "", "corrupt at line 1"},
      {"truncated", folder.file("cut.txt"), text.substr(0, text.rfind("end ")), "truncated"},
      {"a bad plan line", folder.file("plan.txt"), edited("\nplan ", "\nplan\n"), "bad plan"},
      {"another format", folder.file("format.txt"), edited("tenex-plans 1", "tenex-plans 2"),
       "foreign (line 1: format 2; this tenex reads format 1 only)"},
      {"another CPU", folder.file("cpu.txt"), edited(line_starting("cpu "), "cpu Imaginary 9000"), "foreign"},
      {"another ISA", folder.file("isa.txt"), edited(line_starting("isa "), "isa vliw"), "instruction set vliw"},
      {"another thread count", folder.file("threads.txt"), edited(line_starting("threads "), "threads 77"),
       "77 threads"},
      {"another version", folder.file("version.txt"), edited(line_starting("version "), "version 0.0.1"),
       "tenex 0.0.1"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    if (b.path != folder.path.string() && b.what != std::string("missing")) write(b.path, b.contents);
    CHECK(tenex::load_plans(b.path) == 0);
    const std::string status = tenex::plan_file_status();
    CHECK(status.find(b.status) != std::string::npos);
    CHECK(status.find("nothing loaded") != std::string::npos);
    CHECK(status.find("0 plans held") != std::string::npos);
  }
  // A plan that does not match what this build enumerates for its shape is dropped on use:
  // never a wrong plan.
  const std::string plan = line_starting("plan ");
  const std::string key = plan.substr(5, plan.find(' ', 5) - 5);
  for (const std::string& wrong : {"plan " + key + " 0 not a plan of this build", "plan " + key + " 999999 a plan"}) {
    INFO(wrong);
    const std::string path = folder.file("wrong.txt");
    write(path, edited(plan, wrong));
    search::reset_for_testing(true);
    CHECK(tenex::load_plans(path) == 1);
    const EnvironmentScope scope("TENEX_PLAN_SEARCH", "amortized");
    const Operands<double> ops(s, rng, 1.0, 0.0);
    REQUIRE(ops.run(s) == 0);
    CHECK(search::last_call().origin != search::Origin::loaded);
    CHECK(tenex::plan_file_status().find("0 plans held") != std::string::npos);
  }
}

TEST_CASE("plan file: a file with CRLF line ends is read; a bad header says which line and what it found") {
  const FreshPlanner fresh;
  const Threads held(2);
  std::mt19937 rng(9);
  const Folder folder;
  const Shape s{"i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {192, 160, 256}};
  const std::string plan = measured_plan(s, rng);
  const std::string good = folder.file("good.txt");
  tenex::save_plans(good);
  const std::string text = read(good);
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const std::string path = folder.file("crlf.txt");
  write(path, crlf);

  search::reset_for_testing(true);  // as a fresh process
  CHECK(tenex::load_plans(path) == 1);
  const std::string loaded = tenex::plan_file_status();
  CHECK(loaded.find("loaded 1 plan and the machine probe;") != std::string::npos);
  CHECK(loaded.find("1 plan held") != std::string::npos);
  const EnvironmentScope scope("TENEX_PLAN_SEARCH", "amortized");
  const Operands<double> ops(s, rng, 1.0, 0.0);
  REQUIRE(ops.run(s) == 0);
  CHECK(search::last_call().origin == search::Origin::loaded);
  CHECK(ran_plan() == plan);
  tenex::save_plans(path);
  CHECK(read(path) == text);  // written back with plain line ends

  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    const std::size_t at = out.find(from);
    REQUIRE(at != std::string::npos);
    return out.replace(at, from.size(), to);
  };
  std::string carriage_returns = text;  // classic Mac OS line ends: one line
  std::replace(carriage_returns.begin(), carriage_returns.end(), '\n', '\r');
  const std::size_t threads_at = text.find("\nthreads ") + 1;
  const std::string threads_line = text.substr(threads_at, text.find('\n', threads_at) - threads_at);
  struct Bad {
    const char* what;
    std::string contents, status;
  };
  const std::vector<Bad> bad{
      {"a space after the format", edited("tenex-plans 1\n", "tenex-plans 1 \n"),
       "corrupt at line 1 (expected 'tenex-plans 1', found 'tenex-plans 1 ')"},
      {"a format of another spelling", edited("tenex-plans 1\n", "tenex-plans one\n"),
       "corrupt at line 1 (expected 'tenex-plans 1', found 'tenex-plans one')"},
      {"a leading zero", edited("tenex-plans 1\n", "tenex-plans 01\n"),
       "corrupt at line 1 (expected 'tenex-plans 1', found 'tenex-plans 01')"},
      {"a stray carriage return", edited("tenex-plans 1\n", "tenex-plans 1\r\r\n"),
       "corrupt at line 1 (expected 'tenex-plans 1', found 'tenex-plans 1\\r')"},
      {"carriage returns only", carriage_returns,
       "corrupt at line 1 (expected 'tenex-plans 1', found 'tenex-plans 1\\rversion "},
      {"another file", "<html>\n",
       "corrupt at line 1 (not a tenex plan file: expected 'tenex-plans 1', found '<html>')"},
      {"a misspelt header line", edited("\nversion ", "\nversoin "),
       "corrupt at line 2 (expected 'version ...', found 'versoin "},
      {"a tab in the thread count", edited(threads_line, threads_line + "\t"),
       "corrupt at line 5 (bad thread count '" + threads_line.substr(8) + "\\t')"},
      {"a plan count that does not match", edited("\nend 1\n", "\nend 2\n"),
       "(plan count does not match: 'end 2' after 1 plan)"},
      {"another version", edited("\nversion ", "\nversion 0.0.1-"), "foreign (line 2: written for tenex 0.0.1-"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    const std::string file = folder.file("bad.txt");
    write(file, b.contents);
    search::reset_for_testing(true);
    CHECK(tenex::load_plans(file) == 0);
    const std::string status = tenex::plan_file_status();
    INFO(status);
    CHECK(status.find(b.status) != std::string::npos);
    CHECK(status.find("nothing loaded") != std::string::npos);
    CHECK(status.find("format 1;") == std::string::npos);  // never "format 1; this tenex reads 1"
  }
}

TEST_CASE("plan file: written whole, by rename, or not at all") {
  const FreshPlanner fresh;
  const Folder folder;
  const std::string path = folder.file("plans.txt");
  write(path, "an older file, much longer than the new one will be: " + std::string(10000, 'x') + "\n");
  tenex::save_plans(path);
  const std::string text = read(path);
  CHECK(text.rfind("tenex-plans 1\n", 0) == 0);
  CHECK(text.find("older") == std::string::npos);
  CHECK(text.size() < 1000);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder.path)) {
    CHECK(entry.path().filename() == "plans.txt");  // no temporary file left
    ++files;
  }
  CHECK(files == 1);
  const std::string nowhere = folder.file("no-such-folder/plans.txt");
  CHECK_THROWS_AS(tenex::save_plans(nowhere), tenex::Error);
  CHECK_FALSE(std::filesystem::exists(folder.path / "no-such-folder"));
}

TEST_CASE("plan file: threads plan and run contractions while plans are loaded and saved") {
  const FreshPlanner fresh;
  std::mt19937 rng(9);
  const Folder folder;
  const Shape s{"i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {192, 160, 256}};
  measured_plan(s, rng);
  const std::string path = folder.file("plans.txt");
  tenex::save_plans(path);
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> wrong{0}, runs{0};
  const EnvironmentScope scope("TENEX_PLAN_SEARCH", "amortized");
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937 own(100 + static_cast<unsigned>(w));
      const Shape mine = w == 0 ? s : shapes()[1];
      const Operands<double> ops(mine, own, 0.5, w == 0 ? 0.0 : 1.0);
      while (!stop || runs < 40) {
        wrong += ops.run(mine);
        ++runs;
      }
    });
  }
  for (int round = 0; round < 30; ++round) {
    CHECK(tenex::load_plans(path) == 1);
    tenex::save_plans(folder.file("copy.txt"));
  }
  stop = true;
  for (std::thread& t : workers) t.join();
  CHECK(wrong == 0);
  CHECK(runs >= 40);
}

namespace {

/// The model's first candidate for c(i,j) = a(i,k) b(k,j) of extent n, in doubles.
cpu::contraction::Plan model_gemm_like(std::size_t n) {
  const cpu::contraction::Prepared prepared =
      cpu::contraction::prepare(8, true, {n, n}, {0, 2}, {n, n}, {2, 1}, {0, 1});
  return search::candidate_plans(prepared.problem, prepared.flops, 1).front();
}

}  // namespace

TEST_CASE("machine: the cache sizes are positive and ordered") {
  const cpu::machine::Caches read = cpu::machine::read_caches();
  CHECK(read.l1d > 0);
  CHECK(read.l2 >= read.l1d);
  CHECK(read.l3 >= read.l2);
  CHECK(cpu::machine::caches().l2 == read.l2);
  // The sizes derived from them stay within their bounds.
  CHECK(cpu::tuning::repack_bytes() >= 256.0 * 1024);
  CHECK(cpu::tuning::gett_block_bytes() <= std::size_t{1} << 20);
}

TEST_CASE("machine: a profile pins the cache sizes and what derives from them, then the machine's come back") {
  const cpu::machine::Caches own = cpu::machine::read_caches();
  for (std::size_t x = 0; x < machine_profiles::kProfileCount; ++x) {
    const machine_profiles::Profile& profile = machine_profiles::kProfiles[x];
    INFO(std::string(profile.name));
    {
      const machine_profiles::Scope pinned(profile);
      CHECK(cpu::machine::caches().l1d == profile.caches.l1d);
      CHECK(cpu::machine::caches().l2 == profile.caches.l2);
      CHECK(cpu::machine::caches().l3 == profile.caches.l3);
      // Half the L2 (within 128 KB and 1 MB), the L2 (within 256 KB and 4 MB), 3/8 of that.
      CHECK(cpu::tuning::gett_block_bytes() == std::min<std::size_t>(profile.caches.l2 / 2, std::size_t{1} << 20));
      CHECK(cpu::tuning::repack_bytes() == static_cast<double>(profile.caches.l2));
      CHECK(cpu::tuning::tile_bytes() == static_cast<double>(profile.caches.l2) * 3.0 / 8.0);
    }
    CHECK(cpu::machine::caches().l2 == own.l2);
  }
}

TEST_CASE("machine probe: positive finite rates, once per process and element size, only for large work") {
  const FreshPlanner fresh;
  const EnvironmentScope probing("TENEX_PROBE", "1");
  const cpu::machine::Probed direct = cpu::machine::probe(8);
  for (const double rate : {direct.gemm, direct.gett, direct.copy, direct.seconds}) {
    CHECK(std::isfinite(rate));
    CHECK(rate > 0);
  }
  search::reset_for_testing(true);
  const std::size_t before = cpu::machine::probe_count();
  // Nothing large planned: the constants, no probe.
  CHECK_FALSE(search::gemm_rate(8).probed);
  CHECK(search::gemm_rate(8).rate == cpu::tuning::kCorePeakDouble);
  std::mt19937 rng(41);
  const Shape small = shapes().front();  // about a megaflop
  const Operands<double> small_ops(small, rng, 1.0, 0.0);
  CHECK(small_ops.run(small) == 0);
  CHECK(cpu::machine::probe_count() == before);
  // A large contraction planned: one probe, whatever follows.
  const Shape large{"i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {192, 160, 256}};
  const Operands<double> large_ops(large, rng, 1.0, 0.0);
  for (int call = 0; call < 3; ++call) CHECK(large_ops.run(large) == 0);
  CHECK(cpu::machine::probe_count() == before + 1);
  CHECK(search::gemm_rate(8).probed);
  CHECK(search::gett_rate(8).probed);
  {
    const search::RateScope scope(1e12);
    CHECK(search::gemm_rate(8).rate > 0);
    CHECK(std::isfinite(search::gett_rate(8).rate));
  }
  CHECK(cpu::machine::probe_count() == before + 1);
  CHECK(tenex::plan_file_status().find("machine probe (one core): dgemm ") != std::string::npos);
  // TENEX_PROBE=0: the constants, probed rates or not.
  const EnvironmentScope off("TENEX_PROBE", "0");
  CHECK_FALSE(search::gemm_rate(8).probed);
  CHECK(search::gemm_rate(8).rate == cpu::tuning::kCorePeakDouble);
}

TEST_CASE("plan file: the probe round-trips, and a foreign or corrupt probe entry is ignored and says why") {
  const FreshPlanner fresh;
  const EnvironmentScope probing("TENEX_PROBE", "1");
  const Folder folder;
  search::set_rates_for_testing(8, 20e9, 55e9);
  search::set_rates_for_testing(4, 40e9, 110e9);
  const std::string path = folder.file("probe.txt");
  tenex::save_plans(path);
  const std::string text = read(path);
  const std::size_t at = text.find("\nprobe ") + 1;
  REQUIRE(at > 0);
  const std::string line = text.substr(at, text.find('\n', at) - at);
  search::reset_for_testing(true);
  const std::size_t before = cpu::machine::probe_count();
  CHECK(tenex::load_plans(path) == 0);
  CHECK(tenex::plan_file_status().find("and the machine probe") != std::string::npos);
  {
    const search::RateScope large(1e12);
    CHECK(search::gemm_rate(8).rate == 20e9);
    CHECK(search::gett_rate(8).rate == 55e9);
    CHECK(search::gemm_rate(4).rate == 40e9);
    CHECK(search::gett_rate(4).rate == 110e9);
  }
  CHECK(cpu::machine::probe_count() == before);  // loaded, not probed

  const std::string simd = cpu::machine::probe_key().simd;
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    std::string changed = line;
    const std::size_t where = changed.find(from);
    REQUIRE(where != std::string::npos);
    changed.replace(where, from.size(), to);
    return out.replace(at, line.size(), changed);
  };
  struct Bad {
    const char* what;
    std::string contents, status;
  };
  const std::vector<Bad> bad{
      {"another SIMD target", with(" " + simd + " gemm ", " imaginary gemm "),
       "ignored (foreign: SIMD target imaginary"},
      {"a negative rate", with(" gemm ", " gemm -"), "ignored (corrupt)"},
      {"a missing field", with(" gett ", " "), "ignored (corrupt)"},
      {"not a number", with(" copy ", " copy x"), "ignored (corrupt)"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    write(path, b.contents);
    search::reset_for_testing(true);
    CHECK(tenex::load_plans(path) == 0);
    const std::string status = tenex::plan_file_status();
    CHECK(status.find(b.status) != std::string::npos);
    CHECK(status.find("loaded 0 plans") != std::string::npos);
    CHECK_FALSE(search::gemm_rate(8).probed);  // nothing taken from the entry
  }
}

TEST_CASE("plan model: with probed rates, GETT first where the BLAS is slow, GEMM first where it is fast") {
  const FreshPlanner fresh;
  const EnvironmentScope probing("TENEX_PROBE", "1");
  const Threads held(1);
  search::set_rates_for_testing(8, 10e9, 60e9);
  CHECK(std::holds_alternative<cpu::contraction::Gett>(model_gemm_like(256).kernel));
  search::set_rates_for_testing(8, 90e9, 20e9);
  const cpu::contraction::Plan fast_blas = model_gemm_like(256);
  CHECK(fast_blas.gemm() != nullptr);  // neither the GETT or narrow kernel nor the plain loops
  // With the constants the GETT kernel is never ranked, only timed.
  search::set_rates_for_testing(8, 10e9, 60e9);
  const EnvironmentScope off("TENEX_PROBE", "0");
  CHECK_FALSE(std::holds_alternative<cpu::contraction::Gett>(model_gemm_like(256).kernel));
}

TEST_CASE_TEMPLATE("plan search: results do not depend on the probe or the rates it finds", T, float, double) {
  std::mt19937 rng(43);
  std::vector<Shape> all = shapes();
  all.push_back({"large gemm-like i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {160, 144, 200}});
  // GETT first (a slow BLAS), GEMM first (a fast one), probed on this machine, the constants.
  const double slow[2] = {10e9, 60e9}, fast[2] = {90e9, 20e9};
  for (int rates = 0; rates < 4; ++rates) {
    const EnvironmentScope probing("TENEX_PROBE", rates == 3 ? "0" : "1");
    for (int threads : {1, 2}) {
      const FreshPlanner fresh;
      const Threads held(threads);
      const double* injected = rates == 0 ? slow : rates == 1 ? fast : nullptr;
      if (injected) search::set_rates_for_testing(sizeof(T), injected[0] * 8 / sizeof(T), injected[1] * 8 / sizeof(T));
      for (const Shape& s : all) {
        for (const T beta : {T(0), T(0.5)}) {
          const Operands<T> ops(s, rng, T(-1.5), beta);
          for (int call = 0; call < 3; ++call) {
            INFO("rates ", rates, ", ", threads, " threads, ", s.name, ", beta ", static_cast<double>(beta));
            REQUIRE(ops.run(s) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("plan kinds: each kind asked once gives every list the planner hands out") {
  // kind_plans walks the kinds once per problem (contraction_plan.hpp); all_plans, the cheapest
  // plan and the search's candidates are what it returns, in its order.
  namespace contraction = cpu::contraction;
  const FreshPlanner fresh;
  const Threads held(1);
  const std::vector<Shape> shapes{
      {"i,k * k,j, narrow", {0, 2}, {2, 1}, {0, 1}, {120, 8, 64}},
      {"i,k * k,j", {0, 2}, {2, 1}, {0, 1}, {96, 80, 72}},
      {"a,b,c * c,d -> a,b,d", {0, 1, 2}, {2, 3}, {0, 1, 3}, {12, 10, 14, 16}},
      {"i,j Hadamard", {0, 1}, {0, 1}, {0, 1}, {6, 5}},
  };
  for (const Shape& s : shapes) {
    CAPTURE(s.name);
    const contraction::Prepared prepared = contraction::prepare(8, true, s.of(s.a), s.a, s.of(s.b), s.b, s.c);
    const contraction::Problem& p = prepared.problem;
    const contraction::KindPlans every = contraction::kind_plans(p, prepared.flops, true);
    const contraction::KindPlans searched = contraction::kind_plans(p, prepared.flops, false);
    // all_plans: the narrow kernel's, the GETT kernel's, every GEMM plan, the plain loops last.
    std::vector<contraction::Plan> want;
    if (every.narrow) want.push_back(*every.narrow);
    if (every.gett) want.push_back(*every.gett);
    want.insert(want.end(), every.gemm.begin(), every.gemm.end());
    const std::vector<contraction::Plan>& all = contraction::all_plans(p, prepared.flops);
    REQUIRE(all.size() == want.size() + 1);
    for (std::size_t x = 0; x < want.size(); ++x) CHECK(all[x].kernel == want[x].kernel);
    CHECK(all.back().naive());
    // The search's GEMM plans are a subsequence of every one, in the same order.
    std::size_t at = 0;
    for (const contraction::Plan& plan : searched.gemm) {
      while (at < every.gemm.size() && !(every.gemm[at].kernel == plan.kernel)) ++at;
      CHECK(at < every.gemm.size());
      if (at < every.gemm.size()) CHECK(every.gemm[at].seconds == plan.seconds);
    }
    // The cheapest: the least of the plain loops, the searched GEMM plans and a ranked GETT plan.
    double least = searched.naive.seconds;
    for (const contraction::Plan& plan : searched.gemm) least = std::min(least, plan.seconds);
    if (searched.gett_ranked && searched.gett) least = std::min(least, searched.gett->seconds);
    CHECK(searched.cheapest.seconds == least);
    CHECK(contraction::cheapest_plan(p, prepared.flops).kernel == searched.cheapest.kernel);
    CHECK(search::candidate_plans(p, prepared.flops, 1).front().kernel == searched.cheapest.kernel);
    // Each kind names itself.
    CHECK(contraction::describe(p, searched.naive) == "plain loops");
    if (searched.narrow) CHECK(contraction::describe(p, *searched.narrow).rfind("narrow kernel, ", 0) == 0);
    if (searched.gett) CHECK(contraction::describe(p, *searched.gett).rfind("GETT kernel, ", 0) == 0);
    for (const contraction::Plan& plan : searched.gemm) {
      CHECK(contraction::describe(p, plan).find("; m {") != std::string::npos);
    }
    // The rates the kinds were priced at are the planner's.
    const contraction::ModelRates rates = contraction::model_rates(8);
    CHECK(rates.gemm == search::gemm_rate(8).rate);
    CHECK(rates.gett == search::gett_rate(8).rate);
    CHECK(rates.ranked == (search::gemm_rate(8).probed && search::gett_rate(8).probed));
  }
}
