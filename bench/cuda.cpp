// Benchmarks of the CUDA backend (docs/cuda.md, docs/performance.md), on the GPU machine:
//
//   bench_cuda --tccg [cases.tsv] [--float] [--repeat N] [--filter NAME]
//       each TCCG case as a tenex statement on the GPU (inputs resident) against one cuBLAS
//       GEMM of the same m, n, k in this process; ratio = gemm / tenex; geometric mean.
//   bench_cuda --linalg [--n 4096,8192] [--float] [--repeat N]
//       cholesky, eigen_solve (syevd) and svd (gesvd) in tenex against direct cuSOLVER calls
//       (potrf, syevd, gesvd) on the same matrix; ratio = cusolver / tenex.
//   bench_cuda --fused [--n 67108864] [--float] [--repeat N]
//       a fused element-wise chain r = exp(a) * 0.5 - sqrt(|b|) + tanh(a) * b against a
//       device-to-device copy of the same bytes (3 arrays of n); ratio = bytes/s of the chain
//       over bytes/s of the copy.
//   bench_cuda --traffic
//       host<->device bytes of a first set (uploads), of a 10-statement set on resident data,
//       and of reading its result.
//
// Times: best of --repeat runs after one warm-up, the device synchronized after each
// (cudaDeviceSynchronize), so a tenex statement's time includes its kernels. A tenex result is
// left on the device while timed (as cuBLAS's and cuSOLVER's are): it is read once after. Exits with 2
// when no device exists.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tenex/tenex.hpp>

#include "tccg_cases.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

struct Options {
  std::string mode;
  std::string tsv = TENEX_TCCG_TSV;
  bool single = false;
  int repeat = 5;
  std::string filter;
  std::vector<int> sizes = {4096, 8192};
  long long n = 1LL << 26;
};

void sync() {
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "bench_cuda: cudaDeviceSynchronize failed\n");
    std::exit(1);
  }
}

/// Best time of `repeat` runs of `f` (after a warm-up), the device synchronized.
double best_of(int repeat, const std::function<void()>& f) {
  f();
  sync();
  double best = 1e300;
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    sync();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

template <class T>
T* device_random(std::size_t n, unsigned seed) {
  std::vector<T> host(n);
  unsigned state = seed;
  for (T& x : host) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<T>((state >> 8) * (1.0 / 16777216.0) - 0.5);
  }
  T* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(T)) != cudaSuccess ||
      cudaMemcpy(d, host.data(), n * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess) {
    std::fprintf(stderr, "bench_cuda: cannot allocate %zu bytes on the device\n", n * sizeof(T));
    std::exit(1);
  }
  return d;
}

// ---- TCCG ------------------------------------------------------------------------------------

