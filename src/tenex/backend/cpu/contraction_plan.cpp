// A plan fuses a group of m modes, one of n modes and one of k modes into the dimensions of
// a GEMM and loops over every other mode (loops over k modes accumulate). A group can be
// fused where its modes are adjacent, in the same order, in every operand that holds them as
// it is; each matrix needs one unit-stride dimension, which is why a plan can also lay an
// operand out afresh:
//   - a or b is permuted whole into a layout that suits the GEMM (cheap when it is small),
//     or, where the other is read as it is, chunk by chunk along the slowest k mode into a
//     buffer that stays in cache, the GEMMs accumulating over the chunks (Gemm::k_chunk);
//   - c is written to a buffer laid out for the GEMM and permuted into place, either whole
//     ("buffered") or one tile at a time, by tasks that loop over some outer modes of c
//     ("tiled"): a tile stays in cache between the GEMMs that write it and the copy that
//     scatters it, so the permutation of c costs almost no memory traffic.
// Every candidate is costed with a small model (bytes the permutations move at memory
// bandwidth; GEMM time from a per-core peak scaled down for small dimensions, plus a fixed
// cost per call) and the cheapest runs.
#include "tenex/backend/cpu/contraction_plan.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "tenex/backend/cpu/gemm_call.hpp"
#include "tenex/backend/cpu/operand_layout.hpp"
#include "tenex/backend/cpu/operand_offsets.hpp"
#include "tenex/backend/cpu/thread_partition.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::contraction {
namespace {

// The model's constants (tuning.hpp).
using tuning::kAccumulateBandwidth;
using tuning::kCacheBandwidth;
using tuning::kCachedOperandBytes;
using tuning::kCallSeconds;
using tuning::kChunkBytes;
using tuning::kChunkRunBytes;
using tuning::kFarRowSeconds;
using tuning::kHalfSpeed;
using tuning::kMaxTileModes;
using tuning::kMemoryBandwidth;
using tuning::kPermuteBandwidth;
using tuning::kPrefetchRunBytes;
using tuning::kScatteredRunSeconds;
using tuning::kTiledSearchMin;
using tuning::repack_bytes;
using tuning::tile_bytes;

using tuning::permute_seconds;

// Maximal groups of available `role` modes that are adjacent, and in the same order, in
// each of the operands x and y that is kept as it is ("fixed"). When neither is, every
// available mode forms one group, in x's order (x holds every `role` mode).
std::vector<Group> runs(const Problem& p, Role role, const std::vector<char>& available, int x, bool x_fixed, int y,
                        bool y_fixed) {
  auto wanted = [&](int d) {
    const auto u = static_cast<std::size_t>(d);
    return p.role[u] == role && available[u];
  };
  std::vector<Group> out;
  if (!x_fixed && !y_fixed) {
    Group all;
    for (int d : p.order[x]) {
      if (wanted(d)) all.push_back(d);
    }
    if (!all.empty()) out.push_back(std::move(all));
    return out;
  }
  const int base = x_fixed ? x : y;
  const bool both = x_fixed && y_fixed;
  auto position_in_y = [&](int d) {
    const auto& o = p.order[y];
    return std::find(o.begin(), o.end(), d) - o.begin();
  };
  Group current;
  for (int d : p.order[base]) {
    const bool adjacent_in_y = !both || current.empty() || position_in_y(d) == position_in_y(current.back()) + 1;
    if (!wanted(d) || !adjacent_in_y) {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    }
    if (wanted(d)) current.push_back(d);
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

double speed(double x) { return x / (x + kHalfSpeed); }

// Rows of a matrix a GEMM reads (or writes) one page apart or more, in an operand too large
// for the cache: each is a TLB miss and a fresh DRAM row, which the prefetcher cannot hide.
// `x`, `y`: the matrix's extents and strides along its two dimensions.
double far_rows(std::size_t x, std::ptrdiff_t sx, std::size_t y, std::ptrdiff_t sy, double element_size,
                double operand_bytes) {
  if (operand_bytes <= kCachedOperandBytes) return 0;
  // The unit-stride dimension is the row; the other one steps between rows.
  const bool rows_along_x = sy == 1 || (sx != 1 && std::abs(sy) < std::abs(sx));
  const std::size_t rows = rows_along_x ? x : y, length = rows_along_x ? y : x;
  const auto step = static_cast<double>(std::abs(rows_along_x ? sx : sy));
  if (rows < 2 || step * element_size < 4096.0 || static_cast<double>(length) * element_size >= 2048.0) return 0;
  return static_cast<double>(rows);
}

// Gemm::k_chunk for a plan that could pack its permuted operand chunk by chunk: chunks of
// about kChunkBytes, each reading runs of kChunkRunBytes or more; 0 where the plan permutes
// no operand or both, tiles c, or the operand fits the cache (then it is permuted whole).
// `every` (the list of all plans a test runs) also chunks small operands, in two or more
// chunks, so that the path runs at small extents.
std::size_t chunk_length(const Problem& p, const Gemm& plan, bool every) {
  if (plan.permute_a == plan.permute_b || plan.output == Output::tiled || plan.gk.empty()) return 0;
  const int op = plan.permute_a ? kA : kB;
  const auto kc = static_cast<std::size_t>(plan.gk.front());
  const std::size_t extent = p.extent[kc];
  if (extent < 2) return 0;
  const auto es = static_cast<double>(p.element_size);
  const double bytes = static_cast<double>(p.size[op]) * es;
  if (bytes <= kCachedOperandBytes) return every ? (extent + 1) / 2 : 0;
  const double per_value = bytes / static_cast<double>(extent);
  const auto stride = static_cast<double>(std::abs(p.stride[op][kc]));
  const double least = std::ceil(kChunkRunBytes / (stride * es));
  const auto length = static_cast<std::size_t>(std::max({1.0, least, std::floor(kChunkBytes / per_value)}));
  if (length < extent) return length;
  return every ? (extent + 1) / 2 : 0;
}

// The GEMM calls' geometry: each operand's strides as it lies, or as the plan lays it out afresh.
Geometry gemm_geometry(const Problem& p, const Gemm& plan) {
  Geometry g;
  g.m = extent_of(p, plan.gm);
  g.n = extent_of(p, plan.gn);
  g.k = extent_of(p, plan.gk);
  if (plan.permute_a) {
    std::tie(g.a_m, g.a_k) = fresh_group_strides(p, kA, plan.gm, plan.gk, plan.flip_a);
  } else {
    g.a_m = group_stride(p.stride[kA], plan.gm);
    g.a_k = group_stride(p.stride[kA], plan.gk);
  }
  if (plan.permute_b) {
    std::tie(g.b_k, g.b_n) = fresh_group_strides(p, kB, plan.gk, plan.gn, plan.flip_b);
  } else {
    g.b_k = group_stride(p.stride[kB], plan.gk);
    g.b_n = group_stride(p.stride[kB], plan.gn);
  }
  if (plan.output == Output::direct) {
    g.c_m = group_stride(p.stride[kC], plan.gm);
    g.c_n = group_stride(p.stride[kC], plan.gn);
  } else {
    std::tie(g.c_m, g.c_n) = fresh_group_strides(p, kC, plan.gm, plan.gn, plan.flip_c);
  }
  return g;
}

// The loops around a GEMM plan's calls.
struct GemmLoops {
  double c = 1, k = 1;                     // calls along c's other modes, and accumulating along K
  double tile_tasks = 1;                   // tasks of a tiled plan
  std::array<double, 2> tile_share{1, 1};  // elements of a and b one tile reads
  double chunks = 1;                       // of an operand packed chunk by chunk
  double dk = 0;                           // values of K per call
};

GemmLoops gemm_loops(const Problem& p, const Gemm& plan, std::size_t k) {
  GemmLoops loops;
  for (int op : {kA, kB}) loops.tile_share[static_cast<std::size_t>(op)] = static_cast<double>(p.size[op]);
  for (std::size_t u = 0; u < p.modes(); ++u) {
    const int d = static_cast<int>(u);
    const auto e = static_cast<double>(p.extent[u]);
    if (p.role[u] == Role::k) {
      if (!contains(plan.gk, d)) loops.k *= e;
    } else if (!contains(plan.gm, d) && !contains(plan.gn, d)) {
      loops.c *= e;
    }
    if (contains(plan.tiles, d)) {
      loops.tile_tasks *= e;
      for (int op : {kA, kB}) {
        if (p.has(op, d)) loops.tile_share[static_cast<std::size_t>(op)] /= e;
      }
    }
  }
  // Packed chunk by chunk: each chunk is a k loop of its own.
  loops.dk = static_cast<double>(k);
  if (plan.k_chunk > 0) {
    const auto e = static_cast<double>(p.extent[static_cast<std::size_t>(plan.gk.front())]);
    loops.chunks = std::ceil(e / static_cast<double>(plan.k_chunk));
    loops.dk = loops.dk / e * static_cast<double>(plan.k_chunk);
    loops.k *= loops.chunks;
  }
  return loops;
}

// The threads that share a plan's tasks: its tiles, or its calls' slices of M and N.
double gemm_workers(const Problem& p, const Gemm& plan, const GemmLoops& loops, const Geometry& g) {
  const auto threads = static_cast<double>(p.threads);
  const double dm = static_cast<double>(g.m), dn = static_cast<double>(g.n);
  double tasks = 0;
  if (plan.output == Output::tiled) {
    tasks = loops.tile_tasks;
  } else {
    tasks = loops.c * std::max(1.0, std::floor(dm / kMinSlice)) * std::max(1.0, std::floor(dn / kMinSlice));
  }
  return std::min(threads, tasks);
}

// Seconds of the GEMM calls: their arithmetic, each call's fixed cost and packing (`pack`),
// the operands they read in rows far apart, and the parts they pack again.
double gemm_calls_seconds(const Problem& p, const Gemm& plan, const Geometry& g, const GemmLoops& loops, double pack,
                          double workers, double peak) {
  const auto es = static_cast<double>(p.element_size);
  const double dm = static_cast<double>(g.m), dn = static_cast<double>(g.n), dk = loops.dk;
  const double calls = loops.c * loops.k;
  const double flops = 2.0 * dm * dn * dk * calls;
  double seconds =
      flops / (workers * peak * speed(dm) * speed(dn) * speed(dk)) + calls * (kCallSeconds + pack) / workers;
  // Operands the GEMMs read in place, in rows far apart (see far_rows).
  double rows = 0;
  if (!plan.permute_a) rows += far_rows(g.m, g.a_m, g.k, g.a_k, es, static_cast<double>(p.size[kA]) * es);
  if (!plan.permute_b) rows += far_rows(g.k, g.b_k, g.n, g.b_n, es, static_cast<double>(p.size[kB]) * es);
  if (plan.output == Output::direct) {
    rows += far_rows(g.m, g.c_m, g.n, g.c_n, es, static_cast<double>(p.size[kC]) * es);
  }
  seconds += calls * rows * kFarRowSeconds / workers;
  // Every GEMM call packs its parts of both operands. The flop rate (measured in cache) covers
  // one packing; a part larger than the L2 is streamed again from the outer cache on every
  // further call: the operand a batched loop does not index (a 3-index contraction looping over one m mode: 30
  // GEMMs of 30 x 900 x 900 repack the same 6.5 MB of b, 37 ms against 18 ms for one GEMM
  // on a buffered c, where the model without this term predicted 24 ms for both).
  double repacked = 0;
  for (double part : {dm * dk * es, dk * dn * es}) {
    if (part > repack_bytes()) repacked += part;
  }
  // (Chunks of a packed operand are parts of their own, each packed once.)
  seconds += (calls / loops.chunks - 1.0) * repacked * 2.0 / (kCacheBandwidth * workers);
  return seconds;
}

// Adds to `seconds` the operands the plan lays out afresh: per tile, chunk by chunk or whole;
// `packed_tile_bytes` gets what a task packs per tile.
void add_layout_seconds(const Problem& p, const Gemm& plan, const GemmLoops& loops, double workers, double& seconds,
                        double& packed_tile_bytes) {
  const auto es = static_cast<double>(p.element_size);
  for (int op : {kA, kB}) {
    if (!(op == kA ? plan.permute_a : plan.permute_b)) continue;
    if (plan.tile_pack) {
      // The part a tile reads is gathered from memory in runs along the operand's fastest
      // modes up to the first tile mode; runs shorter than a cache line waste the rest.
      // Tiles that share the operand (split it along the first tile mode from its fast end)
      // read it in runs with gaps: each tile's stream drags in part of the others' lines.
      double run = 1, split = 1;
      for (auto it = p.order[op].rbegin(); it != p.order[op].rend(); ++it) {
        const auto e = static_cast<double>(p.extent[static_cast<std::size_t>(*it)]);
        if (contains(plan.tiles, *it)) {
          split = e;
          break;
        }
        run *= e;
      }
      const double waste = std::max(0.0, std::min(kPrefetchRunBytes / (run * es), split) - 1.0);
      const double share_bytes = loops.tile_share[static_cast<std::size_t>(op)] * es;
      const double operand_bytes = static_cast<double>(p.size[op]) * es;
      const double from_memory = operand_bytes > kCachedOperandBytes ? 1.0 : 0.0;
      packed_tile_bytes += share_bytes;
      seconds += loops.tile_tasks * share_bytes * 2.0 / (kCacheBandwidth * workers) +
                 operand_bytes * (from_memory + waste) / kMemoryBandwidth;
    } else if (plan.k_chunk > 0) {
      // Read once from memory, written into and read back from the cache.
      const double operand_bytes = static_cast<double>(p.size[op]) * es;
      seconds += operand_bytes / kMemoryBandwidth + 2.0 * operand_bytes / kCacheBandwidth;
    } else {
      seconds += permute_seconds(static_cast<double>(p.size[op]) * es);
    }
  }
}

// Adds to `seconds` what c costs beyond the GEMMs' writes: re-read by accumulating calls, and
// permuted into place from a buffer or a tile at a time.
void add_result_seconds(const Problem& p, const Gemm& plan, const Geometry& g, const GemmLoops& loops, double workers,
                        double packed_tile_bytes, double& seconds) {
  const auto es = static_cast<double>(p.element_size);
  const auto bytes_c = static_cast<double>(p.size[kC]) * es;
  // Accumulating GEMMs re-read and re-write c (or its tile, or buffer) once per k loop.
  // The part one GEMM writes stays in L2 between the calls when it fits, else it streams.
  if (loops.k > 1) {
    const double part_bytes = static_cast<double>(g.m) * static_cast<double>(g.n) * es;
    const double bandwidth = part_bytes <= tile_bytes() ? kAccumulateBandwidth * workers : kMemoryBandwidth;
    seconds += (loops.k - 1.0) * 2.0 * bytes_c / bandwidth;
  }
  const double read_c = p.beta_zero ? 0.0 : 1.0;
  // A buffer whose inner group is not the one holding c's fastest mode is scattered by a
  // transpose rather than by rows: another pass over the tile in cache, or over memory.
  if (plan.flip_c && plan.output == Output::tiled) seconds += bytes_c / (kCacheBandwidth * workers);
  if (plan.flip_c && plan.output == Output::buffered) seconds += bytes_c / kMemoryBandwidth;
  if (plan.output == Output::buffered) {
    seconds += permute_seconds(bytes_c) + read_c * bytes_c / kMemoryBandwidth;
  } else if (plan.output == Output::tiled) {
    // Copying a tile from cache; writes of fewer than a cache line's worth per run waste
    // the rest of the line.
    double run = 1;
    for (auto it = p.order[kC].rbegin(); it != p.order[kC].rend() && !contains(plan.tiles, *it); ++it) {
      run *= static_cast<double>(p.extent[static_cast<std::size_t>(*it)]);
    }
    const double waste = std::max(0.0, 64.0 / (run * es) - 1.0);
    seconds += 2.0 * bytes_c / (kCacheBandwidth * workers) + (waste + read_c) * bytes_c / kMemoryBandwidth;
    // Runs shorter than a page land on a different page each: a TLB miss per run.
    if (run * es < 4096.0) seconds += static_cast<double>(p.size[kC]) / run * kScatteredRunSeconds / workers;
    if (bytes_c / loops.tile_tasks + packed_tile_bytes > tile_bytes()) seconds += bytes_c / kMemoryBandwidth;
  }
}

// Seconds the GEMM plan is expected to take at `rate` (ModelRates::gemm), or infinity when it
// cannot run.
double plan_seconds(const Problem& p, const Gemm& plan, double rate) {
  const Geometry g = gemm_geometry(p, plan);
  const double pack = blas_pack_seconds(g, p.element_size);
  if (!(pack < std::numeric_limits<double>::infinity())) return std::numeric_limits<double>::infinity();
  const GemmLoops loops = gemm_loops(p, plan, g.k);
  const double workers = gemm_workers(p, plan, loops, g);
  double seconds = gemm_calls_seconds(p, plan, g, loops, pack, workers, rate);
  double packed_tile_bytes = 0;  // per task, of the operands packed per tile
  add_layout_seconds(p, plan, loops, workers, seconds, packed_tile_bytes);
  add_result_seconds(p, plan, g, loops, workers, packed_tile_bytes, seconds);
  return seconds;
}

// for_each_gemm_plan (contraction_plan.hpp), without a call through std::function per plan.
template <class Visit>
void for_each_plan(const Problem& p, double flops, bool all_tiles, double rate, Visit visit) {
  const std::vector<char> all(p.modes(), 1);
  for (int permute_a = 0; permute_a < 2; ++permute_a) {
    if (permute_a && p.order[kA].size() < 2) continue;
    for (int permute_b = 0; permute_b < 2; ++permute_b) {
      if (permute_b && p.order[kB].size() < 2) continue;
      const std::vector<Group> runs_k = runs(p, Role::k, all, kA, !permute_a, kB, !permute_b);
      for (Output output : {Output::direct, Output::buffered, Output::tiled}) {
        if (output != Output::direct && p.order[kC].size() < 2) continue;
        // Tile mode sets: subsets of the outer modes of c (never its fastest).
        std::vector<std::vector<int>> tile_sets{{}};
        if (output == Output::tiled) {
          if (flops < kTiledSearchMin && !all_tiles) continue;
          tile_sets.clear();
          const std::size_t candidates = std::min(kMaxTileModes, p.order[kC].size() - 1);
          for (std::size_t bits = 1; bits < (std::size_t{1} << candidates); ++bits) {
            std::vector<int> set;
            for (std::size_t x = 0; x < candidates; ++x) {
              if (bits >> x & 1U) set.push_back(p.order[kC][x]);
            }
            tile_sets.push_back(std::move(set));
          }
        }
        for (const auto& tiles : tile_sets) {
          std::vector<char> available(p.modes(), 1);
          for (int d : tiles) available[static_cast<std::size_t>(d)] = 0;
          const bool c_fixed = output == Output::direct;
          std::vector<Group> runs_m = runs(p, Role::m, available, kA, !permute_a, kC, c_fixed);
          std::vector<Group> runs_n = runs(p, Role::n, available, kB, !permute_b, kC, c_fixed);
          runs_m.emplace_back();
          runs_n.emplace_back();
          std::vector<Group> ks = runs_k;
          ks.emplace_back();
          Gemm plan;
          plan.permute_a = permute_a;
          plan.permute_b = permute_b;
          plan.output = output;
          plan.tiles = tiles;
          const int packs = output == Output::tiled && (permute_a || permute_b) ? 2 : 1;
          const int flips = output == Output::direct ? 1 : 2;
          // The layouts of the permuted operands (flip_a, flip_b) are not candidates of
          // their own: each plan takes the cheaper, which only changes the GEMM's form.
          const int layouts = (permute_a ? 2 : 1) * (permute_b ? 2 : 1);
          for (int tile_pack = 0; tile_pack < packs; ++tile_pack) {
            for (int flip_c = 0; flip_c < flips; ++flip_c) {
              plan.tile_pack = tile_pack;
              plan.flip_c = flip_c;
              for (const Group& gm : runs_m) {
                for (const Group& gn : runs_n) {
                  for (const Group& gk : ks) {
                    plan.gm = gm;
                    plan.gn = gn;
                    plan.gk = gk;
                    Gemm best = plan;
                    double best_seconds = 0;
                    for (int layout = 0; layout < layouts; ++layout) {
                      plan.flip_a = permute_a && layout % 2;
                      plan.flip_b = permute_b && (layout / (permute_a ? 2 : 1)) % 2;
                      const double seconds = plan_seconds(p, plan, rate);
                      if (layout == 0 || seconds < best_seconds) {
                        best = plan;
                        best_seconds = seconds;
                      }
                    }
                    if (best_seconds < std::numeric_limits<double>::infinity()) {
                      // The same plan with its permuted operand packed chunk by chunk.
                      Gemm chunked = best;
                      chunked.k_chunk = chunk_length(p, chunked, all_tiles);
                      visit(Plan{std::move(best), best_seconds});
                      if (chunked.k_chunk > 0) {
                        const double seconds = plan_seconds(p, chunked, rate);
                        if (seconds < std::numeric_limits<double>::infinity()) visit(Plan{std::move(chunked), seconds});
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

void for_each_gemm_plan(const Problem& p, double flops, bool every, const ModelRates& rates,
                        const std::function<void(const Plan&)>& visit) {
  for_each_plan(p, flops, every, rates.gemm, visit);
}

const Gemm& memory_layout(const Plan& plan) {
  static const Gemm in_place;
  const Gemm* gemm = plan.gemm();
  return gemm ? *gemm : in_place;
}

std::string describe_kernel(const Problem& p, const Gemm& x) {
  auto group = [&](const std::vector<int>& g) {
    std::string text = "{";
    for (int d : g) {
      if (text.size() > 1) text += ',';
      text += std::to_string(d) + ":" + std::to_string(p.extent[static_cast<std::size_t>(d)]);
    }
    return text + "}";
  };
  std::string text;
  text += x.permute_a ? (x.flip_a ? "a permuted (flipped)" : "a permuted") : "a as is";
  text += x.permute_b ? (x.flip_b ? ", b permuted (flipped)" : ", b permuted") : ", b as is";
  text += x.output == Output::direct     ? ", c direct"
          : x.output == Output::buffered ? ", c buffered"
                                         : ", c tiled over " + group(x.tiles);
  if (x.tile_pack) text += " packed per tile";
  if (x.k_chunk > 0) {
    text += ", packed " + std::to_string(x.k_chunk) + " of {" + std::to_string(x.gk.front()) + ":" +
            std::to_string(p.extent[static_cast<std::size_t>(x.gk.front())]) + "} at a time";
  }
  if (x.flip_c) text += " (flipped)";
  text += "; m " + group(x.gm) + " n " + group(x.gn) + " k " + group(x.gk);
  return text;
}

}  // namespace tenex::detail::cpu::contraction
