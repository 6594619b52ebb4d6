// Benchmark: tenex contractions on the TCCG cases against one GEMM of the same size.
//
//   bench_contractions [cases.tsv] [--repeat N] [--filter NAME] [TYPE] [--conj] [--first-call] [--permutations]
//   bench_contractions [cases.tsv] --cold N [--filter NAME] [TYPE] [--conj]
//   bench_contractions --mp2 [--nocc 40] [--nvirt 200] [--naux 800] [--repeat N]
//
// The cases file (default: the TENEX_TCCG_TSV the build points at) has one case a line:
// name, einsum ("bda,dc->abc": a's labels, b's labels, the result's), extents
// ("a=312,b=312,..."), gflop and group, tab-separated; '#' starts a comment. For each case
// this times the tenex statement c("a,b,c") = A("b,d,a") * B("d,c") (it runs at its ';') and
// one GEMM of the same m, n, k on fresh contiguous matrices, where m is the product of A's free
// extents, n of B's and k of the contracted ones. TYPE is the element type and the GEMM's
// routine: --double (dgemm, the default), --float (sgemm), --complex64 (cgemm), --complex128
// (zgemm). --conj (complex types) times c = conj(A) * B instead, against the same GEMM. Runs alternate
// between the two so that drift in machine load hits both; each side reports its best of
// --repeat runs after one warm-up. ratio = gemm / tenex: 1 or more means tenex is as fast as
// one GEMM of the same size. `check` is the largest relative difference of a few elements of
// the result against sums computed here, a guard against timing the wrong thing.
// --first-call adds the warm-up's time (tenex's first call of the shape, which times the
// candidate plans; the process's first case also measures the GEMM rate once) and its ratio to
// tenex's best call.
//
// --cold N instead times what a program meets: tenex's first N calls of each case (under the
// plan search mode of the environment, by default amortized, not measure) against N GEMMs of
// the same m, n, k after one GEMM warm-up, in the order the cases come, in one process.
// cold ratio = the N GEMMs' time / tenex's N calls; first/m = tenex's first call over the median
// of its calls 2..N, which run the model's plan (the amortized search starts later): the first
// call runs the model's plan too, and pays what any first call pays (the result's pages touched
// for the first time, OpenMP's threads started; TENEX_PLAN_SEARCH=estimate shows the same);
// worst/m = the slowest of calls 2..N over that median, where a search could cost time.
//
// --mp2 [--nocc 40 --nvirt 200 --naux 800] instead times the contraction stage of the MP2
// example (examples/mp2_energy.cpp) at those sizes: the transformation of the factors
// B("Q,i,a") = Bao("Q,m,n") * Co("m,i") * Cv("n,a") (two contractions) and the integrals
// V("i,a,j,b") = B("Q,i,a") * B("Q,j,b"), each statement against dgemm calls of the same
// m, n, k on contiguous matrices (for the transformation, the two products in the order tenex
// runs them: (Q n) x i x m, then (Q i) x a x n). rate ratio = GEMM time / tenex time of the
// same flops.
//
// --permutations instead times a few permutations (the statement b(out) = a(in)) against a
// memcpy of the same bytes: ratio = memcpy / permutation, 1 meaning copy bandwidth.
#include <cblas.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
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
  std::string filter;
  std::string type = "double";  // float, double, complex64, complex128
  bool conj = false;            // conj(A) * B (complex types)
  bool permutations = false;    // the permutation table instead of the cases
  bool mp2 = false;             // the MP2 example's contraction stage instead of the cases
  bool first_call = false;      // also the first call's time (the plan search) against the best
  int cold = 0;                 // --cold N: the first N calls of each case against N GEMMs
  std::size_t nocc = 40, nvirt = 200, naux = 800;
};


std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
#ifdef TENEX_TCCG_TSV
  options.path = TENEX_TCCG_TSV;
