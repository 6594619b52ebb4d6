#include "tenex/backend/cpu/gemm_nest.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <cstddef>

#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/backend/cpu/single_threaded_blas.hpp"
#include "tenex/backend/cpu/thread_partition.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu::contraction {
namespace {

// The GEMM calls of one task: parts [m0, m0 + part.m) x [n0, n0 + part.n) of the outer
// index x, accumulated over the inner indices [y0, y1) and over [k0, k0 + part.k) of k.
struct Part {
  Geometry part;
  std::size_t x = 0, m0 = 0, n0 = 0, k0 = 0, y0 = 0, y1 = 1;
};

template <class T>
void run_part(const Nest& nest, const Part& p, T alpha, const T* a, const T* b, T beta, T* c) {
  const Geometry& g = nest.gemm;
  std::ptrdiff_t oa = 0, ob = 0, oc = 0;
  offsets(nest.outer, p.x, oa, ob, oc);
  oa += static_cast<std::ptrdiff_t>(p.m0) * g.a_m + static_cast<std::ptrdiff_t>(p.k0) * g.a_k;
  ob += static_cast<std::ptrdiff_t>(p.n0) * g.b_n + static_cast<std::ptrdiff_t>(p.k0) * g.b_k;
  oc += static_cast<std::ptrdiff_t>(p.m0) * p.part.c_m + static_cast<std::ptrdiff_t>(p.n0) * p.part.c_n;
  for (std::size_t y = p.y0; y < p.y1; ++y) {
    std::ptrdiff_t ia = oa, ib = ob, ic = oc;
    offsets(nest.inner, y, ia, ib, ic);
    gemm(p.part, alpha, a + ia, b + ib, y == p.y0 ? beta : T(1), c + ic);
  }
}

}  // namespace

template <class T>
std::size_t run_nest(const Nest& nest, T alpha, const T* a, const T* b, T beta, T* c, bool parallel) {
  const Geometry& g = nest.gemm;
  const std::size_t outer = count(nest.outer), inner = count(nest.inner);
  const ThreadPartition cut = partition_threads(g, outer, inner, sizeof(T), parallel);

  if (cut.kind == ThreadPartition::Kind::tasks) {
    const std::size_t tasks = cut.tasks, pieces_m = cut.pieces_m, pieces_n = cut.pieces_n;
    const std::size_t slice_m = cut.slice_m, slice_n = cut.slice_n;
    SingleThreadedBlas single;
#pragma omp parallel for schedule(dynamic)
    for (std::size_t t = 0; t < tasks; ++t) {
      Part p;
      p.part = g;
      p.x = t / (pieces_n * pieces_m);
      p.m0 = (t / pieces_n) % pieces_m * slice_m;
      p.n0 = t % pieces_n * slice_n;
      p.part.m = std::min(slice_m, g.m - p.m0);
      p.part.n = std::min(slice_n, g.n - p.n0);
      p.y1 = inner;
      run_part(nest, p, alpha, a, b, beta, c);
    }
    return tasks * inner;
  }

  // Cut the sums: each thread adds its share of (inner index, slice of k) into its own
  // m x n buffer; the buffers are then summed into c.
  if (cut.kind == ThreadPartition::Kind::split_k) {
    const std::size_t threads = cut.threads, k_pieces = cut.k_pieces, units = cut.units;
    const std::size_t mn = g.m * g.n, slice_k = cut.slice_k;
    Scratch<T> partial(mn * threads);
    {
      SingleThreadedBlas single;
#pragma omp parallel num_threads(static_cast <int>(threads))
      {
        const auto me = static_cast<std::size_t>(omp_get_thread_num());
        const auto team = static_cast<std::size_t>(omp_get_num_threads());
        T* mine = partial.get() + me * mn;
        bool first = true;
        for (std::size_t u = units * me / team; u < units * (me + 1) / team; ++u) {
          Part p;
          p.part = g;
          p.part.c_m = static_cast<std::ptrdiff_t>(g.n);
          p.part.c_n = 1;
          p.y0 = u / k_pieces;
          p.y1 = p.y0 + 1;
          p.k0 = u % k_pieces * slice_k;
          p.part.k = std::min(slice_k, g.k - std::min(g.k, p.k0));
          if (p.part.k == 0) continue;
          run_part(nest, p, T(1), a, b, first ? T(0) : T(1), mine);
          first = false;
        }
        if (first) std::fill(mine, mine + mn, T(0));
#pragma omp barrier
#pragma omp for schedule(static)
        for (std::size_t i = 0; i < g.m; ++i) {
          for (std::size_t j = 0; j < g.n; ++j) {
            T sum = T(0);
            for (std::size_t t = 0; t < team; ++t) sum += partial.get()[t * mn + i * g.n + j];
            T& out = c[static_cast<std::ptrdiff_t>(i) * g.c_m + static_cast<std::ptrdiff_t>(j) * g.c_n];
            out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
          }
        }
      }
    }
    return units;
  }

  // One GEMM after the other, each threaded by the BLAS (or all on this thread).
  for (std::size_t x = 0; x < outer; ++x) {
    Part p;
    p.part = g;
    p.x = x;
    p.y1 = inner;
    run_part(nest, p, alpha, a, b, beta, c);
  }
  return outer * inner;
}

#define TENEX_INSTANTIATE_RUN_NEST(T) template std::size_t run_nest<T>(const Nest&, T, const T*, const T*, T, T*, bool);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_RUN_NEST)
#undef TENEX_INSTANTIATE_RUN_NEST

}  // namespace tenex::detail::cpu::contraction
