// The plan search of contractions (plan_search.hpp): FFTW's planner levels.
//
//   - estimate: the cost model's plan, always; the model's constant GEMM rates, nothing timed.
//   - amortized (the default): the model's plan runs at once, each call timed by one clock
//     read. Another candidate runs (one per call, never several) only once the search has cost
//     at most kSearchShare of the shape's accumulated time, and only one the model predicts
//     within kTrialLimit of the model plan's measured time, or of its predicted time where the
//     machine runs it faster; a candidate that runs slower than kTrialLimit times the model
//     plan is discarded. With every candidate tried, the fastest is kept.
//   - measure: the first call of a small problem whose c is only written times every candidate
//     in that call; larger problems, and calls that accumulate into c, time one per call.
//     Steady-state benchmarks use it: the first call pays for the whole search.
#include "tenex/backend/cpu/plan_search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/settings.hpp"

namespace tenex::detail::cpu::plan_search {

// The search's constants (tuning.hpp).
using tuning::kConfirmShare;
using tuning::kMeasuredSeconds;
using tuning::kNotesKept;
using tuning::kPlansTried;
using tuning::kRetimeRounds;
using tuning::kRetimeSpread;
using tuning::kSearchBudget;
using tuning::kSearchFloorCalls;
using tuning::kSearchFloorSeconds;
using tuning::kSearchInCallSeconds;
using tuning::kSearchShare;
using tuning::kTrialLimit;

// ---------------------------------------------------------------------------------------

namespace {

std::atomic<std::uint64_t> store_generation{1};
thread_local std::uint64_t thread_epoch = 0;
thread_local bool probe_allowed = false;
std::mutex probe_mutex;  // one probe at a time
thread_local std::vector<Note> notes;

}  // namespace

Settings read_settings() {
  Settings settings;
  const char* value = setting(Setting::plan_search);
  const std::string mode = value ? value : "";
  if (mode == "estimate" || mode == "model") {
    settings.mode = Mode::estimate;
  } else if (mode == "measure") {
    settings.mode = Mode::measure;
  } else if (!mode.empty() && mode != "amortized") {
    settings.unknown = mode;
  }
  return settings;
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::estimate: return "estimate";
    case Mode::amortized: return "amortized";
    case Mode::measure: return "measure";
  }
  return "amortized";
}

std::string shape_key(std::size_t element_size, bool complex, bool beta_zero, int threads,
                      const std::vector<int>& a_modes, const std::vector<std::size_t>& a_extents,
                      const std::vector<int>& b_modes, const std::vector<std::size_t>& b_extents,
                      const std::vector<int>& c_modes) {
  // Appended piece by piece: GCC 12 at -O3 gives a false -Wrestrict on `"literal" + std::string`.
  std::string key(complex ? (element_size == 8 ? "c" : "z") : (element_size == 4 ? "f" : "d"));
  key += std::to_string(element_size);
  key += beta_zero ? ";b0" : ";b1";
  key += ";t";
  key += std::to_string(threads);
  auto list = [&](char name, const auto& values) {
    key += ';';
    key += name;
    key += ':';
    for (std::size_t x = 0; x < values.size(); ++x) {
      if (x > 0) key += ',';
      key += std::to_string(values[x]);
    }
  };
  list('a', a_modes);
  list('A', a_extents);
  list('b', b_modes);
  list('B', b_extents);
  list('c', c_modes);
  return key;
}

std::string plan_identity(const contraction::Problem& p, const contraction::Plan& plan) {
  std::string text = contraction::describe(p, plan);
  const std::size_t model = text.rfind("; model ");
  if (model != std::string::npos) text.resize(model);
  return text;
}

// ---------------------------------------------------------------------------------------
// The candidates.

namespace {

using contraction::extent_of;
using contraction::Gemm;
using contraction::KindPlans;
using contraction::memory_layout;
using contraction::Output;
using contraction::Plan;
using contraction::Problem;
using tuning::kTwinSeconds;
using tuning::tile_bytes;

}  // namespace