#endif
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--float" || arg == "--double" || arg == "--complex64" || arg == "--complex128") {
      options.type = arg.substr(2);
    } else if (arg == "--conj") {
      options.conj = true;
    } else if (arg == "--permutations") {
      options.permutations = true;
    } else if (arg == "--mp2") {
      options.mp2 = true;
    } else if (arg == "--first-call") {
      options.first_call = true;
    } else if (arg == "--nocc" || arg == "--nvirt" || arg == "--naux") {
      if (i + 1 >= argc) return std::nullopt;
      const std::string_view value = argv[++i];
      std::size_t& target = arg == "--nocc" ? options.nocc : arg == "--nvirt" ? options.nvirt : options.naux;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), target);
      if (error != std::errc() || end != value.data() + value.size() || target == 0) return std::nullopt;
    } else if (arg == "--cold") {
      if (i + 1 >= argc) return std::nullopt;
      const std::string_view value = argv[++i];
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), options.cold);
      if (error != std::errc() || end != value.data() + value.size() || options.cold < 2) return std::nullopt;
    } else if (arg == "--repeat" || arg == "--filter") {
      if (i + 1 >= argc) return std::nullopt;
      const std::string_view value = argv[++i];
      if (arg == "--filter") {
        options.filter = value;
        continue;
      }
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), options.repeat);
      if (error != std::errc() || end != value.data() + value.size() || options.repeat < 1) return std::nullopt;
    } else if (!arg.empty() && arg[0] != '-') {
      options.path = arg;
    } else {
      return std::nullopt;
    }
  }
  if (options.path.empty() && !options.permutations && !options.mp2) return std::nullopt;
  if (options.conj && options.type.rfind("complex", 0) != 0) return std::nullopt;
  return options;
}


std::size_t product_of(const Case& c, const std::string& letters) {
  std::size_t n = 1;
  for (char ch : letters) n *= c.extent.at(ch);
  return n;
}

struct GemmSize {
  std::size_t m = 1, n = 1, k = 1;
};

// m: a's labels the result keeps; n: b's; k: a's labels the result drops (contracted).
GemmSize gemm_size(const Case& c) {
  GemmSize s;
  for (char ch : c.a) (c.c.find(ch) != std::string::npos ? s.m : s.k) *= c.extent.at(ch);
  for (char ch : c.b) {
    if (c.c.find(ch) != std::string::npos) s.n *= c.extent.at(ch);
  }
  return s;
}

double milliseconds_of(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

// Row-major offset of the element of `letters` at the index values `value` (by letter).
std::size_t offset_of(const Case& c, const std::string& letters, const std::map<char, std::size_t>& value) {
  std::size_t offset = 0;
  for (char ch : letters) offset = offset * c.extent.at(ch) + value.at(ch);
  return offset;
}

// Largest relative difference between a few elements of the result and sums over the
// contracted labels computed here.
template <class T>
double check_result(const Case& c, const Tensor<T>& a, const Tensor<T>& b, const Tensor<T>& result, bool conj) {
  using C = std::complex<double>;
  std::string contracted;
  for (char ch : c.a) {
    if (c.b.find(ch) != std::string::npos && c.c.find(ch) == std::string::npos) contracted += ch;
  }
  const T* pa = a.data();
  const T* pb = b.data();
  const T* pc = result.data();
  std::mt19937_64 rng(7);
  double worst = 0;
  for (int sample = 0; sample < 8; ++sample) {
    std::map<char, std::size_t> value;
    for (char ch : c.c) value[ch] = std::uniform_int_distribution<std::size_t>(0, c.extent.at(ch) - 1)(rng);
    C sum = 0;
    double magnitude = 0;
    const std::size_t terms = product_of(c, contracted);
    for (std::size_t t = 0; t < terms; ++t) {
      std::size_t rest = t;
      for (std::size_t x = contracted.size(); x-- > 0;) {
        value[contracted[x]] = rest % c.extent.at(contracted[x]);
        rest /= c.extent.at(contracted[x]);
      }
      const C x(pa[offset_of(c, c.a, value)]), y(pb[offset_of(c, c.b, value)]);
      const C term = (conj ? std::conj(x) : x) * y;
      sum += term;
      magnitude += std::abs(term);
    }
    const C got(pc[offset_of(c, c.c, value)]);
    worst = std::max(worst, std::abs(got - sum) / std::max(magnitude, std::numeric_limits<double>::min()));
  }
  return worst;
}

struct Row {
  double tenex_ms = std::numeric_limits<double>::infinity();
  double gemm_ms = std::numeric_limits<double>::infinity();
  double check = 0;
  double first_ms = 0;  // the warm-up: tenex's first call of the shape (its plan search)
};

void xgemm(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0F, a, k, b, n, 0.0F, c, n);
}
void xgemm(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
}
void xgemm(int m, int n, int k, const std::complex<float>* a, const std::complex<float>* b, std::complex<float>* c) {
  const std::complex<float> one(1), zero(0);
  cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, &one, a, k, b, n, &zero, c, n);
}
void xgemm(int m, int n, int k, const std::complex<double>* a, const std::complex<double>* b, std::complex<double>* c) {
  const std::complex<double> one(1), zero(0);
  cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, &one, a, k, b, n, &zero, c, n);
}

