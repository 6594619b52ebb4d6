// Tensor contraction on the CPU as loops over GEMM calls (cblas), after the fewest and
// smallest permutations: the public entry, cpu::contract (kernels.hpp).
//
// The steps, each in its own file:
//   - contraction_problem: the modes and extents checked, and the canonical problem;
//   - operand_reduction: modes that one operand holds alone summed out of it;
//   - contraction_plan: the candidate plans, their cost model, and the plan caches;
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
#include <cstdlib>
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
#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {
namespace {

using contraction::all_plans;
using contraction::candidate_plans;
using contraction::describe;
using contraction::kPlansTried;
using contraction::Plan;
using contraction::prepare;
using contraction::Prepared;
using contraction::Problem;
using contraction::reduce_operand;
using contraction::run_naive;
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
// search, which cost more than the arithmetic of a 2 x 2 product.
struct Planned {
  std::size_t element_size;
  bool beta_zero;
  int threads;
  Extents a_extents, b_extents;
  Modes a_modes, b_modes, c_modes;
  Prepared prepared;
  // Chosen by measurement: the model's candidates (candidate_plans) run in turn, one per call,
  // each timed; from then on the fastest. Empty until first use.
  std::vector<Plan> candidates;
  std::vector<double> seconds;  // measured, per candidate tried so far
  std::size_t calls = 0;        // calls that ran a candidate, the untimed first one included
  std::optional<std::size_t> chosen;
};

// A contraction tries up to kPlansTried candidates (candidate_plans) before it settles, when
// the model's choice is predicted to take at least kMeasuredSeconds: below it, clock noise
// outweighs what a better plan saves. TENEX_PLAN_SEARCH=model keeps the model's choice (the
// same plan, and the same rounding, on every call).
//
// Where the model's choice is predicted to take less than kSearchInCallSeconds and c is only
// written (beta == 0), the first call of a shape runs the model's choice once untimed (so that
// operands, c and the BLAS's buffers are as warm for the first candidate timed as for the
// last: timed cold, the model's choice for tccg21 lost to a plan 10% slower), then every
// candidate in turn on the whole problem, each overwriting c, and keeps the fastest from the
// second call on: a loop that repeats the contraction pays the search once, in its first
// iteration, and every later iteration runs the fastest plan. That call stops early once it has spent kSearchBudget
// times the fastest candidate's time (a candidate the model misjudged can run several times
// slower than its prediction). Larger problems, and calls that accumulate into c, run the
// model's choice untimed first (it pays for first touch of c), then one candidate per call,
// then the fastest. Before its timer starts, a candidate's scratch is faulted in (and c too,
// in the first call), so that the time is the plan's, not the page faults'.
//
// After that pass, each candidate but the first within kRetimeSpread of the fastest runs
// twice more in a row, nearest first, each keeping its best time, as long as that adds at
// most kConfirmShare to the pass's time. A plan's first run right after another's can take
// half again its time when it repeats (rand110, imgdf,mt->itdgf with c of 78 MB: its GETT
// plan 13-16 ms right after a GEMM plan, 9 ms run after run; the GEMM plan leaves c in this
// machine's 480 MB L3, dirty, and the GETT kernel's streaming stores must evict it first),
// so the pass alone favours the model's choice, which it times right after an untimed run
// of itself.
//
// Small problems get a wider search in that first call: up to kPlansTriedSmall candidates
// (as many as the model predicts to fit in kSearchFloorSeconds), and the search goes on
// until it has spent kSearchFloorSeconds, or kSearchFloorCalls times the fastest candidate
// if that is less, even past kSearchBudget; with time left, the candidates within
// kRetimeSpread of the fastest run again (kRetimeRounds times at most). A single run of a
// millisecond problem varies by 10-25%, the first timed run the most (rand029: 1.48 ms, then
// 1.15-1.21 ms for the same plan), and the model's error on such problems is wider than the
// spread of the six candidates (see candidate_plans).
constexpr double kMeasuredSeconds = 50e-6;
constexpr double kSearchInCallSeconds = 0.25;
constexpr double kSearchBudget = 8.0;
constexpr double kSearchFloorSeconds = 20e-3;
constexpr double kSearchFloorCalls = 40.0;
constexpr double kRetimeSpread = 1.3;
constexpr double kConfirmShare = 1.0;
constexpr int kRetimeRounds = 2;

bool measure_plans() {
  static const bool measure = [] {
    const char* mode = std::getenv("TENEX_PLAN_SEARCH");
    return !(mode && std::string(mode) == "model");
  }();
  return measure;
}

void find_candidates(Planned& memo, const Problem& p, double flops) {
  if (!memo.candidates.empty()) return;
  memo.candidates = candidate_plans(p, flops, measure_plans() ? kPlansTried : 1, kSearchFloorSeconds);
  if (memo.candidates.front().seconds < kMeasuredSeconds) memo.candidates.resize(1);
  if (memo.candidates.size() == 1) memo.chosen = 0;
}

// The plan this call runs when the search is spread over calls: the model's choice untimed on
// the first call, then each candidate timed once, then the fastest. Returns whether to time it.
std::pair<const Plan*, bool> plan_for_call(Planned& memo) {
  if (memo.chosen) return {&memo.candidates[*memo.chosen], false};
  if (memo.calls++ == 0) return {&memo.candidates.front(), false};
  return {&memo.candidates[memo.seconds.size()], true};
}

// Keeps the fastest of the candidates timed so far; the others are dropped.
void settle(Planned& memo) {
  memo.candidates.resize(memo.seconds.size());
  memo.chosen =
      static_cast<std::size_t>(std::min_element(memo.seconds.begin(), memo.seconds.end()) - memo.seconds.begin());
}

void record_time(Planned& memo, double seconds) {
  memo.seconds.push_back(seconds);
  if (memo.seconds.size() == memo.candidates.size()) settle(memo);
}

template <class T>
double timed_run(const Problem& p, const Plan& plan, T alpha, const T* a, const T* b, T beta, T* c,
                 std::size_t& calls) {
  contraction::prefault_scratch<T>(p, plan);
  const auto start = std::chrono::steady_clock::now();
  calls = run_plan(p, plan, alpha, a, b, beta, c);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Planned& planned(std::size_t element_size, bool beta_zero, const Extents& a_extents, const Modes& a_modes,
                 const Extents& b_extents, const Modes& b_modes, const Modes& c_modes) {
  thread_local std::vector<Planned> recent;  // most recently used last
  const int threads = omp_get_max_threads();
  for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
    if (it->element_size == element_size && it->beta_zero == beta_zero && it->threads == threads &&
        it->a_modes == a_modes && it->b_modes == b_modes && it->c_modes == c_modes && it->a_extents == a_extents &&
        it->b_extents == b_extents) {
      if (it != recent.rbegin()) std::rotate(it.base() - 1, it.base(), recent.end());
      return recent.back();
    }
  }
  Prepared prepared = prepare(element_size, beta_zero, a_extents, a_modes, b_extents, b_modes, c_modes);
  constexpr std::size_t kKept = 16;
  if (recent.size() >= kKept) recent.erase(recent.begin());
  recent.push_back(Planned{element_size,
                           beta_zero,
                           threads,
                           a_extents,
                           b_extents,
                           a_modes,
                           b_modes,
                           c_modes,
                           std::move(prepared),
                           {},
                           {},
                           0,
                           std::nullopt});
  return recent.back();
}

// contract(), running `forced` (an index into all_plans) when given, else the cheapest plan.
template <class T>
KernelCount run_contract(std::optional<std::size_t> forced, T alpha, const T* a, const Extents& a_extents,
                         const Modes& a_modes, const T* b, const Extents& b_extents, const Modes& b_modes, T beta, T* c,
                         const Modes& c_modes) {
  Planned& memo = planned(sizeof(T), beta == T(0), a_extents, a_modes, b_extents, b_modes, c_modes);
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
    find_candidates(memo, p, prepared.flops);
    if (!memo.chosen && memo.calls == 0 && beta == T(0) && memo.candidates.front().seconds < kSearchInCallSeconds) {
      // The whole search now; the last candidate's c stands (each run overwrites it whole).
      contraction::touch_pages(c, prepared.c_size);  // c is only written: no candidate pays its first touch
      memo.calls = 1;
      std::size_t calls = 0;
      double spent = 0;
      // The model's choice once untimed first: the operands, c and the BLAS's buffers are then
      // warm for every candidate alike, not only for the ones timed after the first.
      contraction::prefault_scratch<T>(p, memo.candidates.front());
      calls = run_plan(p, memo.candidates.front(), alpha, a, b, beta, c);
      auto fastest = [&] { return *std::min_element(memo.seconds.begin(), memo.seconds.end()); };
      auto search_floor = [&] { return std::min(kSearchFloorSeconds, kSearchFloorCalls * fastest()); };
      while (!memo.chosen) {
        const double seconds = timed_run(p, memo.candidates[memo.seconds.size()], alpha, a, b, beta, c, calls);
        spent += seconds;
        record_time(memo, seconds);
        if (!memo.chosen && spent > std::max(kSearchBudget * fastest(), search_floor())) settle(memo);
      }
      // Then the close ones in their own steady state: each candidate but the first (which ran
      // right after itself) within kRetimeSpread of the fastest, nearest first, twice in a row,
      // keeping its best time, while that adds at most kConfirmShare of the pass's time.
      auto time_again = [&](std::size_t x) {
        const double seconds = timed_run(p, memo.candidates[x], alpha, a, b, beta, c, calls);
        spent += seconds;
        memo.seconds[x] = std::min(memo.seconds[x], seconds);
      };
      const double pass = spent;
      std::vector<std::size_t> close;
      for (std::size_t x = 1; x < memo.seconds.size(); ++x) {
        if (memo.seconds[x] <= kRetimeSpread * fastest()) close.push_back(x);
      }
      std::sort(close.begin(), close.end(),
                [&](std::size_t l, std::size_t r) { return memo.seconds[l] < memo.seconds[r]; });
      for (const std::size_t x : close) {
        if (spent + 2 * memo.seconds[x] > (1 + kConfirmShare) * pass) break;
        time_again(x);
        time_again(x);
      }
      for (int round = 0; round < kRetimeRounds && spent < search_floor(); ++round) {
        const double limit = kRetimeSpread * fastest();
        for (std::size_t x = 0; x < memo.seconds.size() && spent < search_floor(); ++x) {
          if (memo.seconds[x] <= limit) time_again(x);
        }
      }
      settle(memo);
      counted.calls += calls;
      return counted;
    }
    const auto [plan, timed] = plan_for_call(memo);
    if (timed) {
      std::size_t calls = 0;
      record_time(memo, timed_run(p, *plan, alpha, a, b, beta, c, calls));
      counted.calls += calls;
      return counted;
    }
    chosen = plan;
  }
  counted.calls += chosen->naive ? run_naive(p, alpha, a, b, beta, c) : run_plan(p, *chosen, alpha, a, b, beta, c);
  return counted;
}

}  // namespace

