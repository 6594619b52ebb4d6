// Tensor contraction on the CPU as loops over GEMM calls (cblas), after the fewest and
// smallest permutations: the public entry, cpu::contract (kernels.hpp).
//
// The steps, each in its own file:
//   - contraction_problem: the modes and extents checked, and the canonical problem;
//   - operand_reduction: modes that one operand holds alone summed out of it;
//   - contraction_plan: the plans (each one kernel kind: plain loops, narrow, GETT or GEMM),
//     their cost model, and the plan caches;
//   - plan_search: the candidates worth timing, which one runs on each call
//     (TENEX_PLAN_SEARCH), and the plans kept for every thread and the plan file (plan_file);
//   - plan_execution: the plain loops, or the chosen plan: operands packed afresh
//     (operand_layout), the GEMMs of the loop nest (gemm_nest, gemm_call), c written in
//     place, through a buffer or by tiles;
//   - thread_partition, single_threaded_blas: the GEMMs shared among the OpenMP threads
//     while the BLAS runs on one thread.
// Scratch memory (scratch.hpp) comes from the block cache that tensors use.
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/contraction_problem.hpp"
#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/operand_reduction.hpp"
#include "tenex/backend/cpu/plan_execution.hpp"
#include "tenex/backend/cpu/plan_search.hpp"
#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {
namespace {

using contraction::all_plans;
using contraction::describe;
using contraction::Plan;
using contraction::prepare;
using contraction::Prepared;
using contraction::Problem;
using contraction::reduce_operand;
using contraction::run_plan;

template <class T>
void scale_c(T beta, T* c, std::size_t n, KernelCount& count) {
  if (beta == T(0)) {
#pragma omp parallel for schedule(static) if (n >= (std::size_t{1} << 15) && !omp_in_parallel())
    for (std::size_t x = 0; x < n; ++x) c[x] = T(0);
    count.calls += 1;
  } else if (beta != T(1)) {
    const KernelCount scaled = scale(beta, c, c, n);
    count.flops += scaled.flops;
    count.calls += scaled.calls;
  }
}

// What a contraction of these modes and extents prepares and plans, kept per thread for the
// 16 shapes used last: a loop of small contractions (a statement repeated, which the plan
// cache of the pipeline already spares the graph work) then skips prepare() and the plan
// search, which cost more than the arithmetic of a 2 x 2 product. The search itself, and the
// store of plans every thread shares, are plan_search's.
struct Planned {
  std::size_t element_size;
  bool complex;
  bool beta_zero;
  int threads;
  Extents a_extents, b_extents;
  Modes a_modes, b_modes, c_modes;
  Prepared prepared;
  plan_search::Search search;
  bool started = false;  // search.candidates found (on the first call that runs a plan)
};

template <class T>
double timed_run(const Problem& p, const Plan& plan, T alpha, const T* a, const T* b, T beta, T* c, std::size_t& calls,
                 Conjugated conj) {
  contraction::prefault_scratch<T>(p, plan);
  const auto start = std::chrono::steady_clock::now();
  calls = run_plan(p, plan, alpha, a, b, beta, c, conj);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Planned& planned(std::size_t element_size, bool complex, bool beta_zero, const Extents& a_extents, const Modes& a_modes,
                 const Extents& b_extents, const Modes& b_modes, const Modes& c_modes) {
  thread_local std::vector<Planned> recent;  // most recently used last
  thread_local std::uint64_t seen = 0;
  if (plan_search::shapes_stale(seen)) recent.clear();  // plans were loaded: meet every shape afresh
  const int threads = omp_get_max_threads();
  for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
    if (it->element_size == element_size && it->complex == complex && it->beta_zero == beta_zero &&
        it->threads == threads && it->a_modes == a_modes && it->b_modes == b_modes && it->c_modes == c_modes &&
        it->a_extents == a_extents && it->b_extents == b_extents) {
      if (it != recent.rbegin()) std::rotate(it.base() - 1, it.base(), recent.end());
      return recent.back();
    }
  }
  Prepared prepared = prepare(element_size, beta_zero, a_extents, a_modes, b_extents, b_modes, c_modes, complex);
  plan_search::Search search;
  search.mode = plan_search::read_settings().mode;
  search.key = plan_search::shape_key(element_size, complex, beta_zero, threads, a_modes, a_extents, b_modes, b_extents,
                                      c_modes);
  constexpr std::size_t kKept = 16;
  if (recent.size() >= kKept) recent.erase(recent.begin());
  recent.push_back(Planned{element_size, complex, beta_zero, threads, a_extents, b_extents, a_modes, b_modes, c_modes,
                           std::move(prepared), std::move(search), false});
  return recent.back();
}

// What the plan search decides for one call, before any kernel runs: run a plan, time one
// (and record what it took), or run the whole search now (measure, a small problem whose c is
// only written). `forced` (an index into all_plans) runs that plan and leaves the search alone.
struct Decision {
  enum class Act : unsigned char { run, time, search_in_call };
  Act act = Act::run;
  const Plan* plan = nullptr;  // run and time
  std::size_t candidate = 0;   // the plan's index in the search's candidates
  bool noted = true;           // the search hears of it (plan_search::ran): not a forced plan
  bool amortized = false;      // time: the amortized search's step (record), else measure's
  plan_search::Step step;      // time, amortized
};

Decision decide(Planned& memo, std::optional<std::size_t> forced, bool beta_zero) {
  using Act = Decision::Act;
  const Problem& p = memo.prepared.problem;
  const double flops = memo.prepared.flops;
  if (forced) {
    const std::vector<Plan>& plans = all_plans(p, flops);
    if (*forced >= plans.size()) {
      throw std::invalid_argument("contract_with_plan: plan " + std::to_string(*forced) + " of " +
                                  std::to_string(plans.size()));
    }
    return {Act::run, &plans[*forced], *forced, false, false, {}};
  }
  plan_search::Search& search = memo.search;
  if (!memo.started) {
    plan_search::start(search, p, flops);
    memo.started = true;
  }
  if (search.mode == plan_search::Mode::measure && plan_search::search_in_call(search, beta_zero)) {
    return {Act::search_in_call, nullptr, 0, true, false, {}};
  }
  if (search.mode == plan_search::Mode::measure && !search.chosen) {
    const auto [x, timed] = plan_search::measure_step(search);
    return {timed ? Act::time : Act::run, &search.candidates[x], x, true, false, {}};
  }
  if (search.mode == plan_search::Mode::amortized && !search.chosen) {
    const plan_search::Step step = plan_search::next_step(search);
    return {step.timed ? Act::time : Act::run, &search.candidates[step.candidate], step.candidate, true, true, step};
  }
  return {Act::run, &search.candidates[*search.chosen], *search.chosen, true, false, {}};
}

// The operands and the problem a call's kernels read: the modes only one operand holds summed
// out of it and diagonals taken (into `a_reduced`, `b_reduced`).
template <class T>
struct Operands {
  const T* a;
  const T* b;
  std::optional<Scratch<T>> a_reduced, b_reduced;
};

template <class T>
void reduce_operands(const Prepared& prepared, Operands<T>& x, const Extents& a_extents, const Modes& a_modes,
                     const Extents& b_extents, const Modes& b_modes, KernelCount& counted) {
  if (prepared.keep_a != a_modes) {
    x.a = reduce_operand(x.a, a_extents, a_modes, prepared.keep_a, prepared.a_extents, x.a_reduced, counted);
  }
  if (prepared.keep_b != b_modes) {
    x.b = reduce_operand(x.b, b_extents, b_modes, prepared.keep_b, prepared.b_extents, x.b_reduced, counted);
  }
}

// measure's whole search in this call: every candidate run, the fastest kept; the last one's
// c stands (each run overwrites it whole). Returns the GEMM calls of the last run.
template <class T>
std::size_t search_in_call(Planned& memo, T alpha, const T* a, const T* b, T beta, T* c, Conjugated conj) {
  const Problem& p = memo.prepared.problem;
  plan_search::Search& search = memo.search;
  contraction::touch_pages(c, memo.prepared.c_size);  // c is only written: no candidate pays its first touch
  std::size_t calls = 0, runs = 0, last = 0;
  plan_search::run_search_in_call(
      search,
      [&](std::size_t x) {
        contraction::prefault_scratch<T>(p, search.candidates[x]);
        calls = run_plan(p, search.candidates[x], alpha, a, b, beta, c, conj);
        ++runs;
        last = x;
      },
      [&](std::size_t x) {
        ++runs;
        last = x;
        return timed_run(p, search.candidates[x], alpha, a, b, beta, c, calls, conj);
      });
  plan_search::publish(search, p, memo.prepared.flops);
  plan_search::ran(search, p, std::min(last, search.candidates.size() - 1), runs);
  return calls;
}

// A timed candidate: its scratch faulted in before its timer starts (the amortized model's
// choice, candidate 0, runs on every call until the search is paid for: it pays its first
// touch once), what it took recorded, the search published when it settles. Returns its calls.
template <class T>
std::size_t time_candidate(Planned& memo, const Decision& d, T alpha, const T* a, const T* b, T beta, T* c,
                           Conjugated conj) {
  const Problem& p = memo.prepared.problem;
  plan_search::Search& search = memo.search;
  std::size_t calls = 0;
  double seconds = 0;
  if (d.amortized && d.candidate == 0) {
    const auto start = std::chrono::steady_clock::now();
    calls = run_plan(p, *d.plan, alpha, a, b, beta, c, conj);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } else {
    seconds = timed_run(p, *d.plan, alpha, a, b, beta, c, calls, conj);
  }
  if (d.amortized) {
    plan_search::record(search, d.step, seconds);
  } else {
    plan_search::measure_record(search, seconds);
  }
  if (search.chosen) plan_search::publish(search, p, memo.prepared.flops);
  plan_search::ran(search, p, std::min(d.candidate, search.candidates.size() - 1), 1);
  return calls;
}

// contract(), running `forced` (an index into all_plans) when given, else the search's plan:
// the operands reduced, the plan decided (decide), then the kernel run.
template <class T>
KernelCount run_contract(std::optional<std::size_t> forced, T alpha, const T* a, const Extents& a_extents,
                         const Modes& a_modes, const T* b, const Extents& b_extents, const Modes& b_modes, T beta, T* c,
                         const Modes& c_modes, Conjugated conj) {
  if constexpr (!is_complex_v<T>) conj = {};  // the conjugate of a real number is itself
  Planned& memo = planned(sizeof(T), is_complex_v<T>, beta == T(0), a_extents, a_modes, b_extents, b_modes, c_modes);
  const Prepared& prepared = memo.prepared;
  KernelCount counted;
  if (prepared.c_size == 0) return counted;
  if (prepared.empty_sum || alpha == T(0)) {
    scale_c(beta, c, prepared.c_size, counted);
    return counted;
  }
  Operands<T> x{a, b, std::nullopt, std::nullopt};
  reduce_operands(prepared, x, a_extents, a_modes, b_extents, b_modes, counted);
  counted.flops += prepared.flops;
  const Decision d = decide(memo, forced, beta == T(0));
  switch (d.act) {
    case Decision::Act::search_in_call: counted.calls += search_in_call(memo, alpha, x.a, x.b, beta, c, conj); break;
    case Decision::Act::time: counted.calls += time_candidate(memo, d, alpha, x.a, x.b, beta, c, conj); break;
    case Decision::Act::run:
      if (d.noted) plan_search::ran(memo.search, prepared.problem, d.candidate, 1);
      counted.calls += run_plan(prepared.problem, *d.plan, alpha, x.a, x.b, beta, c, conj);
      break;
  }
  return counted;
}

}  // namespace