namespace {

// The best plan's twin with c's buffer in the other order, or, where no plan differs from the
// best in c's order alone, the cheapest with c in the other order and the same GEMM groups
// (see candidate_plans), from the GEMM plans `gemm`; none where neither exists.
std::optional<Plan> twin_plan(const std::vector<Plan>& gemm, const Gemm& chosen) {
  std::optional<Plan> twin, stand_in;
  for (const Plan& plan : gemm) {
    const Gemm& x = *plan.gemm();
    if (x.flip_c == chosen.flip_c || x.output != chosen.output || x.gm != chosen.gm || x.gn != chosen.gn ||
        x.gk != chosen.gk || x.tiles != chosen.tiles) {
      continue;
    }
    if (!twin && x.permute_a == chosen.permute_a && x.permute_b == chosen.permute_b &&
        x.tile_pack == chosen.tile_pack && x.flip_a == chosen.flip_a && x.flip_b == chosen.flip_b) {
      twin = plan;
    }
    if (!stand_in || plan.seconds < stand_in->seconds) stand_in = plan;
  }
  if (!twin) twin = stand_in;
  return twin;
}

// The cheapest of `others` (cheapest first) that makes the fewest GEMM calls, added to `plans`
// where the best makes more and it is within kCandidateSpread of the best.
void add_fewest_calls(const Problem& p, const Plan& best, const std::vector<Plan>& others, std::size_t count,
                      std::vector<Plan>& plans) {
  double points = 1;  // the product of every extent
  for (std::size_t e : p.extent) points *= static_cast<double>(e);
  auto calls = [&](const Plan& plan) {
    const Gemm& x = *plan.gemm();
    return points / static_cast<double>(extent_of(p, x.gm) * extent_of(p, x.gn) * extent_of(p, x.gk));
  };
  if (!others.empty() && plans.size() < count) {
    const Plan* fewest = &others.front();
    for (const Plan& x : others) {
      if (calls(x) < calls(*fewest)) fewest = &x;
    }
    if (calls(*fewest) < calls(best) && fewest->seconds <= best.seconds * kCandidateSpread) plans.push_back(*fewest);
  }
}

// Each of `others` in turn whose kind (`kind` of its memory_layout) no plan of `plans` has,
// added, up to `count` plans.
template <class Kind>
void add_kinds(const std::vector<Plan>& others, std::size_t count, Kind kind, std::vector<Plan>& plans) {
  for (const Plan& plan : others) {
    if (plans.size() >= count) break;
    const bool seen = std::any_of(plans.begin(), plans.end(),
                                  [&](const Plan& x) { return kind(memory_layout(x)) == kind(memory_layout(plan)); });
    if (!seen) plans.push_back(plan);
  }
}

// Every plan within kOutputSpread of the best, small operands packed chunk by chunk and tiled
// plans of few flops among them (as all_plans has them), cheapest first.
// (kind_plans with `every`: the one second walk over the kinds, for small problems only).
std::vector<Plan> wider_plans(const Problem& p, double flops, const Plan& best) {
  std::vector<Plan> wider;
  for (const Plan& plan : contraction::kind_plans(p, flops, true).gemm) {
    if (plan.seconds <= best.seconds * kOutputSpread) wider.push_back(plan);
  }
  std::stable_sort(wider.begin(), wider.end(), [](const Plan& x, const Plan& y) { return x.seconds < y.seconds; });
  return wider;
}

}  // namespace

