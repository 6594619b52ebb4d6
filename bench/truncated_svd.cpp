// Benchmark: tenex's truncated SVD against LAPACK's full SVD followed by the cut.
//
//   bench_truncated_svd [--size 2000] [--ranks 64] [--threads 1,2] [--repeat 2] [--types double,complex]
//
// For each element type (double, complex double: complex<double> rows, zgesdd and zgesvdx on
// the LAPACK side), thread count and rank r this times, side by
// side on the same n x n random matrix:
//   tenex    auto [u, s, vt] = svd(a("i,j"), Truncation{.max_rank = r}); U, S, Vt assigned, waited for
//   gesdd    what a user writes by hand: the copy LAPACK destroys, LAPACKE ?gesdd (thin U, Vt,
//            row-major), then the first r columns of U and rows of Vt copied out
//   gesvdx   LAPACKE ?gesvdx with range 'I' (only the r wanted triplets), the copy included: where
//            it beats gesdd is the crossing tenex's choice rests on (tuning::kSelectiveSvdShare)
// Runs alternate between the sides so that drift in machine load hits all; each reports its
// best of --repeat runs after one warm-up. ratio = gesdd / tenex: above 1 tenex is faster (the
// target is >= 1). max_rel_diff compares tenex's singular values with gesdd's first r.
// Threads are set with openblas_set_num_threads (both sides run in OpenBLAS's threads).
#include <lapacke.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

extern "C" void openblas_set_num_threads(int);

namespace {

using tenex::Tensor;

struct Options {
  std::size_t size = 2000;
  std::vector<std::size_t> ranks = {64};
  std::vector<std::size_t> threads = {1, 2};
  int repeat = 2;
  bool real = true, complex = true;  // --types
};

std::optional<std::vector<std::size_t>> parse_list(std::string_view text) {
  std::vector<std::size_t> values;
  while (!text.empty()) {
    const std::size_t comma = std::min(text.find(','), text.size());
    std::size_t value = 0;
    const std::string_view item = text.substr(0, comma);
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || end != item.data() + item.size() || value == 0) return std::nullopt;
    values.push_back(value);
    text.remove_prefix(std::min(comma + 1, text.size()));
  }
  if (values.empty()) return std::nullopt;
  return values;
}

std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) return std::nullopt;
    if (arg == "--types") {
      const std::string_view types = argv[i + 1];
      options.real = types == "double" || types == "double,complex" || types == "complex,double";
      options.complex = types == "complex" || types == "double,complex" || types == "complex,double";
      if (!options.real && !options.complex) return std::nullopt;
      continue;
    }
    const auto list = parse_list(argv[i + 1]);
    if (!list) return std::nullopt;
    if (arg == "--size" && list->size() == 1) {
      options.size = list->front();
    } else if (arg == "--ranks") {
      options.ranks = *list;
    } else if (arg == "--threads") {
      options.threads = *list;
    } else if (arg == "--repeat" && list->size() == 1) {
      options.repeat = static_cast<int>(list->front());
    } else {
      return std::nullopt;
    }
  }
  return options;
}

// The object a factor expression holds values of: what its target is.
template <class O>
O object_of(const tenex::Expression<O>&);
template <class E>
using ObjectOf = decltype(object_of(std::declval<const E&>()));

double seconds(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- LAPACKE by element type (row-major).

lapack_complex_double* c(std::complex<double>* p) { return reinterpret_cast<lapack_complex_double*>(p); }

int gesdd(int m, int n, double* a, double* s, double* u, double* vt) {
  return LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, n, a, n, s, u, std::min(m, n), vt, n);
}
int gesdd(int m, int n, std::complex<double>* a, double* s, std::complex<double>* u, std::complex<double>* vt) {
  return LAPACKE_zgesdd(LAPACK_ROW_MAJOR, 'S', m, n, c(a), n, s, c(u), std::min(m, n), c(vt), n);
}
int gesvdx(int m, int n, double* a, int r, double* s, double* u, double* vt, int* superb) {
  int found = 0;
  return LAPACKE_dgesvdx(LAPACK_ROW_MAJOR, 'V', 'V', 'I', m, n, a, n, 0, 0, 1, r, &found, s, u, r, vt, n, superb);
}
int gesvdx(int m, int n, std::complex<double>* a, int r, double* s, std::complex<double>* u, std::complex<double>* vt,
           int* superb) {
  int found = 0;
  return LAPACKE_zgesvdx(LAPACK_ROW_MAJOR, 'V', 'V', 'I', m, n, c(a), n, 0, 0, 1, r, &found, s, c(u), r, c(vt), n,
                         superb);
}

