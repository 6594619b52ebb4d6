// The driver: which methods run, for how long, and which tree wins (README.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>

#include "tenex/error.hpp"
#include "tenex/graph/contraction_tree/methods.hpp"
#include "tenex/graph/contraction_tree/tree_store.hpp"
#include "tenex/settings.hpp"

namespace tenex::tree {

namespace {

using Clock = std::chrono::steady_clock;

/// Networks ordered exactly by default (3^n splits: 12 inputs take about a millisecond).
constexpr std::size_t exact_inputs = 12;
/// The rate a contraction is predicted to run at, for the budget (flops per second).
constexpr double predicted_rate = 2e10;
/// The search may take this fraction of the predicted contraction time...
constexpr double budget_fraction = 0.1;
/// ...but at least this much...
constexpr double least_seconds = 0.001;
/// ...and at most this much, unless the user asks for more.
constexpr double most_seconds = 1.0;
/// Sampled trees tried whatever the budget, for networks of up to 96 inputs (about 20 us each
/// for 30): a cheap product's tree then depends little on the machine's speed. Larger
/// networks keep to the budget.
std::uint64_t least_rounds(std::size_t inputs) { return inputs >= 96 ? 0 : 24 - inputs / 4; }

double elapsed(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

/// The best tree so far. Under a memory limit (log2 elements) a tree whose largest
/// intermediate exceeds it counts half a doubling of flops per doubling over it: about what
/// slicing it down costs, so the search prefers trees that fit or nearly fit.
struct Best {
  Path path;
  Cost cost;
  std::string method;
  bool found = false;
  double limit = 1e300;
  double key(const Cost& c) const { return c.log2_flops + 0.5 * std::max(0.0, c.log2_largest - limit); }
  /// `a` is a better tree than `b`.
  bool beats(const Cost& a, const Cost& b) const {
    if (limit < 1e299) {
      const double d = key(a) - key(b);
      if (std::abs(d) > 1e-9) return d < 0;
    }
    return cheaper(a, b);
  }
  bool better(const Cost& c) const { return !found || beats(c, cost); }
  void offer(Path p, Cost c, std::string_view how) {
    if (better(c)) {
      path = std::move(p);
      cost = c;
      method = how;
      found = true;
    }
  }
};

/// The time budget by default: 2.5 ms per input up to 40 inputs (0.1 s), 6.25 ms for each
/// input beyond, at most a second (a network of 200 tensors).
double default_seconds(std::size_t inputs) {
  constexpr std::size_t small = 40;
  constexpr double per_input = 0.0025, per_larger_input = 0.00625;
  if (inputs <= small) return per_input * static_cast<double>(inputs);
  return std::min(most_seconds, per_input * small + per_larger_input * static_cast<double>(inputs - small));
}

/// The search's budget: the time budget (the user's, or default_seconds), and for a set's
/// product also at most a tenth of its predicted contraction time (at least a millisecond), so
/// a cheap product never waits on its search.
double budget_for(const Network& network, const Options& options, const Cost& first) {
  const double budget = options.seconds >= 0 ? options.seconds : default_seconds(network.size());
  if (!options.bounded_by_work) return budget;
  const double predicted = first.log2_flops > 60 ? 1e9 : first.flops() / predicted_rate;
  // A tree that does not fit the memory limit is worth a longer look: slicing it multiplies
  // its flops.
  const double least = first.log2_largest > options.log2_max_size ? 20 * least_seconds : least_seconds;
  return std::min(budget, std::max(least, budget_fraction * predicted));
}

/// Greedy's parameters, as sampled.
struct GreedyDraw {
  double weight = 1;       // score = size(ab) / weight - weight (size(a) + size(b))
  double temperature = 0;  // of the Gumbel noise
};

/// A draw: half the rounds from the whole range (weight uniform in 0.1 .. 4 as cotengra's,
/// temperature log-uniform in 1/1024 .. 1), the other half near the draw that gave the best
/// greedy tree so far (a random search that then narrows).
GreedyDraw draw(std::mt19937_64& random, const GreedyDraw* near) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  GreedyDraw d;
  if (near && unit(random) < 0.5) {
    d.weight = std::clamp(near->weight * std::exp2(0.5 * (unit(random) - 0.5)), 0.05, 8.0);
    d.temperature = std::clamp(near->temperature * std::exp2(2 * (unit(random) - 0.5)), 1e-4, 2.0);
  } else {
    d.weight = 0.1 + 3.9 * unit(random);
    d.temperature = std::exp2(-10 + 10 * unit(random));
  }
  return d;
}

/// Sampled greedy restarts and bisections until `seconds` have passed since `start`.
/// `greedy_best` gets the best greedy tree (a second start for reconfiguration: trees of the
/// two methods improve differently).
void sample(const Network& network, double seconds, Clock::time_point start, Best& best, Best& greedy_best,
            std::size_t& trials) {
  std::mt19937_64 random(0x7e6e5ULL + network.size());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const bool bisecting = network.size() >= 16;
  const std::uint64_t least = least_rounds(network.size());
  GreedyDraw best_draw;
  Cost best_greedy;
  bool drawn = false;
  for (std::uint64_t round = 1; round <= least || elapsed(start) < seconds; ++round) {
    if (bisecting && round % 3 == 0) {
      BisectOptions o;
      o.seed = round;
      o.imbalance = 0.02 + 0.5 * unit(random);
      o.leaf_size = 6 + static_cast<std::size_t>(4 * unit(random));
      Path p = bisect(network, o);
      const Cost c = score(network, p);
      best.offer(std::move(p), c, "bisection");
    } else {
      const GreedyDraw d = draw(random, drawn ? &best_draw : nullptr);
      GreedyOptions o;
      o.seed = round;
      o.costmod = d.weight * d.weight;
      o.temperature = d.temperature;
      Path p = greedy(network, o);
      const Cost c = score(network, p);
      if (!drawn || best.beats(c, best_greedy)) {
        best_draw = d;
        best_greedy = c;
        drawn = true;
      }
      greedy_best.offer(p, c, "random-greedy");
      best.offer(std::move(p), c, "random-greedy");
    }
    ++trials;
  }
}

/// log2 elements held while the slices run: one slice's intermediates at their peak, the
/// slices of the inputs that hold a sliced label (each a copy), the running sum, and the
/// intermediates that hold no sliced label (the same in every slice: made once, held across
/// the slices).
double log2_slice_held(const Network& network, const Path& path, const Slicing& s) {
  const Network one = network.with_fixed(s.labels);
  const std::vector<Legs> legs = legs_of(one, path);
  const std::size_t n = network.size();
  std::vector<char> sliced(legs.size(), 0);
  double held = s.sliced.log2_peak;
  for (std::size_t i = 0; i < n; ++i) {
    sliced[i] = std::any_of(network.inputs[i].begin(), network.inputs[i].end(),
                            [&](Label l) { return std::find(s.labels.begin(), s.labels.end(), l) != s.labels.end(); });
    if (sliced[i]) held = log2_add(held, one.log2_size(legs[i]));
  }
  for (std::size_t k = 0; k < path.size(); ++k) {
    const auto [a, b] = path[k];
    sliced[n + k] = sliced[a] || sliced[b];
    for (std::size_t o : {a, b}) {
      if (o >= n && !sliced[o] && sliced[n + k]) held = log2_add(held, one.log2_size(legs[o]));
    }
  }
  if (!legs.empty()) held = log2_add(held, one.log2_size(legs.back()));
  return held;
}

/// Slices whose every intermediate fits `log2_max_size` and whose held elements fit four
/// times that (the limit the caller divided by four): the target is lowered until they do.
Slicing slices_that_fit(const Network& network, const Path& path, const Options& options) {
  double target = options.log2_max_size;
  Slicing least;  // where none fits: the one holding the least (the estimate is an upper bound)
  double least_held = 1e300;
  for (int attempt = 0; attempt < 16; ++attempt, target -= 1) {
    std::optional<Slicing> s = find_slices(network, path, target);
    if (!s) break;
    const double held = log2_slice_held(network, path, *s);
    if (held <= options.log2_max_size + 2) return *s;
    if (held < least_held) {
      least_held = held;
      least = *s;
    }
  }
  return least;
}

Result search(const Network& network, const Options& options, Clock::time_point start);

/// A remembered path (perhaps read from a file) that fits the network.
bool valid(std::size_t inputs, const Path& path) {
  try {
    check_path(inputs, path);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

Options options_from_environment() {
  Options o;
  if (const char* m = tenex::detail::setting(tenex::detail::Setting::order); m && *m) {
    const std::string_view v(m);
    if (v == "greedy") {
      o.method = Method::greedy;
    } else if (v == "dp" || v == "optimal") {
      o.method = Method::dp;
    } else if (v == "hyper") {
      o.method = Method::hyper;
    } else if (v != "auto") {
      throw Error("tenex: TENEX_ORDER=" + std::string(v) + " is not one of auto, greedy, dp, hyper");
    }
  }
  if (const char* b = tenex::detail::setting(tenex::detail::Setting::order_budget); b && *b) {
    char* end = nullptr;
    const double s = std::strtod(b, &end);
    if (end == b || *end != '\0' || !(s >= 0)) {
      throw Error("tenex: TENEX_ORDER_BUDGET=" + std::string(b) + " is not a number of seconds (>= 0)");
    }
    o.seconds = s;
  }
  return o;
}

Result optimize(const Network& network, const Options& options) {
  const Clock::time_point start = Clock::now();
  const std::string key = options.remember && network.size() > exact_inputs ? tree_key(network, options) : "";
  if (!key.empty()) {
    if (std::optional<Path> p = find_tree(key); p && valid(network.size(), *p)) {
      Result result;
      result.path = std::move(*p);
      result.cost = score(network, result.path);
      result.method = "remembered";
      if (options.written) result.log2_written_flops = score(network, *options.written).log2_flops;
      if (result.cost.log2_largest > options.log2_max_size) {
        result.slicing = slices_that_fit(network, result.path, options);
      }
      result.seconds = elapsed(start);
      return result;
    }
  }
  Result result = search(network, options, start);
  if (!key.empty()) remember_tree(key, result.path);
  return result;
}

namespace {

/// The search itself (optimize() without the tree store).
Result search(const Network& network, const Options& options, Clock::time_point start) {
  Result result;
  const std::size_t n = network.size();
  Best best;
  best.limit = options.log2_max_size;
  if (n >= 2 && (options.method == Method::dp || (options.method == Method::automatic && n <= exact_inputs))) {
    if (std::optional<Path> p = optimal(network, 16)) best.offer(*p, score(network, *p), "dp");
    // Under a limit, the cheapest tree whose intermediates all fit, when there is one.
    if (best.found && best.cost.log2_largest > options.log2_max_size) {
      if (std::optional<Path> p = optimal(network, 16, options.log2_max_size)) {
        best.offer(*p, score(network, *p), "dp within the limit");
      }
    }
  }
  if (!best.found) {
    Path p = greedy(network);
    const Cost c = score(network, p);
    best.offer(std::move(p), c, "greedy");
    ++result.trials;
    if (options.method != Method::greedy && n > 3) {
      const double seconds =
          options.method == Method::hyper && options.seconds < 0 ? most_seconds : budget_for(network, options, c);
      // Reconfiguration takes the last fifth of the budget: of the best tree, and of the best
      // greedy tree where that is another.
      Best greedy_best;
      greedy_best.limit = best.limit;
      sample(network, 0.8 * seconds, start, best, greedy_best, result.trials);
      const bool two = greedy_best.found && greedy_best.path != best.path;
      const Best first = best;
      for (const Best* from : {&first, two ? static_cast<const Best*>(&greedy_best) : nullptr}) {
        if (!from) continue;
        const double left = (seconds - elapsed(start)) / (from == &first && two ? 2 : 1);
        Path r = reconfigure(network, from->path, 8, std::max(left, 0.0));
        const Cost rc = score(network, r);
        best.offer(std::move(r), rc, from->method + "+reconfigured");
      }
    }
  }
  if (options.written && best.found && *options.written == best.path) {
    result.log2_written_flops = best.cost.log2_flops;  // the best tree is the written one
    best.method = "as written";
  } else if (options.written) {
    const Cost w = score(network, *options.written);
    result.log2_written_flops = w.log2_flops;
    // The written order wins ties: it is what the user wrote.
    if (!best.found || !best.beats(best.cost, w)) {
      best.path = *options.written;
      best.cost = w;
      best.method = "as written";
      best.found = true;
    }
  }
  result.path = std::move(best.path);
  result.cost = best.cost;
  result.method = best.method;
  if (result.cost.log2_largest > options.log2_max_size) result.slicing = slices_that_fit(network, result.path, options);
  result.seconds = elapsed(start);
  return result;
}

}  // namespace

}  // namespace tenex::tree
