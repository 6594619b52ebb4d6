// How a contraction's plan is chosen (FFTW's planner levels): the mode (TENEX_PLAN_SEARCH, read
// here and nowhere else), the search state of one shape and its steps, and the store of plans
// measured or loaded from a plan file (plan_file.cpp), shared by every thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/machine.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::plan_search {

enum class Mode : unsigned char { estimate, amortized, measure };

struct Settings {
  Mode mode = Mode::amortized;
  // TENEX_PLAN_SEARCH's value when it names no mode (then amortized is used), else empty.
  std::string unknown;
};

// TENEX_PLAN_SEARCH: estimate (or model), amortized (unset, empty or unknown), measure. Read
// each time a thread meets a shape it has no plan for.
Settings read_settings();
const char* mode_name(Mode mode);

// Why the plan that ran was chosen (explain()).
enum class Origin : unsigned char { model, measured, loaded, searching };

// The search's limits (tuning.hpp): candidates timed, at most for small problems, and the
// model's spreads within which a plan is worth a try.
using tuning::kCandidateSpread;
using tuning::kOutputSpread;
using tuning::kPlansTried;
using tuning::kPlansTriedSmall;

// The candidates a search times, from the model's plans (contraction_plan.hpp): the cheapest
// plan first; where it writes c through a buffer or tiles (and is worth
// timing), its twin with the buffer in the other order next (or, where it has none, the
// cheapest plan with the same groups and the other order), whatever the model predicts
// for it; the narrow and GETT kernels where they run (the GETT kernel first instead where the
// model ranks it, with probed rates, and predicts it cheapest: see ranked_gett_plan);
// where the cheapest makes more GEMM calls than another within kCandidateSpread,
// the cheapest of those with the fewest calls; the cheapest of each way to write c (direct,
// or buffered or tiled in either order) within kOutputSpread that no plan so far has; then,
// up to `count` in all, others within kCandidateSpread that differ from every plan before
// them in what they do to memory (which operands they permute, how c is written and in which
// order, whether tiles pack): the plans worth timing when the model's ranking is in doubt
// (the search below). Then, where the model predicts the cheapest to take so little that
// more of them together run within `search_seconds`, the cheapest others within
// kOutputSpread not yet among them, up to kPlansTriedSmall in all: on problems of a
// millisecond the model's error is wider than its spread (a 6-index contraction of a
// millisecond: six candidates ran 1.15-1.3 ms; a plan predicted 1.1x the cheapest, packing a
// chunk by chunk, ran 0.89 ms). Only the cheapest when the plain loops win.
std::vector<contraction::Plan> candidate_plans(const contraction::Problem& p, double flops, std::size_t count,
                                               double search_seconds = 0);

// The plan search of one contraction shape on one thread.
struct Search {
  Mode mode = Mode::amortized;
  std::string key;                            // the shape key of the plan store (shape_key)
  std::vector<contraction::Plan> candidates;  // the model's choice first
  // Seconds per candidate tried (infinity: discarded); measure fills it in order.
  std::vector<double> seconds;
  std::size_t calls = 0;  // calls that ran a candidate (measure: the untimed first one too)
  std::optional<std::size_t> chosen;
  Origin origin = Origin::model;
  // amortized: every call's seconds, the seconds spent on candidates other than the model's,
  // the model's choice's best time, and the next candidate to try.
  double accumulated = 0, spent = 0, model_seconds = std::numeric_limits<double>::infinity();
  std::size_t next = 1, trials = 0;
  // The description of the plan that ran last, for explain() (built when the plan changes).
  std::shared_ptr<const std::string> ran;
  std::optional<std::size_t> ran_index;
};

// The key of a shape in the plan store and the plan file: element size, beta zero or not,
// threads, and each operand's modes and extents (no spaces).
std::string shape_key(std::size_t element_size, bool complex, bool beta_zero, int threads,
                      const std::vector<int>& a_modes, const std::vector<std::size_t>& a_extents,
                      const std::vector<int>& b_modes, const std::vector<std::size_t>& b_extents,
                      const std::vector<int>& c_modes);

// A plan's identity across processes: its description without the model's predicted time.
std::string plan_identity(const contraction::Problem& p, const contraction::Plan& plan);

// The candidates of a new shape (or the plan the store holds for it, checked against
// all_plans: an entry that no longer matches is dropped).
void start(Search& search, const contraction::Problem& p, double flops);

// amortized: the candidate this call runs, and whether to time it (LastCall's spent,
// accumulated and model_seconds: the search before this call).
struct Step {
  std::size_t candidate = 0;
  bool timed = false;
};
Step next_step(Search& search);
// amortized: what the call of `step` took.
void record(Search& search, const Step& step, double seconds);