template <class T>
KernelCount contract(T alpha, const T* a, const Extents& a_extents, const Modes& a_modes, const T* b,
                     const Extents& b_extents, const Modes& b_modes, T beta, T* c, const Modes& c_modes,
                     Conjugated conj) {
  return run_contract<T>(std::nullopt, alpha, a, a_extents, a_modes, b, b_extents, b_modes, beta, c, c_modes, conj);
}

template <class T>
std::size_t contract_plan_count(const Extents& a_extents, const Modes& a_modes, const Extents& b_extents,
                                const Modes& b_modes, const Modes& c_modes, bool beta_zero) {
  const Prepared prepared =
      prepare(sizeof(T), beta_zero, a_extents, a_modes, b_extents, b_modes, c_modes, is_complex_v<T>);
  return all_plans(prepared.problem, prepared.flops).size();
}

template <class T>
KernelCount contract_with_plan(std::size_t plan, T alpha, const T* a, const Extents& a_extents, const Modes& a_modes,
                               const T* b, const Extents& b_extents, const Modes& b_modes, T beta, T* c,
                               const Modes& c_modes, Conjugated conj) {
  return run_contract<T>(plan, alpha, a, a_extents, a_modes, b, b_extents, b_modes, beta, c, c_modes, conj);
}

template <class T>
std::string contract_plan_description(std::size_t plan, const Extents& a_extents, const Modes& a_modes,
                                      const Extents& b_extents, const Modes& b_modes, const Modes& c_modes,
                                      bool beta_zero) {
  const Prepared prepared =
      prepare(sizeof(T), beta_zero, a_extents, a_modes, b_extents, b_modes, c_modes, is_complex_v<T>);
  const Problem& p = prepared.problem;
  const std::vector<Plan>& plans = all_plans(p, prepared.flops);
  if (plan >= plans.size()) {
    throw std::invalid_argument("contract_plan_description: plan " + std::to_string(plan) + " of " +
                                std::to_string(plans.size()));
  }
  return describe(p, plans[plan]);
}

