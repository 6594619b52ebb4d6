// The GETT kernel (gett_kernel.hpp): c[M, N] = sum over K of small[M, K] big[K, N] for
// M <= kGettMost, the large operand packed from its own strides a block at a time. Written
// over Highway's portable vectors (simd_vector_inl.hpp): this file compiles itself once per
// SIMD target (hwy/foreach_target.h), the kernels in each target's namespace, and run_gett
// calls the target simd.hpp picks. The blocking is the target's: its vector's lanes and its
// registers size the strips and panels.
#ifndef TENEX_GETT_KERNEL_CPP_ONCE
#define TENEX_GETT_KERNEL_CPP_ONCE
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/gett_kernel.hpp"
#include "tenex/backend/cpu/operand_offsets.hpp"
#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/backend/cpu/simd.hpp"
#include "tenex/backend/cpu/thread_partition.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::contraction {
namespace {


// Values of K one block of the strip operand holds at most on skinny shapes: a strip of it
// ([kc][2 vectors], 32 KB of doubles) stays in the L1 while each of the few panels runs over it.
constexpr std::size_t kBlockK = 256;
// The same where neither side is skinny: the sums of a tile run over all of K up to this, so
// that c is read and written once per tile rather than once per 256 values of K
// (aefc,fbed->abcd, K = 900: 20.1 ms in blocks of 256, 19.1 ms in one block; dgemm 18.5 ms).
// Strip and panel then both stream from the L2.
constexpr std::size_t kWideBlockK = 1024;
// Strips of N one block holds at most, and bytes at most (a block stays in the L2).
constexpr std::size_t kBlockStrips = 16;
// The same where the sums go to c in c's order (see roles()), whose blocks are whole rows.
constexpr std::size_t kMostStrips = 32;
// (Bytes of a block at most: tuning::gett_block_bytes(), half the L2.)
// From this K on, the direct path runs each panel against every strip of a block, else each
// strip against every panel.
constexpr std::size_t kPanelOuterK = 128;
// Values of N a block of doubles spans at most in the scatter rules of roles() (floats too).
constexpr std::size_t kBlockSpan = 256;
// Bytes of one row of a c_order block at most (see roles()).
constexpr std::size_t kMostRow = 1024;
// Bytes of a staged block's values of N at most (see blocking()): its sums, up to 32 rows of
// panels, stay in the L2.
constexpr std::size_t kStagedBytes = std::size_t{16} << 10;
// A strip operand this small is packed from wherever its values lie (see roles()), and where
// c is only written and larger than kStreamStoreBytes, whole vectors of sums that land on a
// 64-byte line of c go past the caches (tuning.hpp).
using tuning::kCachedStripBytes;
using tuning::kStreamStoreBytes;
// Rows of a panel at most: 12 rows of two vectors of sums, 24 of the 32 registers of AVX-512
// or NEON; 6 (12 of 16) on targets of 16 registers (AVX2, SSE4), so that no sum spills.
constexpr std::size_t kPanelRows = 12;
constexpr std::size_t kNarrowPanelRows = 6;
// Bytes of a boxed block's staging range at most (see write_boxed): it stays in the L1.
constexpr std::size_t kBoxStageBytes = std::size_t{32} << 10;
// Modes of a box at most (its odometers' digits live on the stack).
constexpr std::size_t kBoxModes = 32;

std::size_t ceil_div(std::size_t x, std::size_t y) { return (x + y - 1) / y; }

// Whether mode d is among the modes a block of N spans: the innermost of `numbered` (slowest
// first) up to kBlockSpan values.
bool block_spans(const Problem& p, const std::vector<int>& numbered, int d) {
  std::size_t span = 1;
  for (auto it = numbered.rbegin(); it != numbered.rend() && span < kBlockSpan; ++it) {
    if (*it == d) return true;
    span *= p.extent[static_cast<std::size_t>(*it)];
  }
  return false;
}

// Which operand is packed in panels and which in strips, and in what order the strip
// operand's free modes are numbered, or panel < 0 where the kernel does not run.
struct Roles {
  int panel = -1, strip = -1;
  bool skinny = false;
  // The sums go to c through a buffer, a vector of lanes that lie together in c at a time
  // (see roles()): `c_step` values of N apart in a block are side by side in c.
  bool c_order = false;
  std::size_t c_step = 0;
  std::size_t c_extent = 0;  // of c's stride-1 mode
  // c's stride-1 mode and a row's modes are together dense in c: c_extent rows from a value of
  // the modes outside them fill one range of c (see write_staged).
  bool c_dense = false;
  bool rows_in_place = false;   // a row's values lie together in the strip operand: read there, unpacked
  std::vector<int> strip_free;  // slowest first
};

// Whether c_last (c's stride-1 mode) and the modes numbered after it in `numbered` are dense
// in c: each of their strides the product of the extents of those with smaller strides.
bool dense_in_c(const Problem& p, const std::vector<int>& numbered, int c_last) {
  std::vector<std::pair<std::ptrdiff_t, std::size_t>> inner;  // c's stride, extent
  for (auto it = std::find(numbered.begin(), numbered.end(), c_last); it != numbered.end(); ++it) {
    const auto d = static_cast<std::size_t>(*it);
    inner.emplace_back(p.stride[kC][d], p.extent[d]);
  }
  std::sort(inner.begin(), inner.end());
  std::ptrdiff_t next = 1;
  for (const auto& [stride, extent] : inner) {
    if (stride != next) return false;
    next *= static_cast<std::ptrdiff_t>(extent);
  }
  return true;
}

Roles roles(const Problem& p) {
  Roles r;
  bool has_k = false;
  for (Role x : p.role) {
    if (x == Role::batch) return r;
    has_k = has_k || x == Role::k;
  }
  if (!has_k || (p.element_size != sizeof(float) && p.element_size != sizeof(double))) return r;
  // Gathers of floats take 32-bit offsets.
  if (p.element_size == sizeof(float) &&
      std::max(p.size[kA], p.size[kB]) > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    return r;
  const std::size_t ma = free_size(p, kA), nb = free_size(p, kB), k = k_size(p);
  if (std::min(ma, nb) <= kGettMost) {
    // Skinny: the large operand in strips, numbered in its own order (runs of its memory).
    r.skinny = true;
    r.panel = ma <= nb ? kA : kB;
    r.strip = r.panel == kA ? kB : kA;
    r.strip_free = modes_of(p, r.strip, free_role(r.strip));
    // Where the strip operand holds c's stride-1 mode but slower than the modes a block of N
    // spans, that mode is numbered next to the innermost: a block then fills whole lines of c
    // rather than one value of each, to come back for the rest only after the whole operand
    // (efbad,cf->abcde: a's e slowest, c's fastest; 567 ms against 72 ms for dgemm).
    const int c_last = p.last(kC);
    if (c_last >= 0 && p.has(r.strip, c_last) && r.strip_free.size() > 2 && !block_spans(p, r.strip_free, c_last)) {
      r.strip_free.erase(std::find(r.strip_free.begin(), r.strip_free.end(), c_last));
      r.strip_free.insert(r.strip_free.end() - 1, c_last);
    }
    // Where K is short and c's stride-1 mode is the strip operand's but not its innermost, a
    // vector of sums would go to c a lane at a time, the innermost's values apart in c.
    // Instead the sums of a few values of that mode (rows of c_step values of N, the modes
    // numbered after it) go to c through a buffer, turned in the registers, so that c is
    // written a vector at a time (ecbfa,fd->abcde: rows of e, 39 values of a each;
    // efbad,cf->abcde: rows of 26 values of d, 39 apart in c, in float 65 ms a lane at
    // a time, 17 ms turned and staged, against 20 ms for sgemm).
    // Where a row lies together in the strip operand (its modes dense, the innermost of
    // stride 1), the kernel reads it there (K is in one block).
    const int fastest = r.strip_free.empty() ? -1 : r.strip_free.back();
    if (k <= kBlockK && c_last >= 0 && c_last != fastest && p.has(r.strip, c_last)) {
      std::size_t step = 1;
      bool dense = true;
      for (auto it = r.strip_free.rbegin(); *it != c_last; ++it) {
        const auto d = static_cast<std::size_t>(*it);
        dense = dense && p.stride[static_cast<std::size_t>(r.strip)][d] == static_cast<std::ptrdiff_t>(step);
        step *= p.extent[d];
      }
      if (step * p.element_size <= kMostRow) {
        r.c_order = true;
        r.c_step = step;
        r.c_extent = p.extent[static_cast<std::size_t>(c_last)];
        r.rows_in_place = dense;
        r.c_dense = dense_in_c(p, r.strip_free, c_last);
        return r;
      }
    }
    // Else not where K is short and that order scatters c: c is then about as large as the
    // operand, and written a value at a time, each far from the last (dbea,ec->abcd:
    // K = 72, a's a innermost, 373248 apart in c: 136 ms against 45 ms for dgemm; numbered in
    // c's order instead, the packing gathers a value at a time from 200 MB: 350 ms).
    const bool scatters =
        fastest >= 0 && p.stride[kC][static_cast<std::size_t>(fastest)] > static_cast<std::ptrdiff_t>(kBlockSpan);
    if (k > kBlockK || !scatters) return r;
    return Roles{};
  }
  // Otherwise the operand that holds c's stride-1 mode goes in strips, numbered in c's order,
  // so that a strip's sums go to c in runs (c's modes may interleave the operands' as they
  // like).
  const int last = p.last(kC);
  r.strip = p.role[static_cast<std::size_t>(last)] == Role::m ? kA : kB;
  r.panel = r.strip == kA ? kB : kA;
  for (int d : p.order[kC]) {
    if (p.has(r.strip, d)) r.strip_free.push_back(d);
  }
  // Only where a block of N still reads the strip operand in runs: its stride-1 mode among
  // the modes one block spans, or a k mode (each column's values then lie together down K).
  // Else the packing gathers a value at a time across the whole operand: cheap only from an
  // operand the caches hold (efga,gdbc->abcdef: a, 1.5 MB, numbered a, e, f with a
  // innermost in memory).
  const bool runs = last_is_k(p, r.strip) ||
                    p.size[static_cast<std::size_t>(r.strip)] * p.element_size <= kCachedStripBytes ||
                    block_spans(p, r.strip_free, p.last(r.strip));
  if (!runs) return Roles{};
  return r;
}

// How the problem is cut.
struct Blocking {
  Roles roles;
  std::size_t m = 0, n = 0, k = 0;  // the panel operand's free values, the strip one's, K
  std::size_t rows = 0;             // of a panel: an even number up to kPanelRows
  std::size_t panels = 0;           // rows * panels >= m
  std::size_t kc = 0;               // values of K per block
  bool direct = false;              // sums go from the registers to c (see blocking)
  std::size_t nc = 0;               // values of N per block: whole strips, or c_order's whole rows
  std::size_t ld = 0;               // nc rounded up to whole strips: a packed block's width and the sums'
  std::size_t strip = 0;            // values of N per strip: two vectors
  std::size_t n_blocks = 0;
  std::size_t c_run = 1;    // the strip operand's columns side by side in c from c's stride-1 mode on
  bool staged = false;      // c_order blocks of c_extent rows, written through a staging row (write_staged)
  std::size_t m_parts = 1;  // tasks per block of N (direct only): parts of the panels
  // Boxed blocks (see boxed_blocks): a block of N is every value of the strip operand's
  // `box_whole` innermost modes (box_inner columns) times up to box_q values of the next one,
  // the cut mode (of extent box_cut), at one value of the modes outside it.
  bool boxed = false;
  std::size_t box_whole = 0, box_inner = 1, box_cut = 1, box_q = 1, box_per_outer = 1;
  std::size_t packed = 0;      // elements of a packed block of the strip operand (none where rows lie in place)
  std::size_t per_thread = 0;  // elements of scratch: a block of the strip operand, then the sums
};

// Where c's runs of the strip operand's columns are shorter than a strip (c's modes interleave
// the operands' from its innermost on), the sums written from the registers go to c a few
// lanes at a time, each store on lines the neighbouring strips and panels also write
// (iramc,dprc->admpi: runs of 7 values of i, then p of the panel operand; 1.5 ms of arithmetic,
// 7.4 ms in all). There, where K is short, a block of N is a box of c's modes instead: whole
// values of the strip operand's innermost modes (in c's order) and a range of the next, with
// every panel's rows. Its sums, in a buffer the L2 holds, then go to c in c's order, a
// range of whole lines at a time (write_boxed).
// Elements of one of write_boxed's two stages: a range of c, then a vector's (64 bytes) slack.
std::size_t box_stage_elements(std::size_t element_size) { return (kBoxStageBytes + 64) / element_size; }

void boxed_blocks(const Problem& p, Blocking& g, std::size_t threads) {
  const std::vector<int>& f = g.roles.strip_free;
  auto extent = [&](std::size_t x) { return p.extent[static_cast<std::size_t>(f[x])]; };
  // Not where each run is a vector: its lanes are whole lines of c, which the direct path
  // streams (ecgsu,lubgys->eylcb, runs of 8 values of b: 4.3 ms direct, 6.1 ms boxed).
  const std::size_t run = g.c_run;
  if (f.empty() || run >= g.strip || run == g.strip / 2 || p.order[kC].size() > kBoxModes) return;
  // Only where c is only written and past kStreamStoreBytes: a c the L3 holds takes the direct
  // path's stores as fast (nqal,gialw->winqg, runs of 10 values, c of 19 MB: 1.0 ms
  // direct, 1.1-1.4 ms boxed).
  if (!p.beta_zero || p.size[kC] * p.element_size <= kStreamStoreBytes) return;
  const std::size_t most = tuning::gett_block_bytes() / (g.rows * g.panels * p.element_size);  // columns
  if (most < g.strip) return;
  // The cut mode: the innermost whose every value with those inside it exceeds `most`, or
  // the slowest.
  std::size_t x = f.size(), inner = 1;
  while (x > 1 && inner * extent(x - 1) <= most) inner *= extent(--x);
  const std::size_t cut = extent(x - 1), outer = g.n / (inner * cut);
  // Values of the cut mode per block: of those from half the most to the most, the one that
  // leaves the fewest lanes of its strips empty.
  const std::size_t q_most = std::min(cut, most / inner);
  std::size_t q = q_most;
  double used = 0;
  for (std::size_t c = q_most; c >= 1 && 2 * c >= q_most; --c) {
    const double share = static_cast<double>(inner * c) / static_cast<double>(round_up(inner * c, g.strip));
    if (share > used + 1e-9) {
      used = share;
      q = c;
    }
  }
  // Four blocks per thread at least, where N has them.
  while (threads > 1 && q > 1 && outer * ceil_div(cut, q) < 4 * threads) q = ceil_div(q, 2);
  if (inner * q < g.strip) return;
  g.boxed = true;
  g.direct = false;
  g.box_whole = f.size() - x;
  g.box_inner = inner;
  g.box_cut = cut;
  g.box_q = q;
  g.box_per_outer = ceil_div(cut, q);
  g.nc = inner * q;
  g.ld = round_up(g.nc, g.strip);
  g.n_blocks = outer * g.box_per_outer;
}

// The SIMD target's tile: values of the problem's type per vector, and rows of a panel at most.
struct Tile {
  std::size_t lanes = 0, rows = 0;
};

std::size_t panel_rows_for(std::size_t registers) { return registers >= 32 ? kPanelRows : kNarrowPanelRows; }

// The tile of the target the kernels run now (simd.hpp).
Tile chosen_tile(const Problem& p) {
  return Tile{p.element_size == sizeof(float) ? simd_lanes<float>() : simd_lanes<double>(),
              panel_rows_for(simd_vector_registers())};
}

Blocking blocking(const Problem& p, std::size_t threads, Tile tile) {
  Blocking g;
  g.roles = roles(p);
  g.m = free_size(p, g.roles.panel);
  g.n = free_size(p, g.roles.strip);
  g.k = k_size(p);
  g.panels = ceil_div(g.m, tile.rows);
  g.rows = round_up(ceil_div(g.m, g.panels), 2);
  // The sums go from the registers to c, the first block of K scaling c by beta and the later
  // ones adding to it; except on skinny shapes with K in several blocks, whose strips are
  // numbered in the operand's order, not c's: a block of N keeps its sums in a buffer across
  // the blocks of K, then writes them once (frwp,vefprk->vwke: 12 ms, against 19.6 ms
  // adding to c's scattered values 13 times).
  g.direct = (!g.roles.skinny || g.k <= kBlockK) && !g.roles.c_order;
  const std::size_t most_k = g.roles.skinny ? kBlockK : kWideBlockK;
  g.kc = ceil_div(g.k, ceil_div(g.k, most_k));
  g.strip = 2 * tile.lanes;
  const std::size_t strips = ceil_div(g.n, g.strip);
  const std::size_t strip_bytes = g.kc * g.strip * p.element_size;
  std::size_t per_block =
      std::min({kBlockStrips, strips, std::max<std::size_t>(1, tuning::gett_block_bytes() / strip_bytes)});
  // Four blocks per thread at least, where N has them, so that the threads end together.
  if (threads > 1) per_block = std::min(per_block, std::max<std::size_t>(1, ceil_div(strips, 4 * threads)));
  g.nc = per_block * g.strip;
  if (g.roles.c_order) {
    // Whole rows of c_step values, as many as fill a vector of lanes in c where they fit, so
    // that each tile of sums turns whole.
    const std::size_t w = g.strip / 2, step = g.roles.c_step;
    const std::size_t fit = std::max<std::size_t>(
        1, std::min(kMostStrips * g.strip, tuning::gett_block_bytes() / (g.kc * p.element_size)) / step);
    std::size_t rows = std::min(fit, std::max(w, g.nc / step / w * w));
    if (threads > 1) rows = std::min(rows, std::max<std::size_t>(1, ceil_div(g.n / step, 4 * threads)));
    // Where c_extent rows fill one range of c, a block is those rows, so that each panel row's
    // sums go to c in order (write_staged), where they are few enough.
    const std::size_t staged = g.roles.c_extent * step * p.element_size;
    g.staged = g.roles.c_dense && staged <= kStagedBytes &&
               (g.roles.rows_in_place || g.kc * staged <= tuning::gett_block_bytes()) &&
               g.n * p.element_size / staged >= 4 * threads;
    if (g.staged) rows = g.roles.c_extent;
    g.nc = rows * step;
  }
  g.ld = round_up(g.nc, g.strip);
  g.n_blocks = ceil_div(g.n, g.nc);
  for (auto it = g.roles.strip_free.rbegin();
       it != g.roles.strip_free.rend() &&
       p.stride[kC][static_cast<std::size_t>(*it)] == static_cast<std::ptrdiff_t>(g.c_run);
       ++it) {
    g.c_run *= p.extent[static_cast<std::size_t>(*it)];
  }
  if (!g.roles.skinny && g.k <= kBlockK) boxed_blocks(p, g, threads);
  // Too few blocks of N for the threads: each block's panels in parts (its strips packed per part).
  if (g.direct && threads > 1 && g.n_blocks < 4 * threads) {
    g.m_parts = std::min(g.panels, ceil_div(4 * threads, g.n_blocks));
  }
  g.packed = g.roles.rows_in_place ? 0 : g.kc * g.ld;
  g.per_thread = g.packed + (g.direct ? 0 : g.rows * g.panels * g.ld) + (g.staged ? g.ld : 0) +
                 (g.boxed ? 2 * box_stage_elements(p.element_size) : 0);
  return g;
}

// Elements of scratch: the panels, then each thread's block of the strip operand and sums.
std::size_t scratch_elements(const Blocking& g, std::size_t threads) {
  return g.rows * g.panels * g.k + std::max<std::size_t>(threads, 1) * g.per_thread;
}

// A run of the strip operand's values that lie together in memory and in one strip.
struct Run {
  std::ptrdiff_t from = 0;  // offset in the operand, k aside
  std::size_t to = 0;       // offset in the packed block, k aside
  std::size_t length = 0;   // at most a strip
};

// A run of one vector's lanes that lie together in c.
struct Span {
  std::ptrdiff_t to = 0;  // c's offset of the lane `first`, the panel operand's aside
  std::size_t first = 0, length = 0;
};


// A mode of a boxed block (Blocking::boxed): its values in the block, its stride in the sums
// and in c. The cut mode's extent is the block's own.
struct BoxMode {
  std::size_t extent = 1;
  std::ptrdiff_t sums = 0, c = 0;
  bool cut = false;
};

template <class T>
struct Work {
  const Blocking& g;
  Offsets strip_k;
  OffsetWalk columns;  // of N: into the strip operand, then into c
  Offsets c_m;
  bool m_inner = false;        // c's writes from the sums: the panel operand's values innermost
  bool stream = false;         // whole lines of c stored past the caches where beta is 0 (kStreamStoreBytes)
  bool panel_outer = false;    // a strip's columns run together in c: each panel against every strip
  std::vector<BoxMode> box{};  // a boxed block's modes in c's order, slowest first
  const T* strip = nullptr;
  const T* panel = nullptr;  // [panels][K][rows]
  T alpha{}, beta{};
  T* c = nullptr;
};

// What a thread keeps between tasks: allocated before the parallel region.
struct Lists {
  std::vector<Run> runs;
  std::vector<Span> spans;
  std::vector<std::size_t> vector_first;  // per vector of the block, its first span
  std::vector<std::ptrdiff_t> index;      // the strip operand's offset of each column of a block
  Offsets strip_n, c_n;                   // a block's columns' offsets: into the strip operand, into c
  std::vector<std::size_t> digits;        // OffsetWalk::fill's
  std::vector<BoxMode> box;               // write_boxed's
};


// The values of some of a box's modes (slowest first) in order, with their offsets in the
// sums and in c.
struct BoxWalk {
  const BoxMode* modes;
  std::size_t count;
  std::size_t digit[kBoxModes] = {};
  std::ptrdiff_t sums = 0, c = 0;

  BoxWalk(const BoxMode* m, std::size_t n) : modes(m), count(n) {}
  // To the next value; false past the last.
  bool next() {
    for (std::size_t x = count; x > 0; --x) {
      const BoxMode& m = modes[x - 1];
      if (++digit[x - 1] < m.extent) {
        sums += m.sums;
        c += m.c;
        return true;
      }
      sums -= m.sums * static_cast<std::ptrdiff_t>(m.extent - 1);
      c -= m.c * static_cast<std::ptrdiff_t>(m.extent - 1);
      digit[x - 1] = 0;
    }
    return false;
  }
};

}  // namespace
}  // namespace tenex::detail::cpu::contraction
#endif  // TENEX_GETT_KERNEL_CPP_ONCE

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tenex/backend/cpu/gett_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include "tenex/backend/cpu/simd_vector_inl.hpp"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::contraction::HWY_NAMESPACE {
using cpu::HWY_NAMESPACE::kVectorRegisters;
using cpu::HWY_NAMESPACE::transpose;
using cpu::HWY_NAMESPACE::Vec;
// Internal linkage: each kernel file compiles itself per target into the same namespaces.
namespace {

template <class T>
void copy_run(const T* from, T* to, std::size_t length) {
  using X = Vec<T>;
  if (length >= X::width) {
    X::store(to, X::load(from));
    if (length > X::width) {
      const auto rest = Vec<T>::lanes(length - X::width);
      X::store(rest, to + X::width, X::load(rest, from + X::width));
    }
    return;
  }
  const auto part = Vec<T>::lanes(length);
  X::store(part, to, X::load(part, from));
}

// The sums of R rows and one strip over kc values of K, added to `acc`: `strip` is
// [kc][2 vectors], `panel` [kc][R].
template <class T, std::size_t R>
HWY_INLINE void accumulate(typename Vec<T>::V (&acc)[R][2], const T* strip, const T* panel, std::size_t kc) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  for (std::size_t k = 0; k < kc; ++k) {
    const typename X::V b0 = X::load(strip + k * 2 * W), b1 = X::load(strip + k * 2 * W + W);
    const T* row = panel + k * R;
    for (std::size_t r = 0; r < R; ++r) {
      const typename X::V x = X::set1(row[r]);
      acc[r][0] = X::fma(x, b0, acc[r][0]);
      acc[r][1] = X::fma(x, b1, acc[r][1]);
    }
  }
}

// As accumulate, the sums coming from `sums` (rows `ld` apart) unless `first`, and going
// back there. This kernel and strip_to_c are never inlined: inlined into block_task, GCC kept
// one of the sums on the stack inside the loop over K (yhqam,ea->yehqm: 0.66 ms,
// 0.85 ms so). in_place_kernel always is: out of line, GCC stored all its sums to the stack
// at every k (ecbfa,fd->abcde in float: 18 ms, 31 ms so).
template <class T, std::size_t R>
HWY_NOINLINE void strip_kernel(const T* strip, const T* panel, std::size_t kc, T* sums, std::size_t ld, bool first) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  typename X::V acc[R][2];
  for (std::size_t r = 0; r < R; ++r) {
    acc[r][0] = first ? X::zero() : X::load(sums + r * ld);
    acc[r][1] = first ? X::zero() : X::load(sums + r * ld + W);
  }
  accumulate<T, R>(acc, strip, panel, kc);
  for (std::size_t r = 0; r < R; ++r) {
    X::store(sums + r * ld, acc[r][0]);
    X::store(sums + r * ld + W, acc[r][1]);
  }
}

