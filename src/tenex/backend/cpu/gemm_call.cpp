#include "tenex/backend/cpu/gemm_call.hpp"

#include <cblas.h>
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <chrono>
#include <climits>
#include <complex>
#include <cstddef>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/single_threaded_blas.hpp"
#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu::contraction {
namespace {

void xgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void xgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void xgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, std::complex<float> alpha,
           const std::complex<float>* a, int lda, const std::complex<float>* b, int ldb, std::complex<float> beta,
           std::complex<float>* c, int ldc) {
  cblas_cgemm(CblasRowMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}
void xgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, std::complex<double> alpha,
           const std::complex<double>* a, int lda, const std::complex<double>* b, int ldb, std::complex<double> beta,
           std::complex<double>* c, int ldc) {
  cblas_zgemm(CblasRowMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}

// The transpose flag with the conjugation folded in (OpenBLAS's ConjNoTrans extension).
CBLAS_TRANSPOSE conjugated(CBLAS_TRANSPOSE t, bool conj) {
  if (!conj) return t;
  return t == CblasTrans ? CblasConjTrans : CblasConjNoTrans;
}

// The row-major cblas call for a Geometry. `swap` computes C^T = B^T A^T instead, for a C
// whose unit stride runs along m.
struct BlasCall {
  bool swap = false;
  CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
};

bool unit(std::size_t extent, std::ptrdiff_t stride) { return extent <= 1 || stride == 1; }

bool fits_int(std::size_t x) { return x <= static_cast<std::size_t>(INT_MAX); }

bool leading_ok(std::ptrdiff_t ld, std::size_t least) {
  return ld >= static_cast<std::ptrdiff_t>(std::max<std::size_t>(least, 1)) && ld <= INT_MAX;
}

// A matrix needs a unit stride along one dimension (a vector needs none), a leading
// dimension at least its row length, and sizes within int.
std::optional<BlasCall> blas_call(Geometry g) {
  if (!fits_int(g.m) || !fits_int(g.n) || !fits_int(g.k)) return std::nullopt;
  BlasCall call;
  call.swap = !unit(g.n, g.c_n);
  if (call.swap) {
    if (!unit(g.m, g.c_m)) return std::nullopt;
    std::swap(g.m, g.n);
    std::swap(g.c_m, g.c_n);
    std::swap(g.a_m, g.b_n);
    std::swap(g.a_k, g.b_k);
    std::swap(g.conj_a, g.conj_b);
  }
  const auto ldc = g.m <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.n, 1)) : g.c_m;
  if (!leading_ok(ldc, g.n)) return std::nullopt;
  std::ptrdiff_t lda = 0, ldb = 0;
  if (unit(g.k, g.a_k) && (g.m <= 1 || g.a_m >= static_cast<std::ptrdiff_t>(g.k))) {
    call.ta = CblasNoTrans;
    lda = g.m <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.k, 1)) : g.a_m;
    if (!leading_ok(lda, g.k)) return std::nullopt;
  } else if (unit(g.m, g.a_m)) {
    call.ta = CblasTrans;
    lda = g.k <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.m, 1)) : g.a_k;
    if (!leading_ok(lda, g.m)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (unit(g.n, g.b_n) && (g.k <= 1 || g.b_k >= static_cast<std::ptrdiff_t>(g.n))) {
    call.tb = CblasNoTrans;
    ldb = g.k <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.n, 1)) : g.b_k;
    if (!leading_ok(ldb, g.n)) return std::nullopt;
  } else if (unit(g.k, g.b_k)) {
    call.tb = CblasTrans;
    ldb = g.n <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.k, 1)) : g.b_n;
    if (!leading_ok(ldb, g.k)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  call.ta = conjugated(call.ta, g.conj_a);
  call.tb = conjugated(call.tb, g.conj_b);
  call.m = static_cast<int>(g.m);
  call.n = static_cast<int>(g.n);
  call.k = static_cast<int>(g.k);
  call.lda = static_cast<int>(lda);
  call.ldb = static_cast<int>(ldb);
  call.ldc = static_cast<int>(ldc);
  return call;
}

}  // namespace