template <class T>
KernelCount contract(T alpha, const T* a, const Extents& a_extents, const Modes& a_modes, const T* b,
                     const Extents& b_extents, const Modes& b_modes, T beta, T* c, const Modes& c_modes) {
  return run_contract<T>(std::nullopt, alpha, a, a_extents, a_modes, b, b_extents, b_modes, beta, c, c_modes);
}

template <class T>
std::size_t contract_plan_count(const Extents& a_extents, const Modes& a_modes, const Extents& b_extents,
                                const Modes& b_modes, const Modes& c_modes, bool beta_zero) {
  const Prepared prepared = prepare(sizeof(T), beta_zero, a_extents, a_modes, b_extents, b_modes, c_modes);
  return all_plans(prepared.problem, prepared.flops).size();
}

template <class T>
KernelCount contract_with_plan(std::size_t plan, T alpha, const T* a, const Extents& a_extents, const Modes& a_modes,
                               const T* b, const Extents& b_extents, const Modes& b_modes, T beta, T* c,
                               const Modes& c_modes) {
  return run_contract<T>(plan, alpha, a, a_extents, a_modes, b, b_extents, b_modes, beta, c, c_modes);
}

template <class T>
std::string contract_plan_description(std::size_t plan, const Extents& a_extents, const Modes& a_modes,
                                      const Extents& b_extents, const Modes& b_modes, const Modes& c_modes,
                                      bool beta_zero) {
  const Prepared prepared = prepare(sizeof(T), beta_zero, a_extents, a_modes, b_extents, b_modes, c_modes);
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
                                   T, T*, const Modes&);                                                              \
  template std::size_t contract_plan_count<T>(const Extents&, const Modes&, const Extents&, const Modes&,             \
                                              const Modes&, bool);                                                    \
  template KernelCount contract_with_plan<T>(std::size_t, T, const T*, const Extents&, const Modes&, const T*,        \
                                             const Extents&, const Modes&, T, T*, const Modes&);                      \
  template std::string contract_plan_description<T>(std::size_t, const Extents&, const Modes&, const Extents&,        \
                                                    const Modes&, const Modes&, bool);                                \
  template KernelCount assign_scaled<T>(T, const T*, const Modes&, T*, const Modes&, const Extents&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_CONTRACT)
#undef TENEX_INSTANTIATE_CONTRACT

}  // namespace tenex::detail::cpu