// As accumulate over all of K, the sums scaled into c: rows `c_rows` (`count` of them, at
// most R), the lanes of vector v by spans[v] (spans[2] ends them).
template <class T, std::size_t R>
HWY_NOINLINE void strip_to_c(const T* strip, const T* panel, std::size_t kk, const std::ptrdiff_t* c_rows,
                             std::size_t count, const Span* const (&spans)[3], T alpha, T beta, T* c, bool stream) {
  using X = Vec<T>;
  typename X::V acc[R][2];
  for (std::size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = X::zero();
  accumulate<T, R>(acc, strip, panel, kk);
  const typename X::V va = X::set1(alpha), vb = X::set1(beta);
  for (std::size_t r = 0; r < count; ++r) {
    // Each span's lanes stored where they lie in c: the vector's base moved back by `first`
    // (lanes outside the mask are neither read nor written).
    const auto base = reinterpret_cast<std::uintptr_t>(c + c_rows[r]);
    for (std::size_t v = 0; v < 2; ++v) {
      const typename X::V scaled = X::mul(va, acc[r][v]);
      for (const Span* sp = spans[v]; sp != spans[v + 1]; ++sp) {
        T* to = reinterpret_cast<T*>(
            base + static_cast<std::uintptr_t>(sp->to - static_cast<std::ptrdiff_t>(sp->first)) * sizeof(T));
        if (stream && sp->length == X::width && reinterpret_cast<std::uintptr_t>(to) % (X::width * sizeof(T)) == 0) {
          X::stream(to, scaled);
          continue;
        }
        const auto mask = Vec<T>::lanes(sp->length, sp->first);
        X::store(mask, to, beta == T(0) ? scaled : X::fma(vb, X::load(mask, to), scaled));
      }
    }
  }
}


// A tile of sums turned in the registers: `tall` rows `step` apart from `from`, `wide` values
// each (the rest zero), so that tile[u] holds value u of every row.
template <class T>
HWY_INLINE void turned_tile(const T* from, std::size_t step, std::size_t tall, std::size_t wide,
                            typename Vec<T>::V (&tile)[Vec<T>::width]) {
  using X = Vec<T>;
  const auto in_row = Vec<T>::lanes(wide);
#pragma GCC unroll 16
  for (std::size_t t = 0; t < X::width; ++t) tile[t] = t < tall ? X::load(in_row, from + t * step) : X::zero();
  transpose<T>(tile);
}

// A c_order block's sums ([rows * panels][ld]) to c: tiles of up to a vector of rows (c_step
// values of N each, whose values lie side by side in c) by a vector of values of a row, each
// turned in the registers, so that a vector of the tile's rows goes to c in one store.
template <class T>
void write_in_c_order(const Work<T>& w, std::size_t n0, std::size_t count, const std::ptrdiff_t* c_n, const T* sums) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  const Blocking& g = w.g;
  const std::size_t step = g.roles.c_step, rows = count / step, extent = g.roles.c_extent;
  const typename X::V va = X::set1(w.alpha), vb = X::set1(w.beta);
  for (std::size_t r = 0; r < rows;) {
    // Rows r .. r + tall - 1 lie side by side in c: up to a vector of them, not across a
    // value of the modes outside c's stride-1 mode.
    const std::size_t tall = std::min({W, rows - r, extent - (n0 / step + r) % extent});
    const auto in_c = Vec<T>::lanes(tall);
    for (std::size_t v0 = 0; v0 < step; v0 += W) {
      const std::size_t wide = std::min(W, step - v0);
      const std::size_t j0 = r * step + v0;
      for (std::size_t i = 0; i < g.m; ++i) {
        typename X::V tile[W];
        turned_tile<T>(sums + i * g.ld + j0, step, tall, wide, tile);
        T* out = w.c + w.c_m[i];
#pragma GCC unroll 16
        for (std::size_t u = 0; u < W; ++u) {
          if (u >= wide) break;
          T* to = out + c_n[j0 + u];
          const typename X::V x = X::mul(va, tile[u]);
          X::store(in_c, to, w.beta == T(0) ? x : X::fma(vb, X::load(in_c, to), x));
        }
      }
    }
    r += tall;
  }
}