double blas_pack_seconds(const Geometry& g, std::size_t element_size) {
  const auto call = blas_call(g);
  if (!call) return std::numeric_limits<double>::infinity();
  // Seconds per element packed beyond the plain forms (tuning.hpp).
  constexpr double kFirstPlain = 0.0, kFirstTransposed = tuning::kPackFirstTransposedSeconds, kSecondPlain = 0.0,
                   kSecondTransposed = tuning::kPackSecondTransposedSeconds;
  const double scale = static_cast<double>(element_size) / 8.0;
  const double first = static_cast<double>(call->m) * static_cast<double>(call->k);
  const double second = static_cast<double>(call->k) * static_cast<double>(call->n);
  const auto transposed = [](CBLAS_TRANSPOSE t) { return t == CblasTrans || t == CblasConjTrans; };
  return scale * (first * (transposed(call->ta) ? kFirstTransposed : kFirstPlain) +
                  second * (transposed(call->tb) ? kSecondTransposed : kSecondPlain));
}

namespace {

template <class T>
double time_core_peak(std::size_t n) {
  const int kSize = static_cast<int>(n);
  const std::size_t elements = n * n;
  std::vector<T> a(elements, T(0.5)), b(elements, T(0.25)), c(elements, T(0));
  // One core's rate: a pthreads OpenBLAS is held to one thread; an OpenMP OpenBLAS runs one
  // thread per call only inside an active parallel region, so the GEMM runs on the first of
  // two threads while the other waits (outside one, it would take every core, and the model,
  // which multiplies this rate by its workers, would count them twice).
  const SingleThreadedBlas one_thread;
  double best = std::numeric_limits<double>::infinity();
  [[maybe_unused]] const bool in_region = omp_get_max_threads() > 1 && !omp_in_parallel();
#pragma omp parallel num_threads(2) if (in_region)
  {
    if (omp_get_thread_num() == 0) {
      for (int run = 0; run < tuning::kProbeRuns; ++run) {
        const auto start = std::chrono::steady_clock::now();
        xgemm(CblasNoTrans, CblasNoTrans, kSize, kSize, kSize, T(1), a.data(), kSize, b.data(), kSize, T(0), c.data(),
              kSize);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
    }
  }
  return 2.0 * static_cast<double>(elements * n) / best;
}

}  // namespace

double probe_core_peak(std::size_t element_size, std::size_t n) {
  return element_size == 4 ? time_core_peak<float>(n) : time_core_peak<double>(n);
}

template <class T>
void gemm(const Geometry& g, T alpha, const T* a, const T* b, T beta, T* c) {
  if (const auto call = blas_call(g)) {
    const T* first = call->swap ? b : a;
    const T* second = call->swap ? a : b;
    xgemm(call->ta, call->tb, call->m, call->n, call->k, alpha, first, call->lda, second, call->ldb, beta, c,
          call->ldc);
    return;
  }
  for (std::size_t i = 0; i < g.m; ++i) {
    for (std::size_t j = 0; j < g.n; ++j) {
      T sum = T(0);
      for (std::size_t p = 0; p < g.k; ++p) {
        T x = a[static_cast<std::ptrdiff_t>(i) * g.a_m + static_cast<std::ptrdiff_t>(p) * g.a_k];
        T y = b[static_cast<std::ptrdiff_t>(p) * g.b_k + static_cast<std::ptrdiff_t>(j) * g.b_n];
        if constexpr (is_complex_v<T>) {
          if (g.conj_a) x = std::conj(x);
          if (g.conj_b) y = std::conj(y);
        }
        sum += x * y;
      }
      T& out = c[static_cast<std::ptrdiff_t>(i) * g.c_m + static_cast<std::ptrdiff_t>(j) * g.c_n];
      out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
    }
  }
}

#define TENEX_INSTANTIATE_GEMM(T) template void gemm<T>(const Geometry&, T, const T*, const T*, T, T*);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_GEMM)
#undef TENEX_INSTANTIATE_GEMM

}  // namespace tenex::detail::cpu::contraction