template <class T>
KernelCount assign_scaled(T beta, const T* d, const Modes& d_modes, T* c, const Modes& c_modes,
                          const Extents& c_extents) {
  const std::size_t rank = c_modes.size();
  // d's row-major strides, then read in c's mode order.
  Strides d_own(rank, 1), from(rank, 0), to(rank, 1);
  for (std::size_t x = rank; x-- > 1;) {
    const std::size_t at =
        static_cast<std::size_t>(std::find(c_modes.begin(), c_modes.end(), d_modes[x]) - c_modes.begin());
    d_own[x - 1] = d_own[x] * static_cast<std::ptrdiff_t>(c_extents.at(at));
  }
  for (std::size_t x = rank; x-- > 1;) to[x - 1] = to[x] * static_cast<std::ptrdiff_t>(c_extents[x]);
  for (std::size_t x = 0; x < rank; ++x) {
    const std::size_t at =
        static_cast<std::size_t>(std::find(d_modes.begin(), d_modes.end(), c_modes[x]) - d_modes.begin());
    from[x] = d_own.at(at);
  }
  strided_copy(d, from, c, to, c_extents, beta, T(0));
  KernelCount counted;
  if (beta != T(1)) {
    std::size_t size = 1;
    for (std::size_t e : c_extents) size *= e;
    counted.flops = static_cast<double>(size);
  }
  return counted;
}

#define TENEX_INSTANTIATE_CONTRACT(T)                                                                                 \
  template KernelCount contract<T>(T, const T*, const Extents&, const Modes&, const T*, const Extents&, const Modes&, \
                                   T, T*, const Modes&, Conjugated);                                                  \
  template std::size_t contract_plan_count<T>(const Extents&, const Modes&, const Extents&, const Modes&,             \
                                              const Modes&, bool);                                                    \
  template KernelCount contract_with_plan<T>(std::size_t, T, const T*, const Extents&, const Modes&, const T*,        \
                                             const Extents&, const Modes&, T, T*, const Modes&, Conjugated);          \
  template std::string contract_plan_description<T>(std::size_t, const Extents&, const Modes&, const Extents&,        \
                                                    const Modes&, const Modes&, bool);                                \
  template KernelCount assign_scaled<T>(T, const T*, const Modes&, T*, const Modes&, const Extents&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_CONTRACT)
#undef TENEX_INSTANTIATE_CONTRACT

}  // namespace tenex::detail::cpu