// `length` values of `from` (at most a vector), scaled into c at `to`.
template <class T>
HWY_INLINE void store_part(const T* from, std::size_t length, T* to, typename Vec<T>::V va, typename Vec<T>::V vb,
                           bool only_written) {
  using X = Vec<T>;
  const typename X::Mask mask = Vec<T>::lanes(length);
  const typename X::V x = X::mul(va, X::load(mask, from));
  X::store(mask, to, only_written ? x : X::fma(vb, X::load(mask, to), x));
}

// `count` values of `from`, scaled into c at `to` in order: the lines `to` covers whole stored
// past the caches where `stream` (the first and last parts masked).
template <class T>
void store_range(const T* from, std::size_t count, T* to, T alpha, T beta, bool stream) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  const typename X::V va = X::set1(alpha), vb = X::set1(beta);
  // Up to the first 64-byte line of c, then whole vectors, then the rest.
  const std::size_t head = std::min(count, (64 - reinterpret_cast<std::uintptr_t>(to) % 64) % 64 / sizeof(T));
  const bool streamed = stream && beta == T(0) && reinterpret_cast<std::uintptr_t>(to + head) % 64 == 0;
  // The head spans more than a vector where a vector is narrower than a line.
  for (std::size_t h = 0; h < head; h += W) store_part(from + h, std::min(W, head - h), to + h, va, vb, beta == T(0));
  std::size_t j = head;
  if (streamed) {
    for (; j + W <= count; j += W) X::stream(to + j, X::mul(va, X::load(from + j)));
  } else if (beta == T(0)) {
    for (; j + W <= count; j += W) X::store(to + j, X::mul(va, X::load(from + j)));
  } else {
    for (; j + W <= count; j += W) X::store(to + j, X::fma(vb, X::load(to + j), X::mul(va, X::load(from + j))));
  }
  if (j < count) store_part(from + j, count - j, to + j, va, vb, beta == T(0));
}