// The value of `f(T{})` for the element type an option names (float, double, complex64, complex128).
template <class F>
auto with_type(const std::string& type, F f) {
  if (type == "float") return f(float{});
  if (type == "complex64") return f(std::complex<float>{});
  if (type == "complex128") return f(std::complex<double>{});
  return f(double{});
}
const char* gemm_routine(const std::string& type) {
  return type == "float" ? "sgemm" : type == "complex64" ? "cgemm" : type == "complex128" ? "zgemm" : "dgemm";
}

// A case's tenex operands and the contiguous matrices of the GEMM of the same m, n, k.
template <class T>
struct CaseOperands {
  CaseOperands(const Case& c, bool conj_a)
      : conj(conj_a), a(tenex::Shape(extents_of(c, c.a))), b(tenex::Shape(extents_of(c, c.b))), la(labels_of(c.a)),
        lb(labels_of(c.b)), lc(labels_of(c.c)), size(gemm_size(c)), ga(size.m * size.k), gb(size.k * size.n),
        gc(size.m * size.n) {
    tenex::fill_random(a, 1);
    tenex::fill_random(b, 2);
    std::mt19937_64 rng(3);
    using R = tenex::real_type_t<T>;
    std::uniform_real_distribution<R> uniform(-1.0, 1.0);
    auto draw = [&] {
      if constexpr (tenex::is_complex_v<T>) {
        const R re = uniform(rng);
        return T(re, uniform(rng));
      } else {
        return uniform(rng);
      }
    };
    for (T& x : ga) x = draw();
    for (T& x : gb) x = draw();
  }
  void contract() {
    if constexpr (tenex::is_complex_v<T>) {
      if (conj) {
        result(lc) = tenex::conj(a(la)) * b(lb);
        return;
      }
    }
    result(lc) = a(la) * b(lb);
  }
  void gemm() {
    xgemm(static_cast<int>(size.m), static_cast<int>(size.n), static_cast<int>(size.k), ga.data(), gb.data(),
          gc.data());
  }

  bool conj;
  Tensor<T> a, b, result;
  std::string la, lb, lc;
  GemmSize size;
  std::vector<T> ga, gb, gc;
};

template <class T>
Row bench_case(const Case& c, int repeat, bool conj) {
  CaseOperands<T> x(c, conj);
  Row row;
  const std::function<void()> with_tenex = [&] { x.contract(); };
  const std::function<void()> with_gemm = [&] { x.gemm(); };
  row.first_ms = milliseconds_of(with_tenex);  // warm-up: first touch, thread start-up, plan search
  with_gemm();
  for (int r = 0; r < repeat; ++r) {
    row.tenex_ms = std::min(row.tenex_ms, milliseconds_of(with_tenex));
    row.gemm_ms = std::min(row.gemm_ms, milliseconds_of(with_gemm));
  }
  row.check = check_result(c, x.a, x.b, x.result, conj);
  return row;
}

template <class T>
void bench_permutations(int repeat) {
  struct Permutation {
    const char* from;
    const char* to;
    std::vector<std::size_t> extents;
  };
  const std::vector<Permutation> permutations{
      {"d,b,c", "b,c,d", {170, 161, 161}},      {"a,b,c", "a,c,b", {170, 161, 161}},
      {"a,b,c", "c,b,a", {170, 161, 161}},      {"e,c,b,f,a", "a,b,c,f,e", {39, 26, 26, 39, 39}},
      {"g,f,a,c", "a,c,f,g", {23, 16, 23, 16}}, {"a,b,c,d,e,f", "f,e,d,c,b,a", {23, 16, 16, 23, 16, 16}},
  };
  std::printf("# permutation b(out) = a(in) vs memcpy of the same bytes, best of %d runs;\n", repeat);
  std::printf("# ratio = memcpy_ms / permute_ms (1: copy bandwidth)\n");
  std::printf("%-12s %-12s %8s %10s %10s %7s\n", "from", "to", "MB", "permute_ms", "memcpy_ms", "ratio");
  for (const Permutation& p : permutations) {
    Tensor<T> a{tenex::Shape(p.extents)}, b;
    tenex::fill_random(a, 1);
    std::vector<T> x(a.data(), a.data() + a.size()), y(a.size());
    const std::function<void()> with_tenex = [&] { b(p.to) = a(p.from); };
    const std::function<void()> with_copy = [&] { std::memcpy(y.data(), x.data(), x.size() * sizeof(T)); };
    with_tenex();
    with_copy();
    double tenex_ms = std::numeric_limits<double>::infinity(), copy_ms = tenex_ms;
    for (int r = 0; r < repeat; ++r) {
      tenex_ms = std::min(tenex_ms, milliseconds_of(with_tenex));
      copy_ms = std::min(copy_ms, milliseconds_of(with_copy));
    }
    std::printf("%-12s %-12s %8.1f %10.2f %10.2f %7.2f\n", p.from, p.to,
                static_cast<double>(a.size() * sizeof(T)) * 1e-6, tenex_ms, copy_ms, copy_ms / tenex_ms);
    std::fflush(stdout);
  }
}

