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

// contract(), running `forced` (an index into all_plans) when given, else the cheapest plan.
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
  // Sum out the modes only one operand holds, and take diagonals.
  std::optional<Scratch<T>> a_reduced, b_reduced;
  if (prepared.keep_a != a_modes) {
    a = reduce_operand(a, a_extents, a_modes, prepared.keep_a, prepared.a_extents, a_reduced, counted);
  }
  if (prepared.keep_b != b_modes) {
    b = reduce_operand(b, b_extents, b_modes, prepared.keep_b, prepared.b_extents, b_reduced, counted);
  }

  const Problem& p = prepared.problem;
  counted.flops += prepared.flops;
  const Plan* chosen = nullptr;
  if (forced) {
    const std::vector<Plan>& plans = all_plans(p, prepared.flops);
    if (*forced >= plans.size()) {
      throw std::invalid_argument("contract_with_plan: plan " + std::to_string(*forced) + " of " +
                                  std::to_string(plans.size()));
    }
    chosen = &plans[*forced];
  } else {
    plan_search::Search& search = memo.search;
    if (!memo.started) {
      plan_search::start(search, p, prepared.flops);
      memo.started = true;
    }
    std::size_t calls = 0;
    if (search.mode == plan_search::Mode::measure && plan_search::search_in_call(search, beta == T(0))) {
      // The whole search now; the last candidate's c stands (each run overwrites it whole).
      contraction::touch_pages(c, prepared.c_size);  // c is only written: no candidate pays its first touch
      std::size_t runs = 0, last = 0;
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
      plan_search::publish(search, p, prepared.flops);
      plan_search::ran(search, p, std::min(last, search.candidates.size() - 1), runs);
      counted.calls += calls;
      return counted;
    }
    if (search.mode == plan_search::Mode::measure && !search.chosen) {
      const auto [x, timed] = plan_search::measure_step(search);
      if (timed) {
        plan_search::measure_record(search, timed_run(p, search.candidates[x], alpha, a, b, beta, c, calls, conj));
        if (search.chosen) plan_search::publish(search, p, prepared.flops);
        plan_search::ran(search, p, std::min(x, search.candidates.size() - 1), 1);
        counted.calls += calls;
        return counted;
      }
      chosen = &search.candidates[x];
      plan_search::ran(search, p, x, 1);
    } else if (search.mode == plan_search::Mode::amortized && !search.chosen) {
      const plan_search::Step step = plan_search::next_step(search);
      if (step.timed) {
        const Plan& plan = search.candidates[step.candidate];
        // A candidate's scratch is faulted in before its timer starts (the model's choice runs
        // on every call until the search is paid for: it pays its first touch once).
        double seconds = 0;
        if (step.candidate == 0) {
          const auto start = std::chrono::steady_clock::now();
          calls = run_plan(p, plan, alpha, a, b, beta, c, conj);
          seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        } else {
          seconds = timed_run(p, plan, alpha, a, b, beta, c, calls, conj);
        }
        plan_search::record(search, step, seconds);
        if (search.chosen) plan_search::publish(search, p, prepared.flops);
        plan_search::ran(search, p, step.candidate, 1);
        counted.calls += calls;
        return counted;
      }
      chosen = &search.candidates[step.candidate];
      plan_search::ran(search, p, step.candidate, 1);
    } else {
      chosen = &search.candidates[*search.chosen];
      plan_search::ran(search, p, *search.chosen, 1);
    }
  }
  counted.calls += run_plan(p, *chosen, alpha, a, b, beta, c, conj);
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