// A staged block's sums (Blocking::staged: c_extent rows, which fill one range of c per panel
// row) to c: each panel row's tiles turned in the registers into `staging` in c's order, then
// the range written in order, whole lines past the caches where c is only written and large
// (efbad,cf->abcde: a tile's 16 stores land 156 bytes apart, two lines each; written
// so, c took 8 of the kernel's 21 ms).
template <class T>
void write_staged(const Work<T>& w, std::size_t count, const std::ptrdiff_t* c_n, const T* sums, T* staging) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  const Blocking& g = w.g;
  const std::size_t step = g.roles.c_step, rows = count / step;
  const std::ptrdiff_t first = c_n[0];  // the range's start: the first row's first value
  for (std::size_t i = 0; i < g.m; ++i) {
    for (std::size_t r = 0; r < rows; r += W) {
      const std::size_t tall = std::min(W, rows - r);
      const auto in_c = Vec<T>::lanes(tall);
      for (std::size_t v0 = 0; v0 < step; v0 += W) {
        const std::size_t wide = std::min(W, step - v0);
        const std::size_t j0 = r * step + v0;
        typename X::V tile[W];
        turned_tile<T>(sums + i * g.ld + j0, step, tall, wide, tile);
#pragma GCC unroll 16
        for (std::size_t u = 0; u < W; ++u) {
          if (u >= wide) break;
          X::store(in_c, staging + (c_n[j0 + u] - first), tile[u]);
        }
      }
    }
    store_range(staging, count, w.c + w.c_m[i] + first, w.alpha, w.beta, w.stream);
  }
}