template <class T>
int run_tccg(const Options& o) {
  const auto cases = tccg::read_cases(o.tsv);
  cublasHandle_t blas = nullptr;
  cublasCreate(&blas);
  std::printf("%-8s %-20s %10s %10s %10s %8s\n", "case", "einsum", "tenex ms", "gemm ms", "GFLOP/s", "ratio");
  double log_sum = 0;
  int count = 0;
  for (const tccg::Case& c : cases) {
    if (!o.filter.empty() && c.name.find(o.filter) == std::string::npos) continue;
    Tensor<T> a(Shape(tccg::extents_of(c, c.a))), b(Shape(tccg::extents_of(c, c.b)));
    tenex::fill_random(a, 1);
    tenex::fill_random(b, 2);
    Tensor<T> r;
    const std::string la = tccg::labels_of(c.a), lb = tccg::labels_of(c.b), lc = tccg::labels_of(c.c);
    // The statement's set runs at its ';' and leaves r on the device; reading r on the host
    // (wait(), data()) would time its copy back too, which the GEMM does not pay.
    const double tenex_s = best_of(o.repeat, [&] { r(lc) = a(la) * b(lb); });
    r.wait();  // a stored error is thrown here
    // m, n, k of the same contraction.
    double m = 1, n = 1, k = 1;
    for (char x : c.a) (c.b.find(x) == std::string::npos ? m : k) *= static_cast<double>(c.extent.at(x));
    for (char x : c.b) {
      if (c.a.find(x) == std::string::npos) n *= static_cast<double>(c.extent.at(x));
    }
    const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
    T* da = device_random<T>(static_cast<std::size_t>(m * k), 3);
    T* db = device_random<T>(static_cast<std::size_t>(k * n), 4);
    T* dc = device_random<T>(static_cast<std::size_t>(m * n), 5);
    const T one = 1, zero = 0;
    const double gemm_s = best_of(o.repeat, [&] {
      if constexpr (std::is_same_v<T, double>) {
        cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, ni, mi, ki, &one, db, ni, da, ki, &zero, dc, ni);
      } else {
        cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, ni, mi, ki, &one, db, ni, da, ki, &zero, dc, ni);
      }
    });
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    const double ratio = gemm_s / tenex_s;
    log_sum += std::log(ratio);
    ++count;
    std::printf("%-8s %-20s %10.3f %10.3f %10.1f %8.3f\n", c.name.c_str(), c.einsum.c_str(), tenex_s * 1e3,
                gemm_s * 1e3, 2 * m * n * k / tenex_s * 1e-9, ratio);
  }
  cublasDestroy(blas);
  if (count) std::printf("geometric mean ratio (gemm / tenex): %.3f over %d cases\n", std::exp(log_sum / count), count);
  return 0;
}

// ---- decompositions --------------------------------------------------------------------------

