#include "tenex/backend/cpu/thread_partition.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <cstddef>

namespace tenex::detail::cpu::contraction {
namespace {

// A matrix this small stays in a core's L2 cache between uses.
constexpr double kCacheResident = 512.0 * 1024;

}  // namespace

ThreadPartition partition_threads(const Geometry& g, std::size_t outer, std::size_t inner, std::size_t element_size,
                                  bool parallel) {
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                       static_cast<double>(outer) * static_cast<double>(inner);
  const std::size_t threads =
      parallel && flops >= kParallelFlops && !omp_in_parallel() ? static_cast<std::size_t>(omp_get_max_threads()) : 1;
  const std::size_t want = 2 * threads;
  std::size_t slice_m = g.m, slice_n = g.n;
  if (threads > 1 && outer < want) {
    // Bytes read again from memory because of the cuts may cost a few percent of the GEMM
    // time; a factor that fits in a core's L2 is read again for free.
    const double budget = flops / 64.0;
    auto from_memory = [](double bytes) { return bytes <= kCacheResident ? 0.0 : bytes; };
    const double panel_a = from_memory(static_cast<double>(g.m * g.k * element_size));
    const double panel_b = from_memory(static_cast<double>(g.k * g.n * element_size));
    auto extra = [&](std::size_t sm, std::size_t sn) {
      return static_cast<double>(outer) * static_cast<double>(inner) *
             ((static_cast<double>(pieces(g.m, sm)) - 1.0) * panel_b +
              (static_cast<double>(pieces(g.n, sn)) - 1.0) * panel_a);
    };
    while (outer * pieces(g.m, slice_m) * pieces(g.n, slice_n) < want) {
      const std::size_t half_m = (slice_m + 1) / 2, half_n = (slice_n + 1) / 2;
      const bool can_m = slice_m >= 2 * kMinSlice && extra(half_m, slice_n) <= budget;
      const bool can_n = slice_n >= 2 * kMinSlice && extra(slice_m, half_n) <= budget;
      if (can_m && (!can_n || slice_m >= slice_n)) {
        slice_m = half_m;
      } else if (can_n) {
        slice_n = half_n;
      } else {
        break;
      }
    }
  }
  ThreadPartition cut;
  cut.threads = threads;
  cut.slice_m = slice_m;
  cut.slice_n = slice_n;
  cut.pieces_m = pieces(g.m, slice_m);
  cut.pieces_n = pieces(g.n, slice_n);
  cut.tasks = outer * cut.pieces_m * cut.pieces_n;
  if (threads > 1 && cut.tasks >= threads) {
    cut.kind = ThreadPartition::Kind::tasks;
    return cut;
  }

  // Else cut the sums, when c is small and k long.
  cut.k_pieces = inner >= threads ? 1 : pieces(threads, inner);
  cut.units = inner * cut.k_pieces;
  if (threads > 1 && outer == 1 && cut.units >= threads && g.k >= cut.k_pieces * kMinSlice &&
      g.m * g.n <= (std::size_t{1} << 20)) {
    cut.kind = ThreadPartition::Kind::split_k;
    cut.slice_k = pieces(g.k, cut.k_pieces);
  }
  return cut;
}

}  // namespace tenex::detail::cpu::contraction