// Runs of `run` values (fewer than two vectors) of the sums from `from` at each value of
// `modes`, side by side into `stage` in order. Whole vectors only: a run shorter than a vector
// writes past its end, which the next run overwrites (the last into the stage's slack); a
// longer one writes its last vector over the end of its first. Masked, the stores stalled the
// loads that read the stage next (nqal,gialw->winqg: runs of 10 values of g).
template <class T>
void gather_runs(const T* from, const BoxMode* modes, std::size_t count, std::size_t run, T* stage) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  // The innermost of `modes` in a loop of its own, the others walked.
  const BoxMode last = count > 0 ? modes[count - 1] : BoxMode{};
  const std::size_t tail = run > W ? run - W : 0;
  BoxWalk walk(modes, count > 0 ? count - 1 : 0);
  do {
    const T* in = from + walk.sums;
    T* out = stage + walk.c;
    for (std::size_t x = 0; x < last.extent; ++x, in += last.sums, out += last.c) {
      X::store(out, X::load(in));
      if (tail > 0) X::store(out + tail, X::load(in + tail));
    }
  } while (walk.next());
}

// A boxed block's sums ([rows * panels][ld]) to c in c's order: the innermost of the block's
// modes that lie together in c (up to kBoxStageBytes) gathered into a stage (gather_runs),
// then written to c in one range, its whole lines past the caches where c is only written
// and large; and so for every value of the modes outside them. Two stages in turn: one is
// written to c while the next is gathered, so that its loads come long after its stores.
template <class T>
void write_boxed(const Work<T>& w, std::size_t count, const std::ptrdiff_t* c_n, const T* sums, T* stage,
                 std::vector<BoxMode>& modes) {
  const Blocking& g = w.g;
  modes = w.box;
  for (BoxMode& m : modes) {
    if (m.cut) m.extent = count / g.box_inner;
  }
  // The staged modes: modes[staged..], which fill `length` values of c from its first.
  std::size_t staged = modes.size(), length = 1;
  while (staged > 0 && modes[staged - 1].c == static_cast<std::ptrdiff_t>(length) &&
         length * modes[staged - 1].extent * sizeof(T) <= kBoxStageBytes) {
    length *= modes[--staged].extent;
  }
  const std::size_t run = modes.back().extent;  // c's stride-1 mode, stride 1 in the sums too
  T* const c = w.c + w.c_m[0] + c_n[0];
  T* const stages[2] = {stage, stage + box_stage_elements(sizeof(T))};
  T* pending = nullptr;  // where the other stage goes
  std::size_t now = 0;
  BoxWalk outer(modes.data(), staged);
  do {
    gather_runs(sums + outer.sums, modes.data() + staged, modes.size() - staged - 1, run, stages[now]);
    if (pending != nullptr) store_range(stages[1 - now], length, pending, w.alpha, w.beta, w.stream);
    pending = c + outer.c;
    now = 1 - now;
  } while (outer.next());
  store_range(stages[1 - now], length, pending, w.alpha, w.beta, w.stream);
}