// After a call: records, for explain() and the tests (note, last_call), that `x` of the
// candidates ran (`runs` plans in this call).
void ran(Search& search, const contraction::Problem& p, std::size_t x, std::size_t runs);

// measure: the per-call steps of the search spread over calls (larger problems, beta != 0).
std::pair<std::size_t, bool> measure_step(Search& search);
void measure_record(Search& search, double seconds);
// measure: keeps the fastest candidate timed so far.
void settle(Search& search);
// measure: whether this call runs the whole search (a problem predicted under
// kSearchInCallSeconds whose c is only written, on its first call)...
bool search_in_call(const Search& search, bool beta_zero);
// ...and that search: `warm(x)` runs candidate x untimed, `timed(x)` runs it and returns its
// seconds. Each run overwrites c whole; the last one's c stands.
void run_search_in_call(Search& search, const std::function<void(std::size_t)>& warm,
                        const std::function<double(std::size_t)>& timed);

// After the search settles: the plan kept for the shape in the shared store (saved with the
// plan file).
void publish(const Search& search, const contraction::Problem& p, double flops);

// The rates the model uses, flops per second of one core, for element size 4 or 8: the GEMM's
// and the GETT kernel's, probed on this machine (machine.hpp) or loaded from a plan file, each
// kept within tuning::kRateClamp of its constant; the constant (`probed` false) where
// TENEX_PROBE=0, or where nothing is known and the calling thread plans no contraction of
// tuning::kProbeMinFlops or more (RateScope). The first such contraction of an element size
// runs the probe, once per process.
struct ModelRate {
  double rate = 0;
  bool probed = false;
};
ModelRate gemm_rate(std::size_t element_size);
ModelRate gett_rate(std::size_t element_size);
// While alive, the calling thread plans a contraction of `flops`: the probe may run.
struct RateScope {
  explicit RateScope(double flops);
  ~RateScope();
  RateScope(const RateScope&) = delete;
  RateScope& operator=(const RateScope&) = delete;
  bool previous;
};
// Test hook: the rates the model uses from now on (flops per second of one core), as if probed.
void set_rates_for_testing(std::size_t element_size, double gemm, double gett);
// One line on the rates known (explain(), plan_file_status()), or empty where none is.
std::string rates_text();

// What the calls of contractions on this thread ran since the last take_notes() (at most
// kNotesKept calls): the plan and why. Kept without building text; note_text writes a line,
// "<plan> [<origin>]".
struct Note {
  std::shared_ptr<const std::string> plan;
  Origin origin = Origin::model;
  std::size_t tried = 0, candidates = 0;
};
void note(const Search& search);
std::vector<Note> take_notes();
std::string note_text(const Note& note);

// Test hooks: the plan runs of this thread's last contraction call (a search run counts each
// candidate it ran), and the state of that call's search.
struct LastCall {
  std::size_t plan_runs = 0;
  Origin origin = Origin::model;
  std::size_t tried = 0, candidates = 0;  // candidates run so far (the model's included), listed
  std::optional<std::size_t> chosen;
  std::shared_ptr<const std::string> plan;  // identity of the plan that ran last
  // amortized, before this call: the search's cost so far, the shape's accumulated seconds and
  // the model plan's best time (a candidate may run only while the first plus kTrialLimit
  // times the last stay within kSearchShare of the second).
  double spent = 0, accumulated = 0, model_seconds = 0;
};
// amortized: kSearchShare and kTrialLimit, for the tests.
double search_share();
double trial_limit();
LastCall& last_call();
// Forgets this thread's planner state (the shapes it has met) and, with `store`, the shared
// store's plans and rates too: as a fresh process would start.
void reset_for_testing(bool store);
// Whether the shapes this thread holds (contract.cpp) are out of date: a plan file was
// loaded, or the test hook reset them, since `seen` (updated).
bool shapes_stale(std::uint64_t& seen);

// The plans measured or loaded, and the machine's rates, shared by every thread. The first
// use loads TENEX_PLAN_FILE and arranges for it to be written when the process ends.
struct StoredPlan {
  std::size_t index = 0;  // in all_plans
  std::string identity;   // plan_identity, checked on use
  Origin origin = Origin::measured;
};
struct Store {
  std::mutex mutex;
  std::map<std::string, StoredPlan> plans;
  machine::Rates rates;      // probed or loaded; 0: unknown
  double probe_seconds = 0;  // what this process's probes took
  std::string file_status;   // the last plan file's fate (plan_file_status)
};
Store& store();
// Bumps the generation that shapes_stale compares with (after plans are loaded).
void store_changed();

}  // namespace tenex::detail::cpu::plan_search