std::vector<Plan> candidate_plans(const Problem& p, double flops, std::size_t count, double search_seconds) {
  // One walk over the kinds (the search costs milliseconds on problems with many modes).
  const KindPlans kinds = contraction::kind_plans(p, flops, false);
  std::vector<Plan> plans;
  if (count < 2) {
    plans.push_back(kinds.cheapest);
    return plans;
  }
  Plan best = kinds.naive;
  std::vector<Plan> others;
  for (const Plan& plan : kinds.gemm) {
    if (plan.seconds < best.seconds) best = plan;
    if (plan.seconds <= best.seconds * kOutputSpread) others.push_back(plan);
  }
  // The GETT kernel first where the model ranks it (probed rates) and predicts it cheapest.
  std::optional<Plan> gett_first = kinds.gett_ranked ? kinds.gett : std::nullopt;
  if (gett_first && gett_first->seconds < best.seconds) {
    plans.push_back(*gett_first);
  } else {
    gett_first.reset();
  }
  plans.push_back(best);
  if (best.naive()) return plans;
  const Gemm& chosen = *best.gemm();
  // The best plan's twin with c's buffer in the other order comes next, whatever the model
  // predicts for it: which order the GEMM writes c in decides how OpenBLAS orients its
  // kernel, which the model does not see (a 3-index c from 3-index operands in float: the model's tiled plan, predicted
  // 11 ms, runs 29 ms; its twin, predicted 24.5 ms, runs 22 ms). A second pass over the plans,
  // only for buffered and tiled choices worth timing. Where no plan differs from the best in
  // c's order alone, the cheapest with c in the other order and the same GEMM groups stands in
  // (khg,ekha->gae: the model's buffered plan permutes a, flipped, predicted 5 ms,
  // and runs 18 ms; no plan writes the other buffer with a flipped; the stand-in, a as is,
  // runs 13.5 ms).
  if (chosen.output != Output::direct && best.seconds >= kTwinSeconds) {
    std::optional<Plan> twin = twin_plan(kinds.gemm, chosen);
    if (twin && plans.size() < count) plans.push_back(*twin);
  }
  // The narrow kernel next, where it can run, whatever the model predicts for it: it is the
  // one plan that neither permutes nor calls the BLAS, and the model has no measurement of it.
  if (kinds.narrow && plans.size() < count) plans.push_back(*kinds.narrow);
  if (kinds.gett && !gett_first && plans.size() < count) plans.push_back(*kinds.gett);
  std::erase_if(others, [&](const Plan& x) { return x.seconds > best.seconds * kOutputSpread; });
  std::stable_sort(others.begin(), others.end(), [](const Plan& x, const Plan& y) { return x.seconds < y.seconds; });
  // The cheapest plan that makes the fewest GEMM calls comes next where the best makes more:
  // the model overstates what one large GEMM and a permutation of c cost against many
  // smaller GEMMs that write c in place (acd,db->abc: 170 GEMMs of 161 x 161 x 170
  // direct, predicted 23 ms, run 30 ms; one GEMM of 27370 x 161 x 170 into a buffer,
  // predicted 33 ms, runs 25 ms).
  add_fewest_calls(p, best, others, count, plans);
  // Then the cheapest way to write c, and in which order, that no plan so far has (within
  // kOutputSpread), then the cheapest of each kind of plan (within kCandidateSpread). The
  // narrow and GETT kernels count by their memory_layout: c written directly, nothing permuted.
  add_kinds(
      others, count, [](const Gemm& x) { return std::make_pair(x.output, x.flip_c); }, plans);
  // The wider list for small problems, up to as many plans as fit the search's time.
  const double fit =
      search_seconds > 0 ? std::min(search_seconds / best.seconds, static_cast<double>(kPlansTriedSmall)) : 0;
  const std::size_t most = std::max(count, static_cast<std::size_t>(fit));
  const std::vector<Plan> wider = most > count ? wider_plans(p, flops, best) : std::vector<Plan>{};
  std::erase_if(others, [&](const Plan& x) { return x.seconds > best.seconds * kCandidateSpread; });
  // What a plan does to memory. Permuting even an operand that fits the L2 counts: it can
  // turn a transposed GEMM operand into a plain one, which the model hardly sees
  // (zwr,puz->urwp: permuting b, 200 KB, as well as a runs 2.0 ms against 4.3 ms in
  // bench_contraction_plans).
  //
  // And whether the part of c one GEMM writes fits the L2: a GEMM of short K over a c larger
  // than that goes through c in memory more than once (OpenBLAS scales c by beta in a pass of
  // its own, then adds the products), which the model does not see
  // (efgc,gdab->abcdef, K = 23: one GEMM of 5888 x 5888 into c direct, predicted 23 ms, runs
  // 58 ms; GEMMs of 368 x 16 per value of two modes, predicted 29 ms, run 35 ms).
  auto part_fits = [&](const Gemm& x) {
    const auto part =
        static_cast<double>(extent_of(p, x.gm) * extent_of(p, x.gn)) * static_cast<double>(p.element_size);
    return part <= tile_bytes();
  };
  add_kinds(
      others, count,
      [&](const Gemm& x) {
        return std::make_tuple(x.permute_a, x.permute_b, x.output, x.tile_pack && (x.permute_a || x.permute_b),
                               x.flip_c, x.k_chunk > 0, part_fits(x));
      },
      plans);
  for (const Plan& plan : wider) {
    if (plans.size() >= most) break;
    if (std::none_of(plans.begin(), plans.end(), [&](const Plan& x) { return x.kernel == plan.kernel; })) {
      plans.push_back(plan);
    }
  }
  return plans;
}

// ---------------------------------------------------------------------------------------
// The search.

Store& store();