// A c_order block's sums to c: staged, or tile by tile.
template <class T>
void write_c_order(const Work<T>& w, std::size_t n0, std::size_t count, const std::ptrdiff_t* c_n, T* sums) {
  const Blocking& g = w.g;
  if (g.staged) {
    write_staged(w, count, c_n, sums, sums + g.rows * g.panels * g.ld);
  } else {
    write_in_c_order(w, n0, count, c_n, sums);
  }
}

// The sums of R rows and V vectors of a row of the strip operand read where it lies
// (`strip` + strip_k[k], the first `length` values), into `sums` (rows `ld` apart); where
// `next` is given, every line its first `next_bytes` touch at each k from `fetch_from`, for
// `fetch_count` values of K, is fetched into the caches meanwhile (efbad,cf->abcde in
// float: rows of 104 bytes, which span three lines from most of their starts; with two lines
// fetched a row, 42 ms, with all, 21 ms).
template <class T, std::size_t R, std::size_t V>
HWY_INLINE void in_place_kernel(const T* strip, const std::ptrdiff_t* strip_k, const T* panel, std::size_t kc,
                                std::size_t length, T* sums, std::size_t ld, const T* next, std::size_t next_bytes,
                                std::size_t fetch_from, std::size_t fetch_count) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;
  const typename X::Mask m0 = Vec<T>::lanes(std::min(W, length)), m1 = Vec<T>::lanes(length > W ? length - W : 0);
  typename X::V acc[R][V];
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t v = 0; v < V; ++v) acc[r][v] = X::zero();
  }
  for (std::size_t k = 0; k < kc; ++k) {
    const T* from = strip + strip_k[k];
    if (next != nullptr && k - fetch_from < fetch_count) {
      const auto ahead = reinterpret_cast<std::uintptr_t>(next + strip_k[k]);
      for (std::uintptr_t line = ahead & ~std::uintptr_t{63}; line < ahead + next_bytes; line += 64)
        hwy::Prefetch(reinterpret_cast<const char*>(line));
    }
    typename X::V b[V];
    b[0] = X::load(m0, from);
    if constexpr (V == 2) b[1] = X::load(m1, from + W);
    const T* row = panel + k * R;
    for (std::size_t r = 0; r < R; ++r) {
      const typename X::V x = X::set1(row[r]);
      for (std::size_t v = 0; v < V; ++v) acc[r][v] = X::fma(x, b[v], acc[r][v]);
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    X::store(m0, sums + r * ld, acc[r][0]);
    if constexpr (V == 2) X::store(m1, sums + r * ld + W, acc[r][1]);
  }
}

// A c_order block whose rows lie together in the strip operand (Roles::rows_in_place): each row
// multiplied by the panels where it lies, unpacked, two vectors at a time, into the sums.
template <class T, std::size_t R>
void rows_in_place(const Work<T>& w, std::size_t count, const std::ptrdiff_t* strip_n, T* sums) {
  constexpr std::size_t W = Vec<T>::width;
  const Blocking& g = w.g;
  const std::size_t step = g.roles.c_step;
  // The next row's lines are fetched while this one runs, each of its calls (a part of the
  // row against a panel) fetching an equal share of K: all at once, the next row's lines
  // (deca,be->abcd in float: 72 values of K, 5 lines each) outran the caches' misses
  // in flight, and the row after came late (18.4 ms; spread, 15.3 ms).
  const std::size_t calls = ceil_div(step, 2 * W) * g.panels, share = ceil_div(g.k, calls);
  for (std::size_t j = 0; j < count; j += step) {
    const T* row = w.strip + strip_n[j];
    const T* next = j + step < count ? w.strip + strip_n[j + step] : nullptr;
    std::size_t call = 0;
    for (std::size_t v0 = 0; v0 < step; v0 += 2 * W) {
      const std::size_t length = std::min(2 * W, step - v0);
      for (std::size_t q = 0; q < g.panels; ++q, ++call) {
        T* to = sums + q * R * g.ld + j + v0;
        const T* panel = w.panel + q * g.k * R;
        if (length > W) {
          in_place_kernel<T, R, 2>(row + v0, w.strip_k.data(), panel, g.k, length, to, g.ld, next, step * sizeof(T),
                                   call * share, share);
        } else {
          in_place_kernel<T, R, 1>(row + v0, w.strip_k.data(), panel, g.k, length, to, g.ld, next, step * sizeof(T),
                                   call * share, share);
        }
      }
    }
  }
}

