// How the GETT kernel cuts a problem (gett_blocking.hpp), and which problems it takes
// (gett_kernel.hpp: gett_panel_operand, gett_boxed, gett_scratch_elements): the rules and the
// shapes they were measured on. Compiled once, not per SIMD target: the target's tile comes in
// as a parameter.
#include "tenex/backend/cpu/gett_blocking.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/gett_kernel.hpp"
#include "tenex/backend/cpu/operand_offsets.hpp"
#include "tenex/backend/cpu/simd.hpp"

namespace tenex::detail::cpu::contraction {
namespace gett {
namespace {

// first) up to kBlockSpan values.
bool block_spans(const Problem& p, const std::vector<int>& numbered, int d) {
  std::size_t span = 1;
  for (auto it = numbered.rbegin(); it != numbered.rend() && span < kBlockSpan; ++it) {
    if (*it == d) return true;
    span *= p.extent[static_cast<std::size_t>(*it)];
  }
  return false;
}

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

}  // namespace

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

namespace {

// Where c's runs of the strip operand's columns are shorter than a strip (c's modes interleave
// the operands' from its innermost on), the sums written from the registers go to c a few
// lanes at a time, each store on lines the neighbouring strips and panels also write
// (iramc,dprc->admpi: runs of 7 values of i, then p of the panel operand; 1.5 ms of arithmetic,
// 7.4 ms in all). There, where K is short, a block of N is a box of c's modes instead: whole
// values of the strip operand's innermost modes (in c's order) and a range of the next, with
// every panel's rows. Its sums, in a buffer the L2 holds, then go to c in c's order, a
// range of whole lines at a time (write_boxed).
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

}  // namespace

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

}  // namespace gett

int gett_panel_operand(const Problem& p) { return p.complex ? -1 : gett::roles(p).panel; }

bool gett_boxed(const Problem& p, std::size_t threads) {
  return gett::blocking(p, threads, gett::chosen_tile(p)).boxed;
}

std::size_t gett_scratch_elements(const Problem& p, std::size_t threads) {
  return gett::scratch_elements(gett::blocking(p, threads, gett::chosen_tile(p)), threads);
}

}  // namespace tenex::detail::cpu::contraction
