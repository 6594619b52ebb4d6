// Benchmark: tenex contractions against Eigen::Tensor on the TCCG cases, in one process.
//
//   bench_eigen_tccg [cases.tsv] [--repeat N] [--filter NAME] [--threads N]
//
// The cases file (default: the TENEX_TCCG_TSV the build points at) has one case a line:
// name, einsum ("bda,dc->abc": a's labels, b's labels, the result's), extents
// ("a=312,b=312,..."), gflop and group, tab-separated; '#' starts a comment. For each case
// this times
//   (a) tenex:  c("a,b,c") = A("b,d,a") * B("d,c");   (double, evaluated at its ';')
//   (b) Eigen:  C.device(pool) = A.contract(B, pairs).shuffle(perm);
// with Eigen::Tensor<double, R, Eigen::RowMajor> operands holding the same data as tenex's
// (both row-major), on an Eigen::ThreadPoolDevice of --threads threads (default: the hardware
// concurrency), into a preallocated result. Eigen's contraction yields A's free modes then B's
// free modes, each in operand order; `perm` reorders that to the requested result (the shuffle
// is left out when it is the identity, so Eigen is not charged for a copy it does not need).
// Ranks are compile-time in Eigen: the rank triples (A, B, C) of the public TCCG cases are
// instantiated below, and a case with another triple is reported as unsupported.
//
// Runs alternate between the two so that drift in machine load hits both; each side reports
// its best of --repeat runs after one warm-up. ratio = eigen_ms / tenex_ms: above 1 means tenex
// is faster. `maxdiff` is the largest absolute difference between the two results over the
// whole tensor, and `maxabs` the largest magnitude of tenex's result, so that a wrong
// contraction on either side shows.
#ifndef EIGEN_USE_THREADS
#define EIGEN_USE_THREADS
#endif
#include <unsupported/Eigen/CXX11/Tensor>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <tenex/tenex.hpp>

#include "tccg_cases.hpp"

namespace {

using tccg::Case;
using tccg::extents_of;
using tccg::labels_of;
using tccg::read_cases;

using tenex::Tensor;

struct Options {
  std::string path;
  int repeat = 5;
  int threads = 0;  // 0: hardware concurrency
  std::string filter;
};


bool parse_int(std::string_view value, int& out) {
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
  return error == std::errc() && end == value.data() + value.size();
}

std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
#ifdef TENEX_TCCG_TSV
  options.path = TENEX_TCCG_TSV;
#endif
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--repeat" || arg == "--filter" || arg == "--threads") {
      if (i + 1 >= argc) return std::nullopt;
      const std::string_view value = argv[++i];
      if (arg == "--filter") {
        options.filter = value;
      } else if (arg == "--repeat") {
        if (!parse_int(value, options.repeat) || options.repeat < 1) return std::nullopt;
      } else {
        if (!parse_int(value, options.threads) || options.threads < 1) return std::nullopt;
      }
    } else if (!arg.empty() && arg[0] != '-') {
      options.path = arg;
    } else {
      return std::nullopt;
    }
  }
  if (options.path.empty()) return std::nullopt;
  if (options.threads == 0) options.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return options;
}


bool has(const std::string& letters, char ch) { return letters.find(ch) != std::string::npos; }

// How Eigen does the case: which modes of A and B are contracted (pairs of positions, in A's
// order), and the permutation from Eigen's output (A's free modes, then B's) to the result.
struct EigenPlan {
  std::vector<std::pair<Eigen::Index, Eigen::Index>> pairs;
  std::vector<Eigen::Index> perm;  // result mode i = Eigen output mode perm[i]
  bool identity = true;
};

// Throws std::runtime_error for what a plain contraction cannot express: a label repeated in
// one operand, a batch (Hadamard) label, a label summed over one operand only, a result label
// that is in neither operand.
EigenPlan plan_for(const Case& c) {
  const auto fail = [&](const std::string& why) { throw std::runtime_error(c.name + " (" + c.einsum + "): " + why); };
  for (const std::string* s : {&c.a, &c.b, &c.c}) {
    for (std::size_t i = 0; i < s->size(); ++i) {
      if (s->find((*s)[i], i + 1) != std::string::npos) fail("repeated label, not a plain contraction");
    }
  }
  EigenPlan plan;
  std::string out;
  for (std::size_t i = 0; i < c.a.size(); ++i) {
    const char ch = c.a[i];
    const bool in_b = has(c.b, ch), in_c = has(c.c, ch);
    if (in_b && in_c) fail(std::string("batch label '") + ch + "' is not supported by Eigen's contract");
    if (!in_b && !in_c) fail(std::string("label '") + ch + "' summed over A only");
    if (in_b) {
      plan.pairs.emplace_back(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c.b.find(ch)));
    } else {
      out += ch;
    }
  }
  for (char ch : c.b) {
    if (has(c.a, ch)) continue;
    if (!has(c.c, ch)) fail(std::string("label '") + ch + "' summed over B only");
    out += ch;
  }
  if (out.size() != c.c.size()) fail("result labels do not match the free labels");
  for (std::size_t i = 0; i < c.c.size(); ++i) {
    const std::size_t at = out.find(c.c[i]);
    if (at == std::string::npos) fail(std::string("result label '") + c.c[i] + "' is in neither operand");
    plan.perm.push_back(static_cast<Eigen::Index>(at));
    plan.identity = plan.identity && at == i;
  }
  return plan;
}