// Task `t`: block t / m_parts of N, packed a block of K at a time into `block`
// ([strips][kc][strip]), times panels of part t % m_parts; the sums go to c from the
// registers (direct) or through `sums` ([rows * panels][ld]); a block whose rows lie
// together in the strip operand is not packed (rows_in_place).
template <class T, std::size_t R>
void block_task(const Work<T>& w, std::size_t t, T* block, T* sums, Lists& lists) {
  const Blocking& g = w.g;
  std::size_t n0 = t / g.m_parts * g.nc, count = std::min(g.nc, g.n - n0);
  if (g.boxed) {  // values chunk * box_q on of the cut mode, at value `outer` of the modes outside it
    const std::size_t outer = t / g.box_per_outer, chunk = t % g.box_per_outer;
    n0 = (outer * g.box_cut + chunk * g.box_q) * g.box_inner;
    count = std::min(g.box_q, g.box_cut - chunk * g.box_q) * g.box_inner;
  }
  const std::size_t part = t % g.m_parts;
  const std::size_t p0 = g.panels * part / g.m_parts, p1 = g.panels * (part + 1) / g.m_parts;
  const std::size_t strips = ceil_div(count, g.strip), stride = g.kc * g.strip;
  constexpr std::size_t W = Vec<T>::width;
  lists.strip_n.resize(count);
  lists.c_n.resize(count);
  w.columns.fill(n0, count, lists.strip_n.data(), lists.c_n.data(), lists.digits.data());
  const std::ptrdiff_t* strip_n = lists.strip_n.data();
  const std::ptrdiff_t* c_n = lists.c_n.data();
  if (g.roles.rows_in_place) {
    rows_in_place<T, R>(w, count, strip_n, sums);
    write_c_order(w, n0, count, c_n, sums);
    return;
  }
  std::vector<Run>& runs = lists.runs;
  runs.clear();
  for (std::size_t j = 0; j < count;) {
    Run run{strip_n[j], j / g.strip * stride + j % g.strip, 1};
    ++j;
    while (j < count && j % g.strip != 0 && strip_n[j] == run.from + static_cast<std::ptrdiff_t>(run.length)) {
      ++run.length;
      ++j;
    }
    runs.push_back(run);
  }
  // Runs of one or two values on average.
  const bool short_runs = runs.size() * 2 > count;
  if (short_runs) {
    lists.index.assign(strips * g.strip, 0);
    for (std::size_t j = 0; j < count; ++j) lists.index[j] = strip_n[j];
  }
  if (count % g.strip != 0) {  // the last strip's columns past N: zero
    T* last = block + (strips - 1) * stride;
    for (std::size_t k = 0; k < g.kc; ++k) {
      std::fill(last + k * g.strip + count % g.strip, last + (k + 1) * g.strip, T(0));
    }
  }
  const Span* spans = nullptr;
  if (g.direct) {
    // Each vector's lanes in runs of c.
    lists.spans.clear();
    lists.vector_first.clear();
    for (std::size_t j = 0; j < strips * g.strip; ++j) {
      if (j % W == 0) lists.vector_first.push_back(lists.spans.size());
      if (j >= count) continue;
      const std::ptrdiff_t to = c_n[j];
      Span* last = lists.spans.size() > lists.vector_first.back() ? &lists.spans.back() : nullptr;
      if (last && last->to + static_cast<std::ptrdiff_t>(last->length) == to) {
        ++last->length;
      } else {
        lists.spans.push_back(Span{to, j % W, 1});
      }
    }
    lists.vector_first.push_back(lists.spans.size());
    spans = lists.spans.data();
  }
  for (std::size_t k0 = 0; k0 < g.k; k0 += g.kc) {
    const std::size_t kc = std::min(g.kc, g.k - k0);
    if (short_runs) {
      // Runs of one or two values: each vector of a strip gathered at once from its columns'
      // offsets (aebf,fdec->abcd: b's strips numbered in c's order d, c run 900 apart
      // in b; copied a run at a time in memory order, its packing took 14% of the kernel's
      // time, gathered 9%; aedf,fbec->abcd, a's f innermost: 8% copied down K a
      // column at a time, 4% gathered).
      // Each vector's lanes within N (the lanes past N stay zero): the vectors before the
      // `whole`-th all of theirs, that one the rest, those after none. Three masks, not one
      // per vector: a block may hold any number of strips (the scalar target's are two
      // values wide, and a c_order block's rows of up to kMostRow bytes span 128 of them).
      const std::ptrdiff_t* index = lists.index.data();
      const std::size_t vectors = 2 * strips, whole = count / W;
      const typename Vec<T>::Mask all = Vec<T>::lanes(W), rest = Vec<T>::lanes(count % W), none = Vec<T>::lanes(0);
      for (std::size_t k = 0; k < kc; ++k) {
        const T* from = w.strip + w.strip_k[k0 + k];
        T* to = block + k * g.strip;
        for (std::size_t v = 0; v < vectors; ++v) {
          const typename Vec<T>::Mask& in = v < whole ? all : v == whole ? rest : none;
          Vec<T>::store(to + v / 2 * stride + v % 2 * W, Vec<T>::gather(in, from, index + v * W));
        }
      }
    } else {
      for (std::size_t k = 0; k < kc; ++k) {
        const T* from = w.strip + w.strip_k[k0 + k];
        T* to = block + k * g.strip;
        for (const Run& run : runs) copy_run(from + run.from, to + run.to, run.length);
      }
    }
    if (g.direct) {
      // The first block of K scales c by beta, the later ones add to it.
      const T beta = k0 == 0 ? w.beta : T(1);
      auto tile = [&](std::size_t s, std::size_t q) {
        const Span* const ends[3] = {spans + lists.vector_first[2 * s], spans + lists.vector_first[2 * s + 1],
                                     spans + lists.vector_first[2 * s + 2]};
        strip_to_c<T, R>(block + s * stride, w.panel + (q * g.k + k0) * R, kc, w.c_m.data() + q * R,
                         std::min(R, g.m - q * R), ends, w.alpha, beta, w.c, w.stream);
      };
      if (kc < kPanelOuterK && !w.panel_outer) {
        // A strip against every panel in turn: its part of c is written in runs down the
        // panel operand's modes, rather than a line here and there
        // (iramc,dprc->admpi: the strips' columns run 7 together in c, the panels' rows 70).
        for (std::size_t s = 0; s < strips; ++s) {
          for (std::size_t q = p0; q < p1; ++q) tile(s, q);
        }
      } else {
        // A panel against every strip of the block: the panels are read once per block, and
        // where a strip's columns run together in c, each row of c is written in one run
        // (efga,gdbc->abcdef, K = 23: 100 ms a strip at a time, 51 ms a panel).
        for (std::size_t q = p0; q < p1; ++q) {
          for (std::size_t s = 0; s < strips; ++s) tile(s, q);
        }
      }
      continue;
    }
    for (std::size_t s = 0; s < strips; ++s) {
      for (std::size_t q = 0; q < g.panels; ++q) {
        strip_kernel<T, R>(block + s * stride, w.panel + (q * g.k + k0) * R, kc, sums + q * R * g.ld + s * g.strip,
                           g.ld, k0 == 0);
      }
    }
  }
  if (g.direct) return;
  if (g.boxed) {
    write_boxed(w, count, c_n, sums, sums + g.rows * g.panels * g.ld, lists.box);
    return;
  }
  if (g.roles.c_order) {
    write_c_order(w, n0, count, c_n, sums);
    return;
  }
  if (w.m_inner) {
    for (std::size_t j = 0; j < count; ++j) {
      T* out = w.c + c_n[j];
      for (std::size_t i = 0; i < g.m; ++i) store_value(out[w.c_m[i]], sums[i * g.ld + j], w.alpha, w.beta);
    }
  } else {
    for (std::size_t i = 0; i < g.m; ++i) {
      T* out = w.c + w.c_m[i];
      const T* row = sums + i * g.ld;
      for (std::size_t j = 0; j < count; ++j) store_value(out[c_n[j]], row[j], w.alpha, w.beta);
    }
  }
}

template <class T, std::size_t R>
void run_blocks(const Work<T>& w, T* scratch, std::size_t threads) {
  const Blocking& g = w.g;
  std::vector<Lists> lists(threads);
  for (Lists& l : lists) {  // no allocation in the parallel region
    l.runs.reserve(g.nc);
    l.spans.reserve(g.nc);
    l.vector_first.reserve(g.nc + 1);
    l.index.reserve(g.ld);
    l.strip_n.reserve(g.nc);
    l.c_n.reserve(g.nc);
    l.digits.resize(w.columns.modes());
    l.box.reserve(w.box.size());
  }
  const std::size_t tasks = g.n_blocks * g.m_parts;
  [[maybe_unused]] const bool par = threads > 1;
#pragma omp parallel num_threads(static_cast <int>(threads)) if (par)
  {
    const auto me = static_cast<std::size_t>(omp_get_thread_num());
    T* block = scratch + me * g.per_thread;
    T* sums = block + g.packed;
#pragma omp for schedule(dynamic)
    for (std::size_t t = 0; t < tasks; ++t) block_task<T, R>(w, t, block, sums, lists[me]);
    if (w.stream) hwy::FlushStream();  // the streamed stores ordered before whatever reads c next
  }
}