void check(const char* routine, int info) {
  if (info != 0) throw std::runtime_error(std::string(routine) + " failed with info = " + std::to_string(info));
}

template <class T>
void run(const Options& options, const char* type) {
  const std::size_t n = options.size;
  const int ni = static_cast<int>(n);
  Tensor<T> a({n, n});
  tenex::fill_random(a, 42);
  const T* input = a.data();
  for (std::size_t threads : options.threads) {
    openblas_set_num_threads(static_cast<int>(threads));
    for (std::size_t r : options.ranks) {
      const int ri = static_cast<int>(r);
      std::vector<double> tenex_values, gesdd_values;
      auto with_tenex = [&] {
        Tensor<T> x = a, u, vt;
        auto [uf, sf, vtf] = tenex::svd(x("i,j"), tenex::Truncation{.max_rank = r});
        ObjectOf<decltype(sf)> s;  // the singular values' tensor
        u("i,k") = uf;
        s("k") = sf;
        vt("k,j") = vtf;
        u.wait();
        s.wait();  // complex: the real values' own set
        tenex_values.clear();
        for (std::size_t i = 0; i < s.size(); ++i) tenex_values.push_back(std::real(s.at(i)));
      };
      auto with_gesdd = [&] {
        std::vector<T> work(input, input + n * n), u(n * n), vt(n * n), u_cut(n * r), vt_cut(r * n);
        std::vector<double> s(n);
        check("gesdd", gesdd(ni, ni, work.data(), s.data(), u.data(), vt.data()));
        for (std::size_t i = 0; i < n; ++i) std::copy(&u[i * n], &u[i * n] + r, &u_cut[i * r]);
        std::copy(vt.begin(), vt.begin() + static_cast<std::ptrdiff_t>(r * n), vt_cut.begin());
        gesdd_values.assign(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(r));
      };
      auto with_gesvdx = [&] {
        std::vector<T> work(input, input + n * n), u(n * r), vt(r * n);
        std::vector<double> s(n);
        std::vector<int> superb(12 * n);
        check("gesvdx", gesvdx(ni, ni, work.data(), ri, s.data(), u.data(), vt.data(), superb.data()));
      };
      double best_tenex = std::numeric_limits<double>::infinity(), best_gesdd = best_tenex, best_gesvdx = best_tenex;
      for (int k = 0; k <= options.repeat; ++k) {  // run 0: the warm-up
        const double t = seconds(with_tenex), g = seconds(with_gesdd), x = seconds(with_gesvdx);
        if (k == 0) continue;
        best_tenex = std::min(best_tenex, t);
        best_gesdd = std::min(best_gesdd, g);
        best_gesvdx = std::min(best_gesvdx, x);
      }
      double diff = 0;
      for (std::size_t i = 0; i < std::min(tenex_values.size(), gesdd_values.size()); ++i) {
        diff = std::max(diff, std::abs(tenex_values[i] - gesdd_values[i]) / gesdd_values[0]);
      }
      std::printf("%-15s %5zu %5zu %7zu %10.3f %10.3f %10.3f %7.2f %12.2e\n", type, n, r, threads, best_tenex,
                  best_gesdd, best_gesvdx, best_gesdd / best_tenex, diff);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto options = parse_options(argc, argv);
  if (!options) {
    std::fprintf(stderr,
                 "usage: bench_truncated_svd [--size 2000] [--ranks 64,...] [--threads 1,2] [--repeat 2] "
                 "[--types double,complex]\n");
    return 2;
  }
  std::printf("%-15s %5s %5s %7s %10s %10s %10s %7s %12s\n", "type", "n", "rank", "threads", "tenex_s", "gesdd_s",
              "gesvdx_s", "ratio", "max_rel_diff");
  try {
    if (options->real) run<double>(*options, "double");
    if (options->complex) run<std::complex<double>>(*options, "complex<double>");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_truncated_svd: %s\n", e.what());
    return 1;
  }
  return 0;
}