// One Eigen case, ready to run: operands copied from tenex's, the result preallocated.
class EigenRunner {
 public:
  virtual ~EigenRunner() = default;
  virtual void run() = 0;
  virtual const double* result() const = 0;
  virtual std::size_t size() const = 0;
};

template <int RA, int RB, int RC>
class EigenRunnerOf final : public EigenRunner {
  static constexpr int NC = (RA + RB - RC) / 2;  // contracted modes
  static_assert(NC >= 1 && RA + RB - 2 * NC == RC);

 public:
  EigenRunnerOf(const Case& c, const EigenPlan& plan, const Tensor<double>& a, const Tensor<double>& b,
                const Eigen::ThreadPoolDevice& device)
      : a_(dims_of<RA>(c, c.a)), b_(dims_of<RB>(c, c.b)), c_(dims_of<RC>(c, c.c)), device_(&device),
        identity_(plan.identity) {
    std::copy(a.data(), a.data() + a.size(), a_.data());
    std::copy(b.data(), b.data() + b.size(), b_.data());
    c_.setZero();
    for (int i = 0; i < NC; ++i) pairs_[i] = Eigen::IndexPair<Eigen::Index>(plan.pairs[i].first, plan.pairs[i].second);
    for (int i = 0; i < RC; ++i) perm_[i] = plan.perm[i];
  }

  void run() override {
    if (identity_) {
      c_.device(*device_) = a_.contract(b_, pairs_);
    } else {
      c_.device(*device_) = a_.contract(b_, pairs_).shuffle(perm_);
    }
  }
  const double* result() const override { return c_.data(); }
  std::size_t size() const override { return static_cast<std::size_t>(c_.size()); }

 private:
  template <int R>
  static Eigen::array<Eigen::Index, R> dims_of(const Case& c, const std::string& letters) {
    Eigen::array<Eigen::Index, R> dims{};
    for (int i = 0; i < R; ++i) dims[i] = static_cast<Eigen::Index>(c.extent.at(letters[i]));
    return dims;
  }

  Eigen::Tensor<double, RA, Eigen::RowMajor> a_;
  Eigen::Tensor<double, RB, Eigen::RowMajor> b_;
  Eigen::Tensor<double, RC, Eigen::RowMajor> c_;
  Eigen::array<Eigen::IndexPair<Eigen::Index>, NC> pairs_;
  Eigen::array<Eigen::Index, RC> perm_;
  const Eigen::ThreadPoolDevice* device_;
  bool identity_;
};

// The rank triples (A, B, C) of the public TCCG cases and of the even half
// (bench/tccg_even.tsv: 2, 2, 2 and 2, 3, 3 too); each is one instantiation of Eigen's
// contraction (and shuffle), which is slow to compile, so only these.
#define TENEX_EIGEN_RANKS(X) \
  X(2, 2, 2)                 \
  X(2, 3, 3)                 \
  X(2, 4, 4)                 \
  X(3, 2, 3)                 \
  X(3, 3, 2)                 \
  X(4, 2, 4)                 \
  X(4, 3, 3)                 \
  X(4, 4, 4)                 \
  X(4, 4, 6)                 \
  X(5, 2, 5)

std::unique_ptr<EigenRunner> make_eigen_runner(const Case& c, const EigenPlan& plan, const Tensor<double>& a,
                                               const Tensor<double>& b, const Eigen::ThreadPoolDevice& device) {
  const std::size_t ra = c.a.size(), rb = c.b.size(), rc = c.c.size();
#define TENEX_EIGEN_CASE(RA, RB, RC)                                           \
  if (ra == RA && rb == RB && rc == RC) {                                      \
    return std::make_unique<EigenRunnerOf<RA, RB, RC>>(c, plan, a, b, device); \
  }
  TENEX_EIGEN_RANKS(TENEX_EIGEN_CASE)
#undef TENEX_EIGEN_CASE
  throw std::runtime_error(c.name + " (" + c.einsum + "): no Eigen instantiation for ranks (" + std::to_string(ra) +
                           ", " + std::to_string(rb) + ", " + std::to_string(rc) + "); add it to TENEX_EIGEN_RANKS");
}