void start(Search& search, const contraction::Problem& p, double flops) {
  const RateScope rates(flops);
  if (search.mode != Mode::estimate) {
    std::optional<StoredPlan> stored;
    Store& shared = store();
    {
      const std::lock_guard<std::mutex> lock(shared.mutex);
      const auto it = shared.plans.find(search.key);
      if (it != shared.plans.end()) stored = it->second;
    }
    if (stored) {
      const std::vector<contraction::Plan>& plans = contraction::all_plans(p, flops);
      if (stored->index < plans.size() && plan_identity(p, plans[stored->index]) == stored->identity) {
        search.candidates = {plans[stored->index]};
        search.chosen = 0;
        search.origin = stored->origin;
        return;
      }
      // Another build or machine made it: never a wrong plan.
      const std::lock_guard<std::mutex> lock(shared.mutex);
      shared.plans.erase(search.key);
    }
  }
  const std::size_t count = search.mode == Mode::estimate ? 1 : kPlansTried;
  search.candidates = candidate_plans(p, flops, count, search.mode == Mode::measure ? kSearchFloorSeconds : 0.0);
  if (search.candidates.front().seconds < kMeasuredSeconds) search.candidates.resize(1);
  if (search.candidates.size() == 1) search.chosen = 0;
  search.origin = search.chosen ? Origin::model : Origin::searching;
}

namespace {

void keep_fastest(Search& search) {
  search.chosen =
      static_cast<std::size_t>(std::min_element(search.seconds.begin(), search.seconds.end()) - search.seconds.begin());
  search.origin = Origin::measured;
}

}  // namespace

Step next_step(Search& search) {
  LastCall& last = last_call();
  last.spent = search.spent;
  last.accumulated = search.accumulated;
  last.model_seconds = search.model_seconds;
  if (search.chosen) return {*search.chosen, false};
  // Not yet timed, or not yet paid for: the model's plan, timed.
  const double trial = kTrialLimit * search.model_seconds;
  if (search.calls == 0 || search.spent + trial > kSearchShare * search.accumulated) return {0, true};
  // A candidate runs where the model predicts it within kTrialLimit of the model plan's
  // measured time, or of its predicted time where it ran faster than that: on a core faster
  // than the model's rates (the constants, TENEX_PROBE=0) every plan runs faster than
  // predicted, and measured against predicted seconds no candidate would ever run (issue 45:
  // 192 x 160 x 256 in double at two threads on an AMD Zen 5, the model plan predicted
  // 0.18 ms, the others 0.22 ms on: none tried).
  const double predicted = kTrialLimit * std::max(search.model_seconds, search.candidates.front().seconds);
  while (search.next < search.candidates.size() && search.candidates[search.next].seconds > predicted) {
    search.seconds[search.next++] = std::numeric_limits<double>::infinity();  // predicted too slow
  }
  if (search.next == search.candidates.size()) {
    search.seconds[0] = search.model_seconds;
    keep_fastest(search);
    return {*search.chosen, false};
  }
  return {search.next, true};
}

void record(Search& search, const Step& step, double seconds) {
  if (!step.timed) return;
  if (search.seconds.size() != search.candidates.size()) {
    search.seconds.assign(search.candidates.size(), std::numeric_limits<double>::infinity());
  }
  ++search.calls;
  search.accumulated += seconds;
  if (step.candidate == 0) {
    search.model_seconds = std::min(search.model_seconds, seconds);
    return;
  }
  search.spent += seconds;
  ++search.trials;
  search.seconds[step.candidate] =
      seconds > kTrialLimit * search.model_seconds ? std::numeric_limits<double>::infinity() : seconds;
  search.next = step.candidate + 1;
  if (search.next == search.candidates.size()) {
    search.seconds[0] = search.model_seconds;
    keep_fastest(search);
  }
}

void ran(Search& search, const contraction::Problem& p, std::size_t x, std::size_t runs) {
  if (search.ran_index != x || !search.ran) {
    search.ran = std::make_shared<const std::string>(plan_identity(p, search.candidates[x]));
    search.ran_index = x;
  }
  note(search);
  LastCall& last = last_call();
  last.plan_runs = runs;
  last.origin = search.origin;
  last.candidates = search.candidates.size();
  last.tried = search.mode == Mode::amortized ? search.trials + (search.calls > 0 ? 1 : 0) : search.seconds.size();
  last.chosen = search.chosen;
  last.plan = search.ran;
}

std::pair<std::size_t, bool> measure_step(Search& search) {
  if (search.chosen) return {*search.chosen, false};
  if (search.calls++ == 0) return {0, false};
  return {search.seconds.size(), true};
}

