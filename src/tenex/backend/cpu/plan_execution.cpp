#include "tenex/backend/cpu/plan_execution.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <exception>
#include <optional>
#include <span>
#include <stdexcept>
#include <variant>
#include <vector>

#include "tenex/backend/cpu/gemm_nest.hpp"
#include "tenex/backend/cpu/gett_kernel.hpp"
#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/narrow_kernel.hpp"
#include "tenex/backend/cpu/operand_layout.hpp"
#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/backend/cpu/single_threaded_blas.hpp"
#include "tenex/backend/cpu/thread_partition.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu::contraction {

namespace {

// An operand packed per tile: its extents and strides (as it is, and packed) per mode of
// its layout, and the elements of one packed part.
struct TilePack {
  bool on = false;
  Extents extents;
  Strides from, to;
  std::size_t size = 1;
};

bool packs_per_tile(const Gemm& plan) { return plan.output == Output::tiled && plan.tile_pack; }

// The layout an operand is permuted to (for a plan that permutes it).
std::vector<int> operand_layout(const Problem& p, const Gemm& plan, int op) {
  const std::vector<int>& tiles = packs_per_tile(plan) ? plan.tiles : std::vector<int>{};
  return op == kA ? fresh_layout(p, kA, plan.gm, plan.gk, tiles, plan.flip_a)
                  : fresh_layout(p, kB, plan.gk, plan.gn, tiles, plan.flip_b);
}

bool permutes(const Gemm& plan, int op) { return op == kA ? plan.permute_a : plan.permute_b; }

// The elements of one tile of c (all of c for a buffered plan), and of one operand's pack.
std::size_t elements(const Problem& p, const std::vector<int>& layout) {
  std::size_t size = 1;
  for (int d : layout) size *= p.extent[static_cast<std::size_t>(d)];
  return size;
}

std::size_t tile_count(const Problem& p, const Gemm& plan) {
  std::size_t tasks = 1;
  for (int d : plan.tiles) tasks *= p.extent[static_cast<std::size_t>(d)];
  return tasks;
}

// The threads a tiled plan runs its tasks on: each has its own buffer and packs.
std::size_t tile_team(const Problem& p, const Gemm& plan) {
  double flops = 2.0;
  for (std::size_t e : p.extent) flops *= static_cast<double>(e);
  const auto threads = static_cast<std::size_t>(omp_in_parallel() ? 1 : omp_get_max_threads());
  return threads > 1 && tile_count(p, plan) > 1 && flops >= kParallelFlops ? threads : 1;
}

// The problem with gk's slowest mode cut to one chunk (Gemm::k_chunk): the extents of the
// chunk's buffer.
Problem chunk_problem(const Problem& p, const Gemm& plan) {
  Problem chunk = p;
  chunk.extent[static_cast<std::size_t>(plan.gk.front())] = plan.k_chunk;
  return chunk;
}

// The GEMMs of a plan that packs its permuted operand chunk by chunk: for each chunk of
// gk's slowest mode, the chunk is gathered into a buffer (laid out as the whole operand
// would be, with `packed` strides) and the nest's GEMMs over that chunk of k accumulate
// into `target` (beta on the first chunk). `nest` holds the whole problem's loops, with the
// chunk buffer's strides for the permuted operand.
template <class T>
std::size_t run_chunks(const Problem& p, const Gemm& plan, const Nest& nest, const std::vector<std::ptrdiff_t>& packed,
                       T alpha, const T* a, const T* b, T beta, T* target) {
  const int op = plan.permute_a ? kA : kB;
  const auto kc = static_cast<std::size_t>(plan.gk.front());
  const std::size_t extent = p.extent[kc];
  const std::vector<int> layout = operand_layout(p, plan, op);
  Strides from, to;
  Extents extents;
  std::size_t chunk_size = 1, chunk_at = 0;
  for (int d : layout) {
    const auto u = static_cast<std::size_t>(d);
    if (u == kc) chunk_at = extents.size();
    from.push_back(p.stride[op][u]);
    to.push_back(packed[u]);
    extents.push_back(p.extent[u]);
    chunk_size *= u == kc ? plan.k_chunk : p.extent[u];
  }
  Scratch<T> chunk(chunk_size);
  const T* in = op == kA ? a : b;
  // The operand used as it is: its part of the chunk starts at the chunk's first value.
  const std::ptrdiff_t other_stride = op == kA ? p.stride[kB][kc] : p.stride[kA][kc];
  const std::size_t per_value = nest.gemm.k / extent;
  std::size_t calls = 0;
  for (std::size_t x0 = 0; x0 < extent; x0 += plan.k_chunk) {
    const std::size_t length = std::min(plan.k_chunk, extent - x0);
    extents[chunk_at] = length;
    const auto at = static_cast<std::ptrdiff_t>(x0);
    strided_copy(in + at * p.stride[op][kc], from, chunk.get(), to, extents, T(1), T(0));
    Nest part = nest;
    part.gemm.k = per_value * length;
    const T* pa = op == kA ? chunk.get() : a + at * other_stride;
    const T* pb = op == kA ? b + at * other_stride : chunk.get();
    calls += run_nest(part, alpha, pa, pb, x0 == 0 ? beta : T(1), target, true) + 1;
  }
  return calls;
}

// The kernels without GEMM take one block whole; the plain loops none.
template <class T>
void prefault_block(std::size_t elements) {
  Scratch<T> block(elements);
  touch_pages(block.get(), elements);
}

template <class T>
void prefault_kernel(const Problem&, const NaiveLoops&) {}

template <class T>
void prefault_kernel(const Problem& p, const Narrow&) {
  prefault_block<T>(narrow_panel_elements(p));
}

template <class T>
void prefault_kernel(const Problem& p, const Gett&) {
  prefault_block<T>(gett_scratch_elements(p, p.threads));
}

template <class T>
void prefault_kernel(const Problem& p, const Gemm& plan) {
  std::vector<std::size_t> sizes;
  const bool per_tile = packs_per_tile(plan);
  for (int op : {kA, kB}) {
    if (!permutes(plan, op)) continue;
    sizes.push_back(per_tile           ? elements(p, operand_layout(p, plan, op)) * tile_team(p, plan)
                    : plan.k_chunk > 0 ? elements(chunk_problem(p, plan), operand_layout(p, plan, op))
                                       : p.size[static_cast<std::size_t>(op)]);
  }
  if (plan.output != Output::direct) {
    const std::vector<int> c_layout = fresh_layout(p, kC, plan.gm, plan.gn, plan.tiles, plan.flip_c);
    sizes.push_back(elements(p, c_layout) * (plan.output == Output::tiled ? tile_team(p, plan) : 1));
  }
  // All held at once, as the plan holds them, so that each comes back from the cache to the
  // allocation of its size.
  std::vector<std::optional<Scratch<T>>> blocks(sizes.size());
  for (std::size_t x = 0; x < sizes.size(); ++x) {
    blocks[x].emplace(sizes[x]);
    touch_pages(blocks[x]->get(), sizes[x]);
  }
}

// The operands as a GEMM plan's calls read them: each as it is, laid out afresh whole (into a
// copy) or chunk by chunk (by run_chunks), or packed per tile by the tasks (packs); with the
// strides the GEMMs see.
template <class T>
struct GemmOperands {
  const T* a = nullptr;
  const T* b = nullptr;
  std::optional<Scratch<T>> a_copy, b_copy;
  std::vector<std::ptrdiff_t> sa, sb;
  std::array<TilePack, 2> packs;
  std::size_t calls = 0;  // the kernels run to lay them out
};

// Lays out the operands as the plan says (GemmOperands).
template <class T>
void lay_out_operands(const Problem& p, const Gemm& plan, const T* a, const T* b, GemmOperands<T>& x) {
  x.a = a;
  x.b = b;
  x.sa = p.stride[kA];
  x.sb = p.stride[kB];
  // Or packed per tile: each task copies the part of the operand its tile reads.
  const bool per_tile = packs_per_tile(plan);
  if (per_tile) {
    for (int op : {kA, kB}) {
      if (!permutes(plan, op)) continue;
      TilePack& pack = x.packs[static_cast<std::size_t>(op)];
      pack.on = true;
      const std::vector<int> layout = operand_layout(p, plan, op);
      std::vector<std::ptrdiff_t>& strides = op == kA ? x.sa : x.sb;
      strides = dense_strides(p, layout);
      for (int d : layout) {
        const auto u = static_cast<std::size_t>(d);
        pack.extents.push_back(p.extent[u]);
        pack.from.push_back(p.stride[op][u]);
        pack.to.push_back(strides[u]);
      }
      pack.size = elements(p, layout);
    }
  } else if (plan.k_chunk > 0) {
    // Packed chunk by chunk (run_chunks): the GEMMs read the chunk's buffer.
    std::vector<std::ptrdiff_t>& strides = plan.permute_a ? x.sa : x.sb;
    strides = dense_strides(chunk_problem(p, plan), operand_layout(p, plan, plan.permute_a ? kA : kB));
  } else if (plan.permute_a) {
    x.a_copy.emplace(p.size[kA]);
    x.sa = pack_operand(p, kA, operand_layout(p, plan, kA), a, x.a_copy->get());
    x.a = x.a_copy->get();
    ++x.calls;
  }
  if (plan.permute_b && !per_tile && plan.k_chunk == 0) {
    x.b_copy.emplace(p.size[kB]);
    x.sb = pack_operand(p, kB, operand_layout(p, plan, kB), b, x.b_copy->get());
    x.b = x.b_copy->get();
    ++x.calls;
  }
}

// The nest of GEMM calls over the operands' strides as the GEMMs read them and the target's
// (sc): the GEMM's groups, the loops over c's other modes and over K's other modes; the loops
// over the tile modes go to `tile_loops`, each task's tile offset in the operands as they are
// where they are packed per tile.
Nest gemm_nest(const Problem& p, const Gemm& plan, const std::vector<std::ptrdiff_t>& sa,
               const std::vector<std::ptrdiff_t>& sb, const std::vector<std::ptrdiff_t>& sc,
               const std::array<TilePack, 2>& packs, Conjugated conj, std::vector<Loop>& tile_loops) {
  Nest nest;
  Geometry& g = nest.gemm;
  g.m = extent_of(p, plan.gm);
  g.n = extent_of(p, plan.gn);
  g.k = extent_of(p, plan.gk);
  g.a_m = group_stride(sa, plan.gm);
  g.a_k = group_stride(sa, plan.gk);
  g.b_k = group_stride(sb, plan.gk);
  g.b_n = group_stride(sb, plan.gn);
  g.c_m = group_stride(sc, plan.gm);
  g.c_n = group_stride(sc, plan.gn);
  g.conj_a = conj.a;  // in place or laid out afresh, the GEMM reads them conjugated
  g.conj_b = conj.b;
  for (int d : p.order[kC]) {
    const auto u = static_cast<std::size_t>(d);
    if (contains(plan.gm, d) || contains(plan.gn, d)) continue;
    if (contains(plan.tiles, d)) {
      // Packed per tile: the tile's offset is in the operand as it is.
      tile_loops.push_back({p.extent[u], packs[kA].on ? p.stride[kA][u] : sa[u], packs[kB].on ? p.stride[kB][u] : sb[u],
                            p.stride[kC][u]});
    } else {
      nest.outer.push_back({p.extent[u], sa[u], sb[u], sc[u]});
    }
  }
  for (int d : p.order[kA]) {
    const auto u = static_cast<std::size_t>(d);
    if (p.role[u] == Role::k && !contains(plan.gk, d)) nest.inner.push_back({p.extent[u], sa[u], sb[u], 0});
  }
  return nest;
}

// The scatter of a buffer (whole c, or one tile) laid out as `c_layout` (strides sc) into c.
struct Scatter {
  Extents extents;
  Strides from, to;
  std::size_t size = 0;  // the buffer's elements
};

Scatter c_scatter(const Problem& p, const std::vector<int>& c_layout, const std::vector<std::ptrdiff_t>& sc) {
  Scatter s;
  for (int d : c_layout) {
    s.extents.push_back(p.extent[static_cast<std::size_t>(d)]);
    s.from.push_back(sc[static_cast<std::size_t>(d)]);
    s.to.push_back(p.stride[kC][static_cast<std::size_t>(d)]);
  }
  s.size = elements(p, c_layout);
  return s;
}

// With an operand packed per tile, the tiles follow its memory order, so that the packs
// read it as one stream: the largest operand (a, b or c) sets the order.
void order_tiles(const Problem& p, const std::array<TilePack, 2>& packs, std::vector<Loop>& tile_loops) {
  if (!packs[kA].on && !packs[kB].on) return;
  const int lead = p.size[kC] >= std::max(packs[kA].on ? p.size[kA] : 0, packs[kB].on ? p.size[kB] : 0) ? kC
                   : packs[kA].on && (!packs[kB].on || p.size[kA] >= p.size[kB]) ? kA
                                                                                 : kB;
  auto stride = [lead](const Loop& l) { return lead == kA ? l.a : lead == kB ? l.b : l.c; };
  std::stable_sort(tile_loops.begin(), tile_loops.end(),
                   [&](const Loop& x, const Loop& y) { return stride(x) > stride(y); });
}

// A tiled plan's tasks: each tile's GEMMs into the task's buffer (its parts of the operands
// packed first where the plan packs per tile), the buffer then scattered into c. Returns the
// calls.
template <class T>
std::size_t run_tiles(const Problem& p, const Gemm& plan, const Nest& nest, const std::vector<Loop>& tile_loops,
                      const GemmOperands<T>& x, const Scatter& scatter, T alpha, T beta, T* c) {
  const std::array<TilePack, 2>& packs = x.packs;
  const T* a = x.a;
  const T* b = x.b;
  const std::size_t tile_size = scatter.size;
  const std::size_t tasks = count(tile_loops);
  const std::size_t team = tile_team(p, plan);
  const bool par = team > 1;
  Scratch<T> buffers(tile_size * team);
  Scratch<T> a_packs(packs[kA].on ? packs[kA].size * team : 0), b_packs(packs[kB].on ? packs[kB].size * team : 0);
  std::optional<SingleThreadedBlas> single;
  if (par) single.emplace();
  std::size_t nest_calls = 0;
  // An exception must not leave a parallel region: the first is kept and rethrown after it.
  std::exception_ptr error;
#pragma omp parallel if (par)
  {
    const auto me = static_cast<std::size_t>(omp_get_thread_num());
    T* buffer = buffers.get() + tile_size * me;
    T* a_pack = packs[kA].on ? a_packs.get() + packs[kA].size * me : nullptr;
    T* b_pack = packs[kB].on ? b_packs.get() + packs[kB].size * me : nullptr;
#pragma omp for schedule(dynamic)
    for (std::size_t t = 0; t < tasks; ++t) {
      try {
        std::ptrdiff_t oa = 0, ob = 0, oc = 0;
        offsets(tile_loops, t, oa, ob, oc);
        const T* ta = a + oa;
        const T* tb = b + ob;
        if (a_pack) {
          strided_gather(ta, packs[kA].from, a_pack, packs[kA].to, packs[kA].extents);
          ta = a_pack;
        }
        if (b_pack) {
          strided_gather(tb, packs[kB].from, b_pack, packs[kB].to, packs[kB].extents);
          tb = b_pack;
        }
        const std::size_t n = run_nest(nest, alpha, ta, tb, T(0), buffer, false);
        strided_copy(buffer, scatter.from, c + oc, scatter.to, scatter.extents, T(1), beta, false);
        if (t == 0) nest_calls = n;
      } catch (...) {
#pragma omp critical(tenex_contract_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  return tasks * (nest_calls + 1);
}

// The GEMM nest of a GEMM plan: operands laid out as it says, c written in place, through a
// buffer, or one tile at a time.
template <class T>
std::size_t run_gemm(const Problem& p, const Gemm& plan, T alpha, const T* a, const T* b, T beta, T* c,
                     Conjugated conj = {}) {
  GemmOperands<T> x;
  lay_out_operands(p, plan, a, b, x);
  // Where the GEMMs write: c itself, or a buffer (whole c, or one tile per task).
  std::vector<std::ptrdiff_t> sc = p.stride[kC];
  std::vector<int> c_layout;
  if (plan.output != Output::direct) {
    c_layout = fresh_layout(p, kC, plan.gm, plan.gn, plan.tiles, plan.flip_c);
    sc = dense_strides(p, c_layout);
  }
  std::vector<Loop> tile_loops;
  const Nest nest = gemm_nest(p, plan, x.sa, x.sb, sc, x.packs, conj, tile_loops);

  // Direct and buffered plans: every GEMM of the nest into `target`, beta on the first write.
  auto gemms = [&](T first, T* target) {
    if (plan.k_chunk > 0)
      return run_chunks(p, plan, nest, plan.permute_a ? x.sa : x.sb, alpha, x.a, x.b, first, target);
    return run_nest(nest, alpha, x.a, x.b, first, target, true);
  };
  if (plan.output == Output::direct) return x.calls + gemms(beta, c);
  const Scatter scatter = c_scatter(p, c_layout, sc);
  if (plan.output == Output::buffered) {
    Scratch<T> buffer(scatter.size);
    const std::size_t calls = x.calls + gemms(T(0), buffer.get());
    strided_copy(buffer.get(), scatter.from, c, scatter.to, scatter.extents, T(1), beta);
    return calls + 1;
  }
  order_tiles(p, x.packs, tile_loops);
  return x.calls + run_tiles(p, plan, nest, tile_loops, x, scatter, alpha, beta, c);
}

}  // namespace

template <class T>
void prefault_scratch(const Problem& p, const Plan& plan) {
  std::visit([&](const auto& kernel) { prefault_kernel<T>(p, kernel); }, plan.kernel);
}

namespace {

// The operand `op` conjugated element by element into `copy` (its own layout): for the plain
// loops (a GEMM plan reads its operands conjugated).
template <class T>
const T* conjugated_copy(const Problem& p, int op, const T* in, std::optional<Scratch<T>>& copy) {
  const std::size_t n = p.size[static_cast<std::size_t>(op)];
  copy.emplace(n);
  T* out = copy->get();
  [[maybe_unused]] const bool par = n >= (std::size_t{1} << 16);
#pragma omp parallel for if (par)
  for (std::size_t i = 0; i < n; ++i) out[i] = std::conj(in[i]);
  return out;
}

// Runs the kernel a plan names; `conj`: the operands the GEMM reads conjugated in place.
template <class T>
struct Run {
  const Problem& p;
  T alpha;
  const T* a;
  const T* b;
  T beta;
  T* c;
  Conjugated conj;
  std::size_t operator()(const NaiveLoops&) const { return run_naive(p, alpha, a, b, beta, c); }
  // The kernels of real arithmetic; never planned for complex elements (Problem::complex).
  std::size_t operator()(const Narrow&) const {
    if constexpr (is_complex_v<T>) {
      throw std::logic_error("run_plan: the narrow kernel for complex elements");
    } else {
      return run_narrow(p, alpha, a, b, beta, c);
    }
  }
  std::size_t operator()(const Gett&) const {
    if constexpr (is_complex_v<T>) {
      throw std::logic_error("run_plan: the GETT kernel for complex elements");
    } else {
      return run_gett(p, alpha, a, b, beta, c);
    }
  }
  std::size_t operator()(const Gemm& gemm) const { return run_gemm(p, gemm, alpha, a, b, beta, c, conj); }
};

}  // namespace

template <class T>
std::size_t run_plan(const Problem& p, const Plan& plan, T alpha, const T* a, const T* b, T beta, T* c,
                     Conjugated conj) {
  // A GEMM plan reads a conjugated operand conjugated (ConjTrans, ConjNoTrans), whether in
  // place or from the copy it lays out afresh (conjugation commutes with the permutation); the
  // plain loops read a conjugated copy.
  std::optional<Scratch<T>> a_conj, b_conj;
  std::size_t copies = 0;
  if constexpr (is_complex_v<T>) {
    const bool gemm = std::holds_alternative<Gemm>(plan.kernel);
    if (conj.a && !gemm) {
      a = conjugated_copy(p, kA, a, a_conj);
      conj.a = false;
      ++copies;
    }
    if (conj.b && !gemm) {
      b = conjugated_copy(p, kB, b, b_conj);
      conj.b = false;
      ++copies;
    }
  }
  return copies + std::visit(Run<T>{p, alpha, a, b, beta, c, conj}, plan.kernel);
}

#define TENEX_INSTANTIATE_PLAN_EXECUTION(T)                                                                \
  template std::size_t run_plan<T>(const Problem&, const Plan&, T, const T*, const T*, T, T*, Conjugated); \
  template void prefault_scratch<T>(const Problem&, const Plan&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_PLAN_EXECUTION)
#undef TENEX_INSTANTIATE_PLAN_EXECUTION

}  // namespace tenex::detail::cpu::contraction
