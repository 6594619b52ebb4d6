// Every constant of the contraction cost model, the plan search and the machine probe, and the
// kernel constants that depend on the caches, in one place, each with one meaning. The model's
// constants only rank plans against each other, so they need to be right within a factor, not
// exact; unless said otherwise they were measured on a Zen 4 core with OpenBLAS 0.3.21.
//
// Where the machine answers, the rates come from the probe (machine.hpp: GEMM and GETT rates of
// one core) and the cache-dependent sizes from its caches (the functions at the end); the
// constants below are then only fallbacks (TENEX_PROBE=0, or before a large contraction).
//
// Pure kernel shape parameters stay in their kernel files, next to the code they shape: the
// register tiles and block extents of the GETT kernel (kPanelRows, kBlockK, kBlockStrips, ...,
// gett_blocking.hpp), the narrow kernel's kBlockValues, the tile side and prefetch distance of
// the permutations (permute.cpp) and the strip and tile rows of the fused kernels (fused.cpp).
#pragma once

#include <algorithm>
#include <cstddef>

#include "tenex/backend/cpu/machine.hpp"

namespace tenex::detail::cpu::tuning {

// ---------------------------------------------------------------------------------------
// Truncated SVD (linalg_truncated.cpp): gesvdx computes only the wanted triplets where at most
// this share of min(m, n) is asked for (max_rank); above it the full gesdd and the cut is
// faster. Measured with bench_truncated_svd on square matrices (n = 600, one thread): gesvdx wins
// at a quarter of n in double and complex double, loses in double at a half (docs/performance.md).
constexpr double kSelectiveSvdShare = 0.25;

// ---------------------------------------------------------------------------------------
// Rates (the fallbacks of the probe).

// GEMM flops per second of one core on large double matrices (twice that for float), where
// nothing was probed. Probed rates are kept within a factor kRateClamp of it.
constexpr double kCorePeakDouble = 45e9;
// Probed rates further than this factor from the constants are clamped (a probe disturbed by
// another process must not make the model absurd).
constexpr double kRateClamp = 4.0;
// The share of the GEMM rate the GETT kernel reaches, its packing included, where its rate was
// not probed (a guess: its plans are then never ranked, only timed).
constexpr double kGettEfficiency = 0.6;
// The share of the GETT rate the narrow kernel's arithmetic reaches (a guess: its plans are
// only timed).
constexpr double kNarrowEfficiency = 1.0;
// Element products per second of the plain loops of the fallback kernel (per core).
constexpr double kNaiveRate = 1.5e9;

// ---------------------------------------------------------------------------------------
// The GEMM's shape and calls.

// A GEMM dimension of extent x runs at x / (x + kHalfSpeed) of the peak: a dimension of 3
// halves the speed (packing and edge cases dominate). OpenBLAS's small-matrix kernels keep
// dimensions of 16-24 near the peak (measured: 5888 GEMMs of 16 x 368 x 23 at 41 GF/s).
constexpr double kHalfSpeed = 3.0;
// Seconds of fixed cost of one GEMM call (argument checks, buffer set-up).
constexpr double kCallSeconds = 0.4e-6;
// Seconds per element OpenBLAS spends packing a GEMM operand beyond the plain forms (double;
// float at the same cost per byte): the first matrix transposed, the second transposed. The
// plain forms cost nothing beyond the flop rate.
constexpr double kPackFirstTransposedSeconds = 0.9e-9;
constexpr double kPackSecondTransposedSeconds = 0.2e-9;
// Seconds of one row of a GEMM operand read from its own page of memory (far_rows): 3872 GEMMs
// reading 155 rows of 160 bytes each, 77440 elements apart, from a 96 MB operand took 60 ms
// more than the same products on rows 160 bytes apart.
constexpr double kFarRowSeconds = 100e-9;

// ---------------------------------------------------------------------------------------
// Memory.

// Bytes per second a permutation moves through memory (reads plus writes, all cores).
constexpr double kMemoryBandwidth = 14e9;
// Bytes per second of a permutation within cache (per core).
constexpr double kCacheBandwidth = 25e9;
// Bytes per second (reads plus writes) of a strided permutation of an operand beyond the
// last-level cache: a 6-index 20 MB operand permuted in 6 ms, a third of memcpy's rate.
constexpr double kPermuteBandwidth = 7e9;
// Bytes per second a GEMM kernel reads and writes the part of c it accumulates into, when that
// part stays in the core's L2 between calls (per core): 627 GEMMs of 22 x 4464 x 8
// accumulating into one 785 KiB c take 39 ms in all.
constexpr double kAccumulateBandwidth = 100e9;
// Bytes of the shortest read from memory that does not waste what the hardware prefetcher
// fetches ahead: a gather that takes one 64-byte run in every few pays for most of the lines
// it skips. (Not the GETT kernel's streaming-store threshold, kStreamStoreBytes.)
constexpr double kPrefetchRunBytes = 512.0;
// Bytes beyond which an operand comes from memory, not from the last-level cache (one core's
// share of it: virtual machines report the host's whole L3, so this is not derived).
constexpr double kCachedOperandBytes = 4.0 * 1024 * 1024;
// Seconds of writing one run of a tile to a page other than the previous run's (a TLB miss).
constexpr double kScatteredRunSeconds = 25e-9;
// Bytes of one chunk of an operand packed chunk by chunk along a k mode (Gemm::k_chunk): on
// acd,dbc->ab (b of 35 MB), chunks of 1.75 MB ran at 0.75 of GEMM, 3.5 MB at 0.85, 7 MB 0.80.
constexpr double kChunkBytes = 4.0 * 1024 * 1024;
// Bytes each chunk reads in one run from the operand as it is, at least (two cache lines).
constexpr double kChunkRunBytes = 128.0;

// ---------------------------------------------------------------------------------------
// The plan enumeration.

// Flops below which the plan enumeration skips tiled plans: the search costs more than it saves.
constexpr double kTiledSearchMin = 2e7;
// Outer modes of c a tiled plan may loop over, at most.
constexpr std::size_t kMaxTileModes = 5;
// Seconds (model) under which a buffered or tiled best plan's twin is not added as a candidate.
constexpr double kTwinSeconds = 50e-6;
// Plans the model ranks further than this factor behind the cheapest are not worth a try...
constexpr double kCandidateSpread = 1.5;
// ...except the cheapest of each way to write c, which the model ranks least reliably against
// each other (a factor).
constexpr double kOutputSpread = 2.0;
// Candidates a contraction times before it settles...
constexpr std::size_t kPlansTried = 6;
// ...and at most for problems small enough that many fit in the search time they are given.
constexpr std::size_t kPlansTriedSmall = 24;

// ---------------------------------------------------------------------------------------
// The plan search (plan_search.cpp).

// Seconds (model) under which the model's plan is kept untimed: clock noise outweighs gains.
constexpr double kMeasuredSeconds = 50e-6;
// amortized: the share of a shape's accumulated time its search may have cost, at most...
constexpr double kSearchShare = 0.05;
// ...and the factor over the model plan's measured time (or its predicted time, where that is
// longer) a candidate may be predicted (to be tried), and over its measured time a candidate
// may run (to be kept).
constexpr double kTrialLimit = 1.25;
// measure: seconds (model) under which a problem whose c is only written searches in its
// first call.
constexpr double kSearchInCallSeconds = 0.25;
// measure, in-call search: stops after this many times the fastest candidate's time...
constexpr double kSearchBudget = 8.0;
// ...but small problems search on until kSearchFloorSeconds, or kSearchFloorCalls times the
// fastest candidate if that is less.
constexpr double kSearchFloorSeconds = 20e-3;
constexpr double kSearchFloorCalls = 40.0;
// measure: candidates within this factor of the fastest are timed again, while that adds at
// most kConfirmShare of the first pass's time, then up to kRetimeRounds more rounds.
constexpr double kRetimeSpread = 1.3;
constexpr double kConfirmShare = 1.0;
constexpr int kRetimeRounds = 2;
// Notes kept for explain() between two sets.
constexpr std::size_t kNotesKept = 64;

// ---------------------------------------------------------------------------------------
// Threads.

// Extent a GEMM dimension is cut down to, at least, when cut into tasks.
constexpr std::size_t kMinSlice = 48;
// Flops (or products of the plain loops) under which a contraction runs on the calling
// thread: a parallel region costs microseconds, milliseconds when the threads sleep.
constexpr double kParallelFlops = 4e6;
// Elements under which a permutation runs on one thread.
constexpr std::size_t kPermuteParallelMin = std::size_t{1} << 15;
// Points under which a fused element-wise statement runs on one thread...
constexpr std::size_t kFusedParallelMin = 32768;
// ...and results at most this many that a reduction may sum per thread.
constexpr std::size_t kFusedPrivateMax = 65536;

// ---------------------------------------------------------------------------------------
// The machine probe (machine.cpp).

// Extent of the probe's square product (flops 2 n^3): 128 takes about a quarter of a
// millisecond of dgemm at 16 GF/s, where OpenBLAS runs near its large-matrix rate.
constexpr std::size_t kProbeExtent = 128;
// Runs of each probe, the best kept.
constexpr int kProbeRuns = 3;
// Bytes of each buffer of the copy probe (the two together beyond the L2 of most cores).
constexpr std::size_t kProbeCopyBytes = std::size_t{2} << 20;
// Flops of a contraction from which planning it may run the probe: smaller programs never
// pay for it (a 64^3 product is 0.5 MFLOP).
constexpr double kProbeMinFlops = 4e6;

// ---------------------------------------------------------------------------------------
// Sizes derived from the caches (machine::caches()), each kept within the given bounds.

// Bytes of one GEMM call's part of an operand beyond which packing it again on the next call
// reads it from beyond the L2: the L2 (2 MiB on the development machine).
inline double repack_bytes() {
  return static_cast<double>(std::clamp<std::size_t>(machine::caches().l2, 256 << 10, 4 << 20));
}
// Bytes of a tile of c (and its packed operands) beyond which it spills out of the core's L2
// before it is scattered: 3/8 of the L2 (768 KiB of 2 MiB).
inline double tile_bytes() { return repack_bytes() * 3.0 / 8.0; }
// GETT kernel: bytes one block of the strip operand holds at most (it stays in the L2): half
// the L2 (1 MiB of 2 MiB).
// Seconds to permute `bytes` through memory: in the last-level cache, or beyond it (every
// kind's model counts a layout afresh so).
inline double permute_seconds(double bytes) {
  return 2.0 * bytes / (bytes > kCachedOperandBytes ? kPermuteBandwidth : kMemoryBandwidth);
}

inline std::size_t gett_block_bytes() { return std::clamp<std::size_t>(machine::caches().l2 / 2, 128 << 10, 1 << 20); }
// GETT kernel: a strip operand this small is packed from wherever its values lie.
constexpr std::size_t kCachedStripBytes = std::size_t{4} << 20;
// GETT kernel: where c is only written and larger than this (bytes), whole vectors of sums are
// stored past the caches (efga,gdbc->abcdef, K = 23, c of 277 MB: 51 ms through the caches,
// 39 ms past them).
constexpr std::size_t kStreamStoreBytes = std::size_t{32} << 20;

}  // namespace tenex::detail::cpu::tuning