// Best of `repeat` runs (milliseconds) of each of two functions, alternating, after a warm-up.
std::pair<double, double> best_of_both(const std::function<void()>& x, const std::function<void()>& y, int repeat) {
  x();
  y();
  double tx = std::numeric_limits<double>::infinity(), ty = tx;
  for (int r = 0; r < repeat; ++r) {
    tx = std::min(tx, milliseconds_of(x));
    ty = std::min(ty, milliseconds_of(y));
  }
  return {tx, ty};
}

void bench_mp2(const Options& o) {
  const std::size_t nbf = o.nocc + o.nvirt;
  Tensor<double> bao(tenex::Shape{o.naux, nbf, nbf}), coefficients(tenex::Shape{nbf, nbf}), b, v;
  tenex::fill_random(bao, 1);
  tenex::fill_random(coefficients, 2);
  const auto dnbf = static_cast<double>(nbf), docc = static_cast<double>(o.nocc), dvirt = static_cast<double>(o.nvirt),
             daux = static_cast<double>(o.naux);
  const std::function<void()> transform = [&] {
    auto occupied = tenex::slice(coefficients("m,i"), {0, 0}, {nbf, o.nocc});
    auto virtuals = tenex::slice(coefficients("n,a"), {0, o.nocc}, {nbf, nbf});
    b("Q,i,a") = bao("Q,m,n") * occupied * virtuals;
  };
  const std::function<void()> integrals = [&] { v("i,a,j,b") = b("Q,i,a") * b("Q,j,b"); };
  transform();  // b for the integrals

  // The reference: the same products on contiguous matrices.
  auto matrix = [](std::size_t rows, std::size_t cols) {
    std::vector<double> x(rows * cols);
    std::mt19937_64 rng(rows * 31 + cols);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (double& e : x) e = uniform(rng);
    return x;
  };
  struct Gemm {
    std::size_t m, n, k;
    std::vector<double> a, b, c;
  };
  std::vector<Gemm> step1{{o.naux * nbf, o.nocc, nbf, matrix(o.naux * nbf, nbf), matrix(nbf, o.nocc), {}},
                          {o.naux * o.nocc, o.nvirt, nbf, matrix(o.naux * o.nocc, nbf), matrix(nbf, o.nvirt), {}}};
  std::vector<Gemm> step2{{o.nocc * o.nvirt,
                           o.nocc * o.nvirt,
                           o.naux,
                           matrix(o.nocc * o.nvirt, o.naux),
                           matrix(o.naux, o.nocc * o.nvirt),
                           {}}};
  auto run_gemms = [](std::vector<Gemm>& gemms) {
    for (Gemm& g : gemms) {
      g.c.resize(g.m * g.n);
      xgemm(static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), g.a.data(), g.b.data(), g.c.data());
    }
  };
  const double flops_transform = 2.0 * daux * dnbf * docc * dnbf + 2.0 * daux * docc * dvirt * dnbf;
  const double flops_integrals = 2.0 * docc * dvirt * docc * dvirt * daux;
  std::printf("# MP2 contraction stage, %zu occupied, %zu virtual, %zu auxiliary (double), best of %d runs;\n", o.nocc,
              o.nvirt, o.naux, o.repeat);
  std::printf("# ratio = gemm_ms / tenex_ms for the same flops (>= 1: at the GEMM rate)\n");
  std::printf("%-26s %8s %10s %10s %9s %9s %7s\n", "statement", "gflop", "tenex_ms", "gemm_ms", "tenex_GF", "gemm_GF",
              "ratio");
  double total_tenex = 0, total_gemm = 0;
  auto report = [&](const char* name, double flops, std::pair<double, double> times) {
    const auto [tenex_ms, gemm_ms] = times;
    total_tenex += tenex_ms;
    total_gemm += gemm_ms;
    std::printf("%-26s %8.3f %10.2f %10.2f %9.1f %9.1f %7.2f\n", name, flops * 1e-9, tenex_ms, gemm_ms,
                flops / tenex_ms * 1e-6, flops / gemm_ms * 1e-6, gemm_ms / tenex_ms);
    std::fflush(stdout);
  };
  report("B = Bao * Co * Cv", flops_transform,
         best_of_both(
             transform, [&] { run_gemms(step1); }, o.repeat));
  report("V = B * B", flops_integrals,
         best_of_both(
             integrals, [&] { run_gemms(step2); }, o.repeat));
  std::printf("contraction stage: %.2f ms tenex, %.2f ms GEMM: ratio %.3f\n", total_tenex, total_gemm,
              total_gemm / total_tenex);
}