// The panels: the panel operand's values at small_k[k] + small_m[i], [K][rows] each, zero
// past M; each k's rows gathered at once, the panels shared among `threads`.
template <class T>
void pack_panels(const T* small, const Offsets& small_k, const Offsets& small_m, const Blocking& g, T* panel,
                 [[maybe_unused]] std::size_t threads) {
  using X = Vec<T>;
  constexpr std::size_t W = X::width;

  const auto panels = static_cast<std::ptrdiff_t>(g.panels);
#pragma omp parallel for num_threads(static_cast <int>(threads)) if (threads > 1) schedule(static)
  for (std::ptrdiff_t pq = 0; pq < panels; ++pq) {
    const auto q = static_cast<std::size_t>(pq);
    std::ptrdiff_t index[kPanelRows + W];
    const std::size_t valid = std::min(g.rows, g.m - q * g.rows);
    std::fill(std::begin(index), std::end(index), 0);
    std::copy(small_m.begin() + static_cast<std::ptrdiff_t>(q * g.rows),
              small_m.begin() + static_cast<std::ptrdiff_t>(q * g.rows + valid), index);
    // The rows side by side in memory: loaded, not gathered (aefc,fbed->abcd: a's c).
    bool together = true;
    for (std::size_t r = 1; r < valid; ++r)
      together = together && index[r] == index[0] + static_cast<std::ptrdiff_t>(r);
    for (std::size_t k = 0; k < g.k; ++k) {
      const T* from = small + small_k[k];
      T* to = panel + (q * g.k + k) * g.rows;
      for (std::size_t j = 0; j < g.rows; j += W) {
        const auto in = Vec<T>::lanes(std::min(W, valid > j ? valid - j : 0));
        X::store(
            Vec<T>::lanes(std::min(W, g.rows - j)), to + j,
            together ? X::load(in, from + index[0] + static_cast<std::ptrdiff_t>(j)) : X::gather(in, from, index + j));
      }
    }
  }
}


template <class T>
std::size_t run(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  const Blocking g = blocking(p, p.threads, Tile{Vec<T>::width, panel_rows_for(kVectorRegisters)});
  // Threads where the work pays for waking them (as the GEMM plans judge it).
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  const bool par = omp_get_max_threads() > 1 && !omp_in_parallel() && flops >= kParallelFlops;
  const std::size_t threads =
      par ? std::min<std::size_t>(std::max<std::size_t>(p.threads, 1), static_cast<std::size_t>(omp_get_max_threads()))
          : 1;
  const std::size_t used = std::min(threads, g.n_blocks * g.m_parts);
  const int panel_op = g.roles.panel, strip_op = g.roles.strip;
  const std::vector<int> k_modes = modes_of(p, strip_op, Role::k);
  const std::vector<int>& strip_free = g.roles.strip_free;
  const std::vector<int> panel_free = modes_of(p, panel_op, free_role(panel_op));
  Work<T> w{g, offsets(p, strip_op, k_modes), OffsetWalk(p, strip_op, kC, strip_free), offsets(p, kC, panel_free)};
  if (!panel_free.empty() && !strip_free.empty()) {
    const auto& cs = p.stride[kC];
    w.m_inner = cs[static_cast<std::size_t>(panel_free.back())] < cs[static_cast<std::size_t>(strip_free.back())];
  }
  w.panel_outer = g.c_run >= g.strip;
  if (g.boxed) {
    // The panel operand's rows (numbered in panel_free's order), and the strip operand's
    // whole modes and cut mode (numbered in strip_free's, c's order), by c's strides.
    std::ptrdiff_t row = 1;
    for (auto it = panel_free.rbegin(); it != panel_free.rend(); ++it) {
      const auto d = static_cast<std::size_t>(*it);
      if (p.extent[d] > 1)
        w.box.push_back(BoxMode{p.extent[d], row * static_cast<std::ptrdiff_t>(g.ld), p.stride[kC][d], false});
      row *= static_cast<std::ptrdiff_t>(p.extent[d]);
    }
    std::ptrdiff_t column = 1;
    for (std::size_t x = 0; x <= g.box_whole; ++x) {
      const auto d = static_cast<std::size_t>(strip_free[strip_free.size() - 1 - x]);
      if (p.extent[d] > 1 || x == 0 || x == g.box_whole)
        w.box.push_back(BoxMode{p.extent[d], column, p.stride[kC][d], x == g.box_whole});
      column *= static_cast<std::ptrdiff_t>(p.extent[d]);
    }
    std::sort(w.box.begin(), w.box.end(), [](const BoxMode& l, const BoxMode& r) { return l.c > r.c; });
  }
  w.stream = beta == T(0) && g.kc == g.k && p.size[kC] * sizeof(T) > kStreamStoreBytes;
  w.strip = strip_op == kA ? a : b;
  w.alpha = alpha;
  w.beta = beta;
  w.c = c;
  const T* small = panel_op == kA ? a : b;
  const Offsets small_k = offsets(p, panel_op, k_modes), small_m = offsets(p, panel_op, panel_free);
  Scratch<T> scratch(scratch_elements(g, p.threads));  // prefault_scratch takes the same
  T* panel = scratch.get();
  pack_panels(small, small_k, small_m, g, panel, threads);
  w.panel = panel;
  T* rest = panel + g.rows * g.panels * g.k;
  switch (g.rows) {
    case 2: run_blocks<T, 2>(w, rest, used); break;
    case 4: run_blocks<T, 4>(w, rest, used); break;
    case 6: run_blocks<T, 6>(w, rest, used); break;
    default:
      if constexpr (kVectorRegisters >= 32) {
        switch (g.rows) {
          case 8: run_blocks<T, 8>(w, rest, used); break;
          case 10: run_blocks<T, 10>(w, rest, used); break;
          default: run_blocks<T, 12>(w, rest, used); break;
        }
      }
      break;
  }
  return 1;
}

std::size_t gett_float(const Problem& p, float alpha, const float* a, const float* b, float beta, float* c) {
  return run<float>(p, alpha, a, b, beta, c);
}
std::size_t gett_double(const Problem& p, double alpha, const double* a, const double* b, double beta, double* c) {
  return run<double>(p, alpha, a, b, beta, c);
}

}  // namespace
}  // namespace tenex::detail::cpu::contraction::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tenex::detail::cpu::contraction {

HWY_EXPORT(gett_float);
HWY_EXPORT(gett_double);

int gett_panel_operand(const Problem& p) { return p.complex ? -1 : roles(p).panel; }

bool gett_boxed(const Problem& p, std::size_t threads) { return blocking(p, threads, chosen_tile(p)).boxed; }

std::size_t gett_scratch_elements(const Problem& p, std::size_t threads) {
  return scratch_elements(blocking(p, threads, chosen_tile(p)), threads);
}

template <class T>
std::size_t run_gett(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  if constexpr (std::is_same_v<T, float>) {
    return TENEX_SIMD_DISPATCH(gett_float)(p, alpha, a, b, beta, c);
  } else {
    return TENEX_SIMD_DISPATCH(gett_double)(p, alpha, a, b, beta, c);
  }
}

template std::size_t run_gett<float>(const Problem&, float, const float*, const float*, float, float*);
template std::size_t run_gett<double>(const Problem&, double, const double*, const double*, double, double*);

}  // namespace tenex::detail::cpu::contraction
#endif  // HWY_ONCE