double milliseconds_of(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

struct Row {
  double tenex_ms = std::numeric_limits<double>::infinity();
  double eigen_ms = std::numeric_limits<double>::infinity();
  double maxdiff = 0;
  double maxabs = 0;
};

Row bench_case(const Case& c, int repeat, const Eigen::ThreadPoolDevice& device) {
  const EigenPlan plan = plan_for(c);
  Tensor<double> a(tenex::Shape(extents_of(c, c.a))), b(tenex::Shape(extents_of(c, c.b))), result;
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  const std::string la = labels_of(c.a), lb = labels_of(c.b), lc = labels_of(c.c);
  const std::unique_ptr<EigenRunner> eigen = make_eigen_runner(c, plan, a, b, device);

  const std::function<void()> with_tenex = [&] { result(lc) = a(la) * b(lb); };
  const std::function<void()> with_eigen = [&] { eigen->run(); };
  with_tenex();  // warm-up: first-touch page faults, thread start-up, plan caches
  with_eigen();
  Row row;
  for (int r = 0; r < repeat; ++r) {
    row.tenex_ms = std::min(row.tenex_ms, milliseconds_of(with_tenex));
    row.eigen_ms = std::min(row.eigen_ms, milliseconds_of(with_eigen));
  }

  // Both results are row-major over the same labels: compare them element by element.
  if (result.shape() != tenex::Shape(extents_of(c, c.c)) || result.size() != eigen->size()) {
    throw std::runtime_error(c.name + ": tenex and Eigen results differ in shape");
  }
  const double* pt = result.data();
  const double* pe = eigen->result();
  for (std::size_t i = 0; i < result.size(); ++i) {
    const double diff = std::abs(pt[i] - pe[i]);
    row.maxdiff = std::isnan(diff) ? std::numeric_limits<double>::infinity() : std::max(row.maxdiff, diff);
    row.maxabs = std::max(row.maxabs, std::abs(pt[i]));
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  // Steady state after the first call's search: TENEX_PLAN_SEARCH=measure unless set.
  ::setenv("TENEX_PLAN_SEARCH", "measure", 0);
  const std::optional<Options> options = parse_options(argc, argv);
  if (!options) {
    std::printf("usage: bench_eigen_tccg [cases.tsv] [--repeat N] [--filter NAME] [--threads N]\n");
    return 2;
  }
  try {
    const std::vector<Case> cases = read_cases(options->path);
    Eigen::ThreadPool pool(options->threads);
    const Eigen::ThreadPoolDevice device(&pool, options->threads);
    std::printf("# tenex vs Eigen::Tensor (row-major, ThreadPoolDevice, %d threads; Eigen %d.%d.%d), double,\n",
                options->threads, EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
    std::printf("# best of %d runs after a warm-up, alternating; ratio = eigen_ms / tenex_ms (> 1: tenex faster)\n",
                options->repeat);
    std::printf("# maxdiff = max |tenex - eigen| over the whole result, maxabs = max |result|\n");
    std::printf("%-8s %-20s %10s %10s %7s %10s %9s\n", "name", "einsum", "tenex_ms", "eigen_ms", "ratio", "maxdiff",
                "maxabs");
    double log_sum = 0;
    int counted = 0;
    bool mismatch = false;
    for (const Case& c : cases) {
      if (!options->filter.empty() && c.name.find(options->filter) == std::string::npos) continue;
      const Row row = bench_case(c, options->repeat, device);
      const double ratio = row.eigen_ms / row.tenex_ms;
      log_sum += std::log(ratio);
      ++counted;
      // Sums of up to ~3e4 products of values in [-1, 1): rounding differences stay far below this.
      const bool bad = !(row.maxdiff <= 1e-9 * std::max(1.0, row.maxabs));
      mismatch = mismatch || bad;
      std::printf("%-8s %-20s %10.2f %10.2f %7.2f %10.1e %9.1f%s\n", c.name.c_str(), c.einsum.c_str(), row.tenex_ms,
                  row.eigen_ms, ratio, row.maxdiff, row.maxabs, bad ? "  MISMATCH" : "");
      std::fflush(stdout);
    }
    if (counted == 0) {
      std::printf("no case matches\n");
      return 1;
    }
    std::printf("geometric mean ratio (eigen_ms / tenex_ms) over %d cases: %.3f\n", counted,
                std::exp(log_sum / counted));
    if (mismatch) {
      std::printf("error: tenex and Eigen results disagree (MISMATCH above)\n");
      return 1;
    }
  } catch (const std::exception& error) {
    std::printf("error: %s\n", error.what());
    return 1;
  }
  return 0;
}
