// The GETT kernel's driver (gett_kernel.hpp): c[M, N] = sum over K of small[M, K] big[K, N]
// for M <= kGettMost, the large operand packed from its own strides a block at a time. Each
// task packs a block of N (gett_blocking.hpp says how the problem is cut), multiplies it by the
// panels with the micro-kernels (gett_micro_kernels_inl.hpp) and writes its sums to c. Written
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
#include <iterator>
#include <type_traits>
#include <vector>

#include "tenex/backend/cpu/gett_blocking.hpp"
#include "tenex/backend/cpu/gett_kernel.hpp"
#include "tenex/backend/cpu/operand_offsets.hpp"
#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/backend/cpu/simd.hpp"
#include "tenex/backend/cpu/thread_partition.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::contraction {
namespace {

using gett::blocking;
using gett::Blocking;
using gett::box_stage_elements;
using gett::ceil_div;
using gett::kBoxModes;
using gett::kBoxStageBytes;
using gett::kPanelOuterK;
using gett::kPanelRows;
using gett::kStreamStoreBytes;
using gett::panel_rows_for;
using gett::scratch_elements;
using gett::Tile;

// A run of the strip operand's values that lie together in memory and in one strip.
struct Run {
  std::ptrdiff_t from = 0;  // offset in the operand, k aside
  std::size_t to = 0;       // offset in the packed block, k aside
  std::size_t length = 0;   // at most a strip
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
#include "tenex/backend/cpu/gett_micro_kernels_inl.hpp"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::contraction::HWY_NAMESPACE {
using cpu::HWY_NAMESPACE::kVectorRegisters;
using cpu::HWY_NAMESPACE::Vec;
// Internal linkage: each kernel file compiles itself per target into the same namespaces.
namespace {

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

// The values of N a task covers: the first, and how many.
struct BlockOfN {
  std::size_t n0 = 0, count = 0;
};

// Task `t`'s values of N: block t / m_parts, or a box's.
HWY_INLINE BlockOfN block_of_n(const Blocking& g, std::size_t t) {
  std::size_t n0 = t / g.m_parts * g.nc, count = std::min(g.nc, g.n - n0);
  if (g.boxed) {  // values chunk * box_q on of the cut mode, at value `outer` of the modes outside it
    const std::size_t outer = t / g.box_per_outer, chunk = t % g.box_per_outer;
    n0 = (outer * g.box_cut + chunk * g.box_q) * g.box_inner;
    count = std::min(g.box_q, g.box_cut - chunk * g.box_q) * g.box_inner;
  }
  return BlockOfN{n0, count};
}

// The runs of a block's `count` columns (at strip_n in the strip operand) that lie together
// in memory and in one strip of the packed block (strips `stride` apart).
HWY_INLINE void find_runs(const Blocking& g, std::size_t count, const std::ptrdiff_t* strip_n, std::size_t stride,
                          std::vector<Run>& runs) {
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
}

// The last strip's columns past N (past `count`): zero, for every value of K of a block.
template <class T>
HWY_INLINE void zero_past_n(const Blocking& g, std::size_t count, std::size_t strips, std::size_t stride, T* block) {
  T* last = block + (strips - 1) * stride;
  for (std::size_t k = 0; k < g.kc; ++k) {
    std::fill(last + k * g.strip + count % g.strip, last + (k + 1) * g.strip, T(0));
  }
}

// Each vector's lanes of a block's `columns` (`count` of them within N, at c_n in c) in runs
// of c: lists.spans, those of vector v from lists.vector_first[v] on.
template <class T>
HWY_INLINE void find_spans(std::size_t columns, std::size_t count, const std::ptrdiff_t* c_n, Lists& lists) {
  constexpr std::size_t W = Vec<T>::width;
  lists.spans.clear();
  lists.vector_first.clear();
  for (std::size_t j = 0; j < columns; ++j) {
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
}

// Values k0 .. k0 + kc - 1 of K of a block's `count` columns packed into `block`, each vector
// of a strip gathered at once from its columns' offsets `index` (runs of one or two values:
// aebf,fdec->abcd: b's strips numbered in c's order d, c run 900 apart in b; copied a run at
// a time in memory order, its packing took 14% of the kernel's time, gathered 9%;
// aedf,fbec->abcd, a's f innermost: 8% copied down K a column at a time, 4% gathered).
template <class T>
HWY_INLINE void pack_gathered(const Work<T>& w, std::size_t k0, std::size_t kc, std::size_t count, std::size_t strips,
                              const std::ptrdiff_t* index, T* block) {
  constexpr std::size_t W = Vec<T>::width;
  const Blocking& g = w.g;
  const std::size_t stride = g.kc * g.strip;
  // Each vector's lanes within N (the lanes past N stay zero): the vectors before the
  // `whole`-th all of theirs, that one the rest, those after none. Three masks, not one
  // per vector: a block may hold any number of strips (the scalar target's are two
  // values wide, and a c_order block's rows of up to kMostRow bytes span 128 of them).
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
}

// The same, copied a run of the strip operand's memory at a time.
template <class T>
HWY_INLINE void pack_runs(const Work<T>& w, std::size_t k0, std::size_t kc, const std::vector<Run>& runs, T* block) {
  for (std::size_t k = 0; k < kc; ++k) {
    const T* from = w.strip + w.strip_k[k0 + k];
    T* to = block + k * w.g.strip;
    for (const Run& run : runs) copy_run(from + run.from, to + run.to, run.length);
  }
}

// A packed block of K (k0 .. k0 + kc - 1) times panels p0 .. p1 - 1, the sums from the
// registers to c (direct): the first block of K scales c by beta, the later ones add to it.
template <class T, std::size_t R>
HWY_INLINE void multiply_into_c(const Work<T>& w, std::size_t k0, std::size_t kc, std::size_t strips, std::size_t p0,
                                std::size_t p1, const T* block, const Span* spans, const Lists& lists) {
  const Blocking& g = w.g;
  const std::size_t stride = g.kc * g.strip;
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
}

// A packed block of K times every panel, added to the block's sums (set by the first block).
template <class T, std::size_t R>
HWY_INLINE void multiply_into_sums(const Work<T>& w, std::size_t k0, std::size_t kc, std::size_t strips, const T* block,
                                   T* sums) {
  const Blocking& g = w.g;
  const std::size_t stride = g.kc * g.strip;
  for (std::size_t s = 0; s < strips; ++s) {
    for (std::size_t q = 0; q < g.panels; ++q) {
      strip_kernel<T, R>(block + s * stride, w.panel + (q * g.k + k0) * R, kc, sums + q * R * g.ld + s * g.strip, g.ld,
                         k0 == 0);
    }
  }
}

// A block's sums ([rows * panels][ld]) to c, as the blocking says: in boxes, in c's order, or
// a value at a time (the panel operand's values innermost where they are so in c).
template <class T>
HWY_INLINE void write_sums(const Work<T>& w, std::size_t n0, std::size_t count, const std::ptrdiff_t* c_n, T* sums,
                           Lists& lists) {
  const Blocking& g = w.g;
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

// Task `t`: block t / m_parts of N, packed a block of K at a time into `block`
// ([strips][kc][strip]), times panels of part t % m_parts; the sums go to c from the
// registers (direct) or through `sums` ([rows * panels][ld]); a block whose rows lie
// together in the strip operand is not packed (rows_in_place).
template <class T, std::size_t R>
void block_task(const Work<T>& w, std::size_t t, T* block, T* sums, Lists& lists) {
  const Blocking& g = w.g;
  const BlockOfN range = block_of_n(g, t);
  const std::size_t n0 = range.n0, count = range.count;
  const std::size_t part = t % g.m_parts;
  const std::size_t p0 = g.panels * part / g.m_parts, p1 = g.panels * (part + 1) / g.m_parts;
  const std::size_t strips = ceil_div(count, g.strip), stride = g.kc * g.strip;
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
  find_runs(g, count, strip_n, stride, lists.runs);
  // Runs of one or two values on average.
  const bool short_runs = lists.runs.size() * 2 > count;
  if (short_runs) {
    lists.index.assign(strips * g.strip, 0);
    for (std::size_t j = 0; j < count; ++j) lists.index[j] = strip_n[j];
  }
  if (count % g.strip != 0) zero_past_n(g, count, strips, stride, block);
  const Span* spans = nullptr;
  if (g.direct) {
    find_spans<T>(strips * g.strip, count, c_n, lists);
    spans = lists.spans.data();
  }
  for (std::size_t k0 = 0; k0 < g.k; k0 += g.kc) {
    const std::size_t kc = std::min(g.kc, g.k - k0);
    if (short_runs) {
      pack_gathered(w, k0, kc, count, strips, lists.index.data(), block);
    } else {
      pack_runs(w, k0, kc, lists.runs, block);
    }
    if (g.direct) {
      multiply_into_c<T, R>(w, k0, kc, strips, p0, p1, block, spans, lists);
    } else {
      multiply_into_sums<T, R>(w, k0, kc, strips, block, sums);
    }
  }
  if (!g.direct) write_sums(w, n0, count, c_n, sums, lists);
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