void settle(Search& search) {
  search.candidates.resize(search.seconds.size());
  keep_fastest(search);
}

void measure_record(Search& search, double seconds) {
  search.seconds.push_back(seconds);
  if (search.seconds.size() == search.candidates.size()) settle(search);
}

bool search_in_call(const Search& search, bool beta_zero) {
  return !search.chosen && search.calls == 0 && beta_zero && search.candidates.front().seconds < kSearchInCallSeconds;
}

void run_search_in_call(Search& search, const std::function<void(std::size_t)>& warm,
                        const std::function<double(std::size_t)>& timed) {
  search.calls = 1;
  double spent = 0;
  // The model's choice once untimed first: the operands, c and the BLAS's buffers are then
  // warm for every candidate alike, not only for the ones timed after the first.
  warm(0);
  auto fastest = [&] { return *std::min_element(search.seconds.begin(), search.seconds.end()); };
  auto search_floor = [&] { return std::min(kSearchFloorSeconds, kSearchFloorCalls * fastest()); };
  while (!search.chosen) {
    const double seconds = timed(search.seconds.size());
    spent += seconds;
    measure_record(search, seconds);
    if (!search.chosen && spent > std::max(kSearchBudget * fastest(), search_floor())) settle(search);
  }
  auto time_again = [&](std::size_t x) {
    const double seconds = timed(x);
    spent += seconds;
    search.seconds[x] = std::min(search.seconds[x], seconds);
  };
  const double pass = spent;
  std::vector<std::size_t> close;
  for (std::size_t x = 1; x < search.seconds.size(); ++x) {
    if (search.seconds[x] <= kRetimeSpread * fastest()) close.push_back(x);
  }
  std::sort(close.begin(), close.end(),
            [&](std::size_t l, std::size_t r) { return search.seconds[l] < search.seconds[r]; });
  for (const std::size_t x : close) {
    if (spent + 2 * search.seconds[x] > (1 + kConfirmShare) * pass) break;
    time_again(x);
    time_again(x);
  }
  for (int round = 0; round < kRetimeRounds && spent < search_floor(); ++round) {
    const double limit = kRetimeSpread * fastest();
    for (std::size_t x = 0; x < search.seconds.size() && spent < search_floor(); ++x) {
      if (search.seconds[x] <= limit) time_again(x);
    }
  }
  settle(search);
}

void publish(const Search& search, const contraction::Problem& p, double flops) {
  if (!search.chosen || search.origin != Origin::measured) return;
  const contraction::Plan& plan = search.candidates[*search.chosen];
  const std::string identity = plan_identity(p, plan);
  const std::vector<contraction::Plan>& plans = contraction::all_plans(p, flops);
  for (std::size_t x = 0; x < plans.size(); ++x) {
    if (plan_identity(p, plans[x]) != identity) continue;
    Store& shared = store();
    const std::lock_guard<std::mutex> lock(shared.mutex);
    shared.plans[search.key] = StoredPlan{x, identity, Origin::measured};
    return;
  }
}

RateScope::RateScope(double flops) : previous(probe_allowed) {
  probe_allowed = previous || flops >= tuning::kProbeMinFlops;
}
RateScope::~RateScope() { probe_allowed = previous; }

namespace {

// The rates of element size `element_size` in the store, probed first where none are known
// and the probe may run. Whether they are known.
bool known_rates(std::size_t element_size, machine::Rates& out) {
  if (!machine::probe_enabled()) return false;
  const std::size_t slot = element_size == 4 ? 0 : 1;
  Store& shared = store();
  auto read = [&] {
    const std::lock_guard<std::mutex> lock(shared.mutex);
    out = shared.rates;
    return out.gemm[slot] > 0 && out.gett[slot] > 0;
  };
  if (read()) return true;
  if (!probe_allowed) return false;
  const std::lock_guard<std::mutex> probing(probe_mutex);
  if (read()) return true;
  const machine::Probed got = machine::probe(element_size);
  {
    const std::lock_guard<std::mutex> lock(shared.mutex);
    shared.rates.gemm[slot] = got.gemm;
    shared.rates.gett[slot] = got.gett;
    if (got.copy > 0) shared.rates.copy = got.copy;
    shared.probe_seconds += got.seconds;
  }
  return read();
}

ModelRate model_rate(std::size_t element_size, bool gett) {
  const double gemm_constant = tuning::kCorePeakDouble * 8.0 / static_cast<double>(element_size);
  const double constant = gett ? gemm_constant * tuning::kGettEfficiency : gemm_constant;
  machine::Rates rates;
  if (!known_rates(element_size, rates)) return {constant, false};
  const std::size_t slot = element_size == 4 ? 0 : 1;
  const double rate = gett ? rates.gett[slot] : rates.gemm[slot];
  return {std::clamp(rate, constant / tuning::kRateClamp, constant * tuning::kRateClamp), true};
}

}  // namespace

