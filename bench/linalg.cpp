// Benchmark: tenex decompositions against direct LAPACKE calls on the same input.
//
//   bench_linalg [--sizes 500,1000,2000] [--repeat 3]
//
// For each size n and each decomposition (cholesky, eigen, generalized eigen, qr, svd;
// double precision, n x n) this times the tenex statement, waited for, and the LAPACKE
// call a user would write by hand: the copy of the input that LAPACK destroys, the
// row-major call (and for QR, extracting R and forming Q). Runs alternate between the
// two so that drift in machine load hits both; each side reports its best of --repeat
// runs after one warm-up. ratio = lapacke / tenex: 1 means tenex adds nothing, the
// target is >= 0.95. max_rel_diff compares the parts of the results that are unique
// (L, eigenvalues, |R|, singular values) as a guard against timing the wrong thing.
#include <lapacke.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Tensor;

struct Options {
  std::vector<std::size_t> sizes = {500, 1000, 2000};
  int repeat = 3;
};

std::optional<std::vector<std::size_t>> parse_sizes(std::string_view text) {
  std::vector<std::size_t> sizes;
  while (!text.empty()) {
    const std::size_t comma = std::min(text.find(','), text.size());
    std::size_t value = 0;
    const std::string_view item = text.substr(0, comma);
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || end != item.data() + item.size() || value == 0) return std::nullopt;
    sizes.push_back(value);
    text.remove_prefix(std::min(comma + 1, text.size()));
  }
  if (sizes.empty()) return std::nullopt;
  return sizes;
}

std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) return std::nullopt;
    const std::string_view value = argv[++i];
    if (arg == "--sizes") {
      auto sizes = parse_sizes(value);
      if (!sizes) return std::nullopt;
      options.sizes = std::move(*sizes);
    } else if (arg == "--repeat") {
      int repeat = 0;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), repeat);
      if (error != std::errc() || end != value.data() + value.size() || repeat < 1) return std::nullopt;
      options.repeat = repeat;
    } else {
      return std::nullopt;
    }
  }
  return options;
}

// Throws so that main reports a failed LAPACKE call as it would a tenex error.
void require_success(lapack_int info, const char* routine) {
  if (info != 0) throw std::runtime_error(std::string(routine) + " failed with info = " + std::to_string(info));
}

// M M^T / n + I: symmetric positive definite and well conditioned.
Tensor<double> random_spd(std::size_t n, std::uint64_t seed) {
  Tensor<double> m({n, n}), spd;
  tenex::fill_random(m, seed);
  spd("i,j") = m("i,k") * m("j,k");
  double* p = spd.data();
  for (std::size_t i = 0; i < n * n; ++i) p[i] /= static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) p[i * n + i] += 1.0;
  return spd;
}

// max |x - y| / max |y|, over x and y of the same length; `absolute` compares magnitudes
// (for factors whose signs are a convention).
double max_relative_difference(const double* x, const double* y, std::size_t count, bool absolute = false) {
  double difference = 0, scale = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double a = absolute ? std::abs(x[i]) : x[i];
    const double b = absolute ? std::abs(y[i]) : y[i];
    difference = std::max(difference, std::abs(a - b));
    scale = std::max(scale, std::abs(b));
  }
  return scale > 0 ? difference / scale : difference;
}

