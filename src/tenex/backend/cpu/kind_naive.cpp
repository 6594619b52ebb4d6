// The plain loops, one kind of contraction plan (contraction_plan.hpp): they apply to every
// problem; the model prices them at kNaiveRate products per second per thread plus writing c
// once; run_naive runs them. Tiny problems, Hadamard products and scalars take them.
#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/gemm_nest.hpp"
#include "tenex/backend/cpu/plan_execution.hpp"
#include "tenex/backend/cpu/thread_partition.hpp"
#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu::contraction {

Plan naive_plan(const Problem& p) {
  double products = static_cast<double>(p.size[kC]);
  for (std::size_t d = 0; d < p.modes(); ++d) {
    if (p.role[d] == Role::k) products *= static_cast<double>(p.extent[d]);
  }
  const double seconds = products / (tuning::kNaiveRate * static_cast<double>(p.threads)) +
                         static_cast<double>(p.size[kC] * p.element_size) / tuning::kMemoryBandwidth;
  return Plan{NaiveLoops{}, seconds};
}

std::string describe_kernel(const Problem&, const NaiveLoops&) { return "plain loops"; }

template <class T>
std::size_t run_naive(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  // The loops on the stack for the ranks tensors have (a tiny product is mostly this
  // function's own cost), on the heap past them.
  constexpr std::size_t on_stack = 16;
  std::array<Loop, 2 * on_stack> stack_loops;
  std::vector<Loop> heap_loops;
  Loop* loops = stack_loops.data();
  if (p.modes() > on_stack) {
    heap_loops.resize(2 * p.modes());
    loops = heap_loops.data();
  }
  Loop* const row_loops = loops;
  Loop* const sum_loops = loops + std::max(p.modes(), on_stack);
  std::size_t row_count = 0, sum_count = 0;
  for (int d : p.order[kC]) {
    const auto u = static_cast<std::size_t>(d);
    row_loops[row_count++] = {p.extent[u], p.stride[kA][u], p.stride[kB][u], p.stride[kC][u]};
  }
  for (std::size_t u = 0; u < p.modes(); ++u) {
    if (p.role[u] == Role::k) sum_loops[sum_count++] = {p.extent[u], p.stride[kA][u], p.stride[kB][u], 0};
  }
  Loop lane{1, 0, 0, 0};
  if (row_count > 0) lane = row_loops[--row_count];
  const std::span<const Loop> rows(row_loops, row_count), sums(sum_loops, sum_count);
  const std::size_t units = count(rows), terms = count(sums);
  const bool par = units > 1 && static_cast<double>(p.size[kC]) * static_cast<double>(terms) >= kParallelFlops / 4 &&
                   omp_get_max_threads() > 1 && !omp_in_parallel();
  auto row = [&](std::size_t u) {
    std::ptrdiff_t oa = 0, ob = 0, oc = 0;
    offsets(rows, u, oa, ob, oc);
    for (std::size_t x = 0; x < lane.extent; ++x) {
      const auto i = static_cast<std::ptrdiff_t>(x);
      const T* pa = a + oa + i * lane.a;
      const T* pb = b + ob + i * lane.b;
      T sum = T(0);
      for (std::size_t y = 0; y < terms; ++y) {
        std::ptrdiff_t sa = 0, sb = 0, sc = 0;
        offsets(sums, y, sa, sb, sc);
        sum += pa[sa] * pb[sb];
      }
      T& out = c[oc + i * lane.c];
      out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
    }
  };
  // Serial without entering OpenMP at all: a parallel region that runs on one thread still
  // costs more than a small product.
  if (par) {
#pragma omp parallel for schedule(static)
    for (std::size_t u = 0; u < units; ++u) row(u);
  } else {
    for (std::size_t u = 0; u < units; ++u) row(u);
  }
  return 1;
}

#define TENEX_INSTANTIATE_NAIVE(T) template std::size_t run_naive<T>(const Problem&, T, const T*, const T*, T, T*);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_NAIVE)
#undef TENEX_INSTANTIATE_NAIVE

}  // namespace tenex::detail::cpu::contraction