// The geometric mean and the distribution of the ratios: lowest, 10th percentile (the value
// 10% of the cases fall below, nearest rank), median.
void print_summary(std::vector<double> ratios) {
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  std::sort(ratios.begin(), ratios.end());
  const auto rank = [&](double fraction) {
    const auto index = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(ratios.size())));
    return ratios[std::min(ratios.size() - 1, index == 0 ? 0 : index - 1)];
  };
  std::printf("geometric mean ratio over %zu cases: %.3f (lowest %.2f)\n", ratios.size(),
              std::exp(log_sum / static_cast<double>(ratios.size())), ratios.front());
  std::printf("distribution: min %.3f  p10 %.3f  median %.3f  max %.3f\n", ratios.front(), rank(0.10), rank(0.50),
              ratios.back());
}

// The first `calls` calls of the case's statement, each timed, and `calls` GEMMs of the same
// m, n, k after one warm-up GEMM (milliseconds).
struct ColdRow {
  std::vector<double> tenex_ms;
  double gemm_ms = 0;  // all `calls` GEMMs together
  double check = 0;
};

template <class T>
ColdRow bench_cold(const Case& c, int calls, bool conj) {
  CaseOperands<T> x(c, conj);
  ColdRow row;
  for (int call = 0; call < calls; ++call) row.tenex_ms.push_back(milliseconds_of([&] { x.contract(); }));
  x.gemm();
  for (int call = 0; call < calls; ++call) row.gemm_ms += milliseconds_of([&] { x.gemm(); });
  row.check = check_result(c, x.a, x.b, x.result, conj);
  return row;
}