template <class T>
int run_linalg(const Options& o) {
  cusolverDnHandle_t solver = nullptr;
  cusolverDnCreate(&solver);
  std::printf("%-10s %6s %12s %12s %8s\n", "routine", "n", "tenex s", "cusolver s", "ratio");
  for (int n : o.sizes) {
    const std::size_t nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    // A symmetric positive definite matrix: x x^T / n + I, made on the GPU by tenex.
    Tensor<T> x(Shape{static_cast<std::size_t>(n), static_cast<std::size_t>(n)});
    tenex::fill_random(x, 7);
    Tensor<T> spd;
    spd("i,j") = (1.0 / n) * x("i,k") * x("j,k");
    std::vector<T> host = spd.to_vector();
    for (int i = 0; i < n; ++i) host[static_cast<std::size_t>(i) * n + i] += T(1);
    spd = Tensor<T>(spd.shape(), host);
    T* da = nullptr;
    T* dw = nullptr;
    cudaMalloc(&da, nn * sizeof(T));
    cudaMalloc(&dw, nn * sizeof(T));
    int* info = nullptr;
    cudaMalloc(&info, sizeof(int));
    T* values = nullptr;
    cudaMalloc(&values, static_cast<std::size_t>(n) * sizeof(T));
    cudaMemcpy(da, host.data(), nn * sizeof(T), cudaMemcpyHostToDevice);
    auto report = [&](const char* name, double tenex_s, double direct_s) {
      std::printf("%-10s %6d %12.4f %12.4f %8.3f\n", name, n, tenex_s, direct_s, direct_s / tenex_s);
    };
    const int r = std::max(1, o.repeat / 2);
    {
      Tensor<T> l;
      const double t = best_of(r, [&] { l("i,j") = tenex::cholesky(spd("i,j")); });
      l.wait();
      int lwork = 0;
      T* work = nullptr;
      if constexpr (std::is_same_v<T, double>) {
        cusolverDnDpotrf_bufferSize(solver, CUBLAS_FILL_MODE_UPPER, n, dw, n, &lwork);
      } else {
        cusolverDnSpotrf_bufferSize(solver, CUBLAS_FILL_MODE_UPPER, n, dw, n, &lwork);
      }
      cudaMalloc(&work, static_cast<std::size_t>(lwork) * sizeof(T));
      const double d = best_of(r, [&] {
        cudaMemcpyAsync(dw, da, nn * sizeof(T), cudaMemcpyDeviceToDevice);
        if constexpr (std::is_same_v<T, double>) {
          cusolverDnDpotrf(solver, CUBLAS_FILL_MODE_UPPER, n, dw, n, work, lwork, info);
        } else {
          cusolverDnSpotrf(solver, CUBLAS_FILL_MODE_UPPER, n, dw, n, work, lwork, info);
        }
      });
      cudaFree(work);
      report("potrf", t, d);
    }
    {
      Tensor<T> v, w;
      const double t = best_of(r, [&] { std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(spd("i,j")); });
      v.wait();
      int lwork = 0;
      T* work = nullptr;
      if constexpr (std::is_same_v<T, double>) {
        cusolverDnDsyevd_bufferSize(solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, dw, n, values, &lwork);
      } else {
        cusolverDnSsyevd_bufferSize(solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, dw, n, values, &lwork);
      }
      cudaMalloc(&work, static_cast<std::size_t>(lwork) * sizeof(T));
      const double d = best_of(r, [&] {
        cudaMemcpyAsync(dw, da, nn * sizeof(T), cudaMemcpyDeviceToDevice);
        if constexpr (std::is_same_v<T, double>) {
          cusolverDnDsyevd(solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, dw, n, values, work, lwork,
                           info);
        } else {
          cusolverDnSsyevd(solver, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, dw, n, values, work, lwork,
                           info);
        }
      });
      cudaFree(work);
      report("syevd", t, d);
    }
    {
      Tensor<T> u, s, vt;
      const double t = best_of(r, [&] {
        auto [uf, sf, vtf] = tenex::svd(spd("i,j"));
        u("i,k") = uf;
        s("k") = sf;
        vt("k,j") = vtf;
      });
      u.wait();
      int lwork = 0;
      T *work = nullptr, *du = nullptr, *dvt = nullptr;
      cudaMalloc(&du, nn * sizeof(T));
      cudaMalloc(&dvt, nn * sizeof(T));
      if constexpr (std::is_same_v<T, double>) {
        cusolverDnDgesvd_bufferSize(solver, n, n, &lwork);
      } else {
        cusolverDnSgesvd_bufferSize(solver, n, n, &lwork);
      }
      cudaMalloc(&work, static_cast<std::size_t>(lwork) * sizeof(T));
      const double d = best_of(r, [&] {
        cudaMemcpyAsync(dw, da, nn * sizeof(T), cudaMemcpyDeviceToDevice);
        if constexpr (std::is_same_v<T, double>) {
          cusolverDnDgesvd(solver, 'S', 'S', n, n, dw, n, values, du, n, dvt, n, work, lwork, nullptr, info);
        } else {
          cusolverDnSgesvd(solver, 'S', 'S', n, n, dw, n, values, du, n, dvt, n, work, lwork, nullptr, info);
        }
      });
      cudaFree(work);
      cudaFree(du);
      cudaFree(dvt);
      report("gesvd", t, d);
    }
    cudaFree(da);
    cudaFree(dw);
    cudaFree(info);
    cudaFree(values);
  }
  cusolverDnDestroy(solver);
  return 0;
}

// ---- fused chain against a copy -------------------------------------------------------------

