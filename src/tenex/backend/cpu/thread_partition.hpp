// How the GEMMs of a loop nest are shared among the OpenMP threads: as tasks (an outer index
// each, cut along m or n when there are too few), by cutting the sums (k), or not at all.
#pragma once

#include <cstddef>

#include "tenex/backend/cpu/gemm_call.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::contraction {

// The least extent a GEMM dimension is cut down to when cut into tasks, and the work under
// which a contraction runs on the calling thread (tuning.hpp).
using tuning::kMinSlice;
using tuning::kParallelFlops;

inline std::size_t pieces(std::size_t n, std::size_t slice) { return (n + slice - 1) / slice; }

// What partition_threads chose, and the cuts it made.
struct ThreadPartition {
  enum class Kind : unsigned char { tasks, split_k, serial };
  Kind kind = Kind::serial;
  std::size_t threads = 1;
  // tasks: an outer index and a slice of m and of n each, pieces_m x pieces_n per outer index.
  std::size_t slice_m = 1, slice_n = 1, pieces_m = 1, pieces_n = 1, tasks = 1;
  // split_k: `units` (inner index, slice of k) pairs, k cut into k_pieces slices of slice_k.
  std::size_t k_pieces = 1, units = 1, slice_k = 1;
};

// How run_nest shares `outer` x `inner` GEMMs of geometry `g` (elements of element_size bytes)
// among threads; none when not `parallel`, inside a parallel region or for little work.
// Tasks when there are enough of them, where cutting each GEMM along m (or n) to make them
// costs little next to the flops; else, when c is small and k long, k is cut and each thread
// sums into its own copy of c; else the GEMMs run one after the other (serial), each threaded
// by the BLAS.
ThreadPartition partition_threads(const Geometry& g, std::size_t outer, std::size_t inner, std::size_t element_size,
                                  bool parallel);

}  // namespace tenex::detail::cpu::contraction