// The --cold table (see the file's comment).
int run_cold(const Options& options, const std::vector<Case>& cases) {
  const char* mode = std::getenv("TENEX_PLAN_SEARCH");
  std::printf("# the first %d tenex calls of each case (TENEX_PLAN_SEARCH=%s) vs %d %s calls of the same m, n, k\n",
              options.cold, mode != nullptr ? mode : "amortized (default)", options.cold, gemm_routine(options.type));
  std::printf(
      "# cold ratio = gemm_ms / tenex_ms (>= 0.8: the target); first/m = first call / median of calls 2..N (the\n"
      "# model's plan, cold: first touch of the result); worst/m = slowest of calls 2..N / their median\n");
  std::printf("%-8s %-24s %10s %10s %10s %7s %8s %8s %10s\n", "name", "einsum", "first_ms", "tenex_ms", "gemm_ms",
              "ratio", "first/m", "worst/m", "check");
  std::vector<double> ratios;
  double worst_of_all = 0, first_of_all = 0;
  for (const Case& c : cases) {
    if (!options.filter.empty() && c.name.find(options.filter) == std::string::npos) continue;
    const ColdRow row =
        with_type(options.type, [&](auto zero) { return bench_cold<decltype(zero)>(c, options.cold, options.conj); });
    double total = 0;
    for (double ms : row.tenex_ms) total += ms;
    std::vector<double> later(row.tenex_ms.begin() + 1, row.tenex_ms.end());
    std::sort(later.begin(), later.end());
    const double model_ms =
        later.size() % 2 == 1 ? later[later.size() / 2] : 0.5 * (later[later.size() / 2 - 1] + later[later.size() / 2]);
    const double first = row.tenex_ms.front() / model_ms;
    const double worst = later.back() / model_ms;
    first_of_all = std::max(first_of_all, first);
    worst_of_all = std::max(worst_of_all, worst);
    ratios.push_back(row.gemm_ms / total);
    std::printf("%-8s %-24s %10.2f %10.2f %10.2f %7.2f %8.2f %8.2f %10.1e\n", c.name.c_str(), c.einsum.c_str(),
                row.tenex_ms.front(), total, row.gemm_ms, ratios.back(), first, worst, row.check);
    std::fflush(stdout);
  }
  if (ratios.empty()) {
    std::printf("no case matches\n");
    return 1;
  }
  print_summary(ratios);
  std::printf("slowest of calls 2..N / model plan's call: %.2f\n", worst_of_all);
  std::printf("first call / model plan's later calls: %.2f\n", first_of_all);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Steady state after the first call's search: TENEX_PLAN_SEARCH=measure unless set (the
  // default, amortized, spreads the search over many calls; docs/performance.md).
  const std::optional<Options> options = parse_options(argc, argv);
  // --cold times what a program meets: the environment's mode, by default amortized.
  if (!options || options->cold == 0) ::setenv("TENEX_PLAN_SEARCH", "measure", 0);
  if (!options) {
    std::printf(
        "usage: bench_contractions [cases.tsv] [--repeat N] [--filter NAME] [TYPE] [--conj] [--first-call]\n"
        "                          [--permutations]\n"
        "       bench_contractions [cases.tsv] --cold N [--filter NAME] [TYPE] [--conj]\n"
        "       TYPE: --double (default), --float, --complex64, --complex128; --conj: conj(A) * B, complex\n"
        "       bench_contractions --mp2 [--nocc N] [--nvirt N] [--naux N] [--repeat N]\n");
    return 2;
  }
  try {
    if (options->mp2) {
      bench_mp2(*options);
      return 0;
    }
    if (options->permutations) {
      with_type(options->type, [&](auto zero) { bench_permutations<decltype(zero)>(options->repeat); });
      return 0;
    }
    const std::vector<Case> cases = read_cases(options->path);
    if (options->cold > 0) return run_cold(*options, cases);
    std::printf("# tenex contraction%s vs one %s of the same m, n, k (%s), best of %d runs;\n",
                options->conj ? " conj(A) * B" : "", gemm_routine(options->type), options->type.c_str(),
                options->repeat);
    std::printf("# ratio = gemm_ms / tenex_ms (>= 1: as fast as GEMM)\n");
    std::printf("%-8s %-24s %7s %10s %10s %7s %10s", "name", "einsum", "gflop", "tenex_ms", "gemm_ms", "ratio",
                "check");
    if (options->first_call) std::printf(" %10s %7s", "first_ms", "first/t");
    std::printf("\n");
    std::vector<double> ratios, firsts;
    for (const Case& c : cases) {
      if (!options->filter.empty() && c.name.find(options->filter) == std::string::npos) continue;
      const Row row = with_type(
          options->type, [&](auto zero) { return bench_case<decltype(zero)>(c, options->repeat, options->conj); });
      const GemmSize size = gemm_size(c);
      const double gflop =
          2.0 * static_cast<double>(size.m) * static_cast<double>(size.n) * static_cast<double>(size.k) * 1e-9;
      const double ratio = row.gemm_ms / row.tenex_ms;
      ratios.push_back(ratio);
      std::printf("%-8s %-24s %7.3f %10.2f %10.2f %7.2f %10.1e", c.name.c_str(), c.einsum.c_str(), gflop, row.tenex_ms,
                  row.gemm_ms, ratio, row.check);
      if (options->first_call) {
        firsts.push_back(row.first_ms / row.tenex_ms);
        std::printf(" %10.2f %7.2f", row.first_ms, firsts.back());
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    if (ratios.empty()) {
      std::printf("no case matches\n");
      return 1;
    }
    print_summary(ratios);
    if (!firsts.empty()) {
      double log_sum = 0;
      for (double f : firsts) log_sum += std::log(f);
      std::printf("first call / best call: geometric mean %.2f, max %.2f\n",
                  std::exp(log_sum / static_cast<double>(firsts.size())),
                  *std::max_element(firsts.begin(), firsts.end()));
    }
  } catch (const std::exception& error) {
    std::printf("error: %s\n", error.what());
    return 1;
  }
  return 0;
}