template <class T>
int run_fused(const Options& o) {
  const std::size_t n = static_cast<std::size_t>(o.n);
  Tensor<T> a(Shape{n}), b(Shape{n}), r;
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  const double chain = best_of(o.repeat, [&] {
    // Element by element: tanh(a("i") * b("i")) would be tanh of the dot product (a function sees
    // its operand's product contracted, docs/einstein.md).
    r("i") = tenex::exp(a("i")) * 0.5 - tenex::sqrt(tenex::abs(b("i"))) + tenex::tanh(a("i")) * b("i");
  });
  r.wait();
  const std::string plan = tenex::explain();
  const std::size_t bytes = 3 * n * sizeof(T);  // two reads and one write
  T* from = device_random<T>(3 * n / 2, 1);
  T* to = device_random<T>(3 * n / 2, 2);
  const double copy = best_of(o.repeat, [&] {
    cudaMemcpyAsync(to, from, 3 * n / 2 * sizeof(T), cudaMemcpyDeviceToDevice);  // reads and writes `bytes`
  });
  cudaFree(from);
  cudaFree(to);
  std::printf("%s", plan.c_str());
  std::printf(
      "fused chain: %zu elements, %.3f ms, %.1f GB/s; device-to-device copy of the same bytes: %.3f ms, "
      "%.1f GB/s; ratio %.3f\n",
      n, chain * 1e3, bytes / chain * 1e-9, copy * 1e3, bytes / copy * 1e-9, copy / chain);
  return 0;
}

// ---- host <-> device traffic -----------------------------------------------------------------

int run_traffic() {
  const std::size_t n = 512;
  Tensor<double> a(Shape{n, n}), b(Shape{n, n});
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  Tensor<double> c;
  c("i,j") = a("i,k") * b("k,j");
  c.wait();
  tenex::RunStats s = tenex::last_run_stats();
  std::printf("first set (2 inputs of %zu bytes): to device %zu bytes, back %zu bytes\n", n * n * sizeof(double),
              s.host_to_device_bytes, s.device_to_host_bytes);
  Tensor<double> r[10];
  for (int k = 0; k < 10; ++k) r[k]("i,j") = (k + 1.0) * a("i,k") * c("k,j") + b("i,j");
  r[9].wait();
  s = tenex::last_run_stats();
  std::printf(
      "10-statement set on resident data: to device %zu bytes, back %zu bytes, device peak %zu bytes, "
      "%zu kernels\n",
      s.host_to_device_bytes, s.device_to_host_bytes, s.device_peak_bytes, s.kernels);
  const double x = r[9].at(1, 2);  // reading: the result comes back once
  std::printf("read r[9](1,2) = %.6f: copies the %zu bytes of r[9] once\n", x, n * n * sizeof(double));
  return s.host_to_device_bytes == 0 && s.device_to_host_bytes == 0 ? 0 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_cuda --tccg [cases.tsv] | --linalg [--n 4096,8192] | --fused [--n N] | "
               "--traffic  [--float] [--repeat N] [--filter NAME]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--tccg" || arg == "--linalg" || arg == "--fused" || arg == "--traffic") {
      o.mode = arg.substr(2);
      if (o.mode == "tccg" && i + 1 < argc && argv[i + 1][0] != '-') o.tsv = argv[++i];
    } else if (arg == "--float") {
      o.single = true;
    } else if (arg == "--repeat") {
      o.repeat = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--filter") {
      o.filter = value();
    } else if (arg == "--n") {
      const std::string v = value();
      o.sizes.clear();
      for (const std::string& part : tccg::split(v, ',')) o.sizes.push_back(std::atoi(part.c_str()));
      o.n = std::atoll(v.c_str());
    } else {
      return usage();
    }
  }
  if (o.mode.empty()) return usage();
  if (!tenex::cuda_available()) {
    std::fprintf(stderr, "bench_cuda: no CUDA device (or tenex built without TENEX_HAS_CUDA): nothing to measure\n");
    return 2;
  }
  tenex::set_default_backend(tenex::BackendKind::cuda);
  try {
    if (o.mode == "tccg") return o.single ? run_tccg<float>(o) : run_tccg<double>(o);
    if (o.mode == "linalg") return o.single ? run_linalg<float>(o) : run_linalg<double>(o);
    if (o.mode == "fused") return o.single ? run_fused<float>(o) : run_fused<double>(o);
    return run_traffic();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda: %s\n", e.what());
    return 1;
  }
}