double milliseconds_of(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

struct Timing {
  double tenex_ms = std::numeric_limits<double>::infinity();
  double lapacke_ms = std::numeric_limits<double>::infinity();
};

Timing time_pair(const std::function<void()>& with_tenex, const std::function<void()>& with_lapacke, int repeat) {
  with_tenex();  // warm-up: first-touch page faults, OpenBLAS thread start-up
  with_lapacke();
  Timing timing;
  for (int r = 0; r < repeat; ++r) {
    timing.tenex_ms = std::min(timing.tenex_ms, milliseconds_of(with_tenex));
    timing.lapacke_ms = std::min(timing.lapacke_ms, milliseconds_of(with_lapacke));
  }
  return timing;
}

void print_row(std::size_t n, const char* op, const Timing& timing, double difference) {
  std::printf("%6zu  %-12s %12.2f %12.2f %8.3f %14.2e\n", n, op, timing.tenex_ms, timing.lapacke_ms,
              timing.lapacke_ms / timing.tenex_ms, difference);
}

void bench_size(std::size_t n, int repeat) {
  const auto ln = static_cast<lapack_int>(n);
  Tensor<double> a = random_spd(n, 1), b = random_spd(n, 2), general({n, n});
  tenex::fill_random(general, 3);
  // The reference side reads its own copies, so it does not depend on how tenex shares storage.
  const std::vector<double> a_host = a.to_vector(), b_host = b.to_vector(), general_host = general.to_vector();
  const double* a_data = a_host.data();
  const double* b_data = b_host.data();
  const double* general_data = general_host.data();

  {  // cholesky: L lower, upper triangle zero in tenex (LAPACK leaves a's there; not compared)
    Tensor<double> l;
    std::vector<double> l_ref;
    const Timing t = time_pair(
        [&] {
          l("i,j") = tenex::cholesky(a("i,j"));
          l.wait();
        },
        [&] {
          std::vector<double> work(a_data, a_data + n * n);
          require_success(LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', ln, work.data(), ln), "dpotrf");
          l_ref = std::move(work);
        },
        repeat);
    double difference = 0;
    const double* l_data = std::as_const(l).data();
    for (std::size_t i = 0; i < n; ++i) {
      difference = std::max(difference, max_relative_difference(l_data + i * n, l_ref.data() + i * n, i + 1));
    }
    print_row(n, "cholesky", t, difference);
  }

  {  // symmetric eigen
    Tensor<double> v, w;
    std::vector<double> w_ref;
    const Timing t = time_pair(
        [&] {
          std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j"));
          v.wait();
          w.wait();
        },
        [&] {
          std::vector<double> vectors(a_data, a_data + n * n), values(n);
          require_success(LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', ln, vectors.data(), ln, values.data()), "dsyevd");
          w_ref = std::move(values);
        },
        repeat);
    print_row(n, "eigen", t, max_relative_difference(std::as_const(w).data(), w_ref.data(), n));
  }

  {  // generalized eigen, a v = w b v
    Tensor<double> v, w;
    std::vector<double> w_ref;
    const Timing t = time_pair(
        [&] {
          std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j"), b("i,j"));
          v.wait();
          w.wait();
        },
        [&] {
          std::vector<double> vectors(a_data, a_data + n * n), b_work(b_data, b_data + n * n), values(n);
          require_success(
              LAPACKE_dsygvd(LAPACK_ROW_MAJOR, 1, 'V', 'L', ln, vectors.data(), ln, b_work.data(), ln, values.data()),
              "dsygvd");
          w_ref = std::move(values);
        },
        repeat);
    print_row(n, "generalized", t, max_relative_difference(std::as_const(w).data(), w_ref.data(), n));
  }

  {  // reduced QR: both sides produce Q and R
    Tensor<double> q, r;
    std::vector<double> r_ref;
    const Timing t = time_pair(
        [&] {
          tenex::tie(q("i,k"), r("k,j")) = tenex::qr(general("i,j"));
          q.wait();
          r.wait();
        },
        [&] {
          std::vector<double> q_work(general_data, general_data + n * n), r_out(n * n, 0.0), tau(n);
          require_success(LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, ln, ln, q_work.data(), ln, tau.data()), "dgeqrf");
          for (std::size_t i = 0; i < n; ++i) {
            std::copy(q_work.begin() + static_cast<std::ptrdiff_t>(i * n + i),
                      q_work.begin() + static_cast<std::ptrdiff_t>((i + 1) * n),
                      r_out.begin() + static_cast<std::ptrdiff_t>(i * n + i));
          }
          require_success(LAPACKE_dorgqr(LAPACK_ROW_MAJOR, ln, ln, ln, q_work.data(), ln, tau.data()), "dorgqr");
          r_ref = std::move(r_out);
        },
        repeat);
    // Row signs of R are a convention (tenex makes its diagonal non-negative): compare magnitudes.
    print_row(n, "qr", t, max_relative_difference(std::as_const(r).data(), r_ref.data(), n * n, true));
  }

  {  // thin SVD
    Tensor<double> u_out, s_out, vt_out;
    std::vector<double> s_ref;
    const Timing t = time_pair(
        [&] {
          {  // the three handles are one linked set, evaluated when the last of them dies
            auto [u, s, vt] = tenex::svd(general("i,j"));
            u_out("i,k") = u;
            s_out("k") = s;
            vt_out("k,j") = vt;
          }
          u_out.wait();
          s_out.wait();
          vt_out.wait();
        },
        [&] {
          std::vector<double> work(general_data, general_data + n * n), s(n), u(n * n), vt(n * n);
          require_success(
              LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', ln, ln, work.data(), ln, s.data(), u.data(), ln, vt.data(), ln),
              "dgesdd");
          s_ref = std::move(s);
        },
        repeat);
    print_row(n, "svd", t, max_relative_difference(std::as_const(s_out).data(), s_ref.data(), n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Options> options = parse_options(argc, argv);
  if (!options) {
    std::printf("usage: bench_linalg [--sizes N[,N...]] [--repeat R]   (defaults: --sizes 500,1000,2000 --repeat 3)\n");
    return 2;
  }
  std::printf("# tenex vs LAPACKE (row-major), double, best of %d runs; ratio = lapacke / tenex, target >= 0.95\n",
              options->repeat);
  std::printf("%6s  %-12s %12s %12s %8s %14s\n", "n", "op", "tenex_ms", "lapacke_ms", "ratio", "max_rel_diff");
  try {
    for (const std::size_t n : options->sizes) bench_size(n, options->repeat);
  } catch (const std::exception& error) {
    std::printf("error: %s\n", error.what());
    return 1;
  }
  return 0;
}