ModelRate gemm_rate(std::size_t element_size) { return model_rate(element_size, false); }
ModelRate gett_rate(std::size_t element_size) { return model_rate(element_size, true); }

}  // namespace tenex::detail::cpu::plan_search

namespace tenex::detail::cpu::contraction {

ModelRates model_rates(std::size_t element_size) {
  const plan_search::ModelRate gemm = plan_search::gemm_rate(element_size);
  const plan_search::ModelRate gett = plan_search::gett_rate(element_size);
  return {gemm.rate, gett.rate, gemm.probed && gett.probed};
}

}  // namespace tenex::detail::cpu::contraction

namespace tenex::detail::cpu::plan_search {

void set_rates_for_testing(std::size_t element_size, double gemm, double gett) {
  const std::size_t slot = element_size == 4 ? 0 : 1;
  Store& shared = store();
  const std::lock_guard<std::mutex> lock(shared.mutex);
  shared.rates.gemm[slot] = gemm;
  shared.rates.gett[slot] = gett;
}

std::string rates_text() {
  Store& shared = store();
  const std::lock_guard<std::mutex> lock(shared.mutex);
  const machine::Rates& r = shared.rates;
  if (!machine::probe_enabled()) return "machine probe: off (TENEX_PROBE=0), the model's constant rates";
  if (!(r.gemm[0] > 0) && !(r.gemm[1] > 0)) return "";
  auto gf = [](double x) {
    return std::to_string(static_cast<int>(x / 1e8 + 0.5) / 10) + "." +
           std::to_string(static_cast<int>(x / 1e8 + 0.5) % 10);
  };
  std::string text = "machine probe (one core):";
  if (r.gemm[1] > 0) text += " dgemm " + gf(r.gemm[1]) + " GF/s, GETT " + gf(r.gett[1]) + " GF/s;";
  if (r.gemm[0] > 0) text += " sgemm " + gf(r.gemm[0]) + " GF/s, GETT " + gf(r.gett[0]) + " GF/s;";
  if (r.copy > 0) text += " copy " + gf(r.copy) + " GB/s";
  if (shared.probe_seconds > 0)
    text += "; probed in " + std::to_string(static_cast<int>(shared.probe_seconds * 1e3 + 0.5)) + " ms";
  return text;
}

void note(const Search& search) {
  if (notes.size() >= kNotesKept || !search.ran) return;
  const std::size_t tried =
      search.mode == Mode::amortized ? search.trials + (search.calls > 0 ? 1 : 0) : search.seconds.size();
  notes.push_back(Note{search.ran, search.origin, tried, search.candidates.size()});
}

std::vector<Note> take_notes() { return std::exchange(notes, {}); }

std::string note_text(const Note& note) {
  std::string line = *note.plan + " [";
  switch (note.origin) {
    case Origin::model: line += "model"; break;
    case Origin::measured: line += "measured"; break;
    case Origin::loaded: line += "loaded"; break;
    case Origin::searching:
      line += "searching " + std::to_string(note.tried) + "/" + std::to_string(note.candidates);
      break;
  }
  return line + "]";
}

double search_share() { return kSearchShare; }
double trial_limit() { return kTrialLimit; }

LastCall& last_call() {
  thread_local LastCall call;
  return call;
}

bool shapes_stale(std::uint64_t& seen) {
  const std::uint64_t now = store_generation.load(std::memory_order_acquire) + thread_epoch;
  if (seen == now) return false;
  seen = now;
  return true;
}

void store_changed() { store_generation.fetch_add(1, std::memory_order_acq_rel); }

void reset_for_testing(bool clear_store) {
  thread_epoch += 1000003;
  notes.clear();
  last_call() = LastCall{};
  if (clear_store) {
    Store& shared = store();
    const std::lock_guard<std::mutex> lock(shared.mutex);
    shared.plans.clear();
    shared.rates = machine::Rates{};
    shared.probe_seconds = 0;
  }
}

}  // namespace tenex::detail::cpu::plan_search
