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
/// ...and the time budget, this much per input...
constexpr double seconds_per_input = 0.0025;
/// ...and at most this much, unless the user asks for more.
constexpr double most_seconds = 1.0;

double elapsed(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

struct Best {
  Path path;
  Cost cost;
  std::string method;
  bool found = false;
  void offer(Path p, Cost c, std::string_view how) {
    if (!found || cheaper(c, cost)) {
      path = std::move(p);
      cost = c;
      method = how;
      found = true;
    }
  }
};

/// The search's budget: the time budget (the user's, or 2.5 ms per input up to a second), and
/// for a set's product also at most a tenth of its predicted contraction time (at least a
/// millisecond), so a cheap product never waits on its search.
double budget_for(const Network& network, const Options& options, const Cost& first) {
  const double budget = options.seconds >= 0 ? options.seconds
                                             : std::min(most_seconds, seconds_per_input * static_cast<double>(network.size()));
  if (!options.bounded_by_work) return budget;
  const double predicted = first.log2_flops > 60 ? 1e9 : first.flops() / predicted_rate;
  return std::min(budget, std::max(least_seconds, budget_fraction * predicted));
}

/// Sampled greedy restarts and bisections until `seconds` have passed since `start`.
void sample(const Network& network, double seconds, Clock::time_point start, Best& best, std::size_t& trials) {
  std::mt19937_64 random(0x7e6e5ULL + network.size());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const bool bisecting = network.size() >= 16;
  for (std::uint64_t round = 1; elapsed(start) < seconds; ++round) {
    if (bisecting && round % 3 == 0) {
      BisectOptions o;
      o.seed = round;
      o.imbalance = 0.02 + 0.5 * unit(random);
      o.leaf_size = 6 + static_cast<std::size_t>(4 * unit(random));
      Path p = bisect(network, o);
      const Cost c = score(network, p);
      best.offer(std::move(p), c, "bisection");
    } else {
      GreedyOptions o;
      o.seed = round;
      o.costmod = std::exp2(-3 + 5 * unit(random));       // 1/8 .. 4
      o.temperature = std::exp2(-7 + 7 * unit(random));  // 1/128 .. 1
      Path p = greedy(network, o);
      const Cost c = score(network, p);
      best.offer(std::move(p), c, "random-greedy");
    }
    ++trials;
  }
}

}  // namespace

Options options_from_environment() {
  Options o;
  if (const char* m = std::getenv("TENEX_ORDER"); m && *m) {
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
  if (const char* b = std::getenv("TENEX_ORDER_BUDGET"); b && *b) {
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
  Result result;
  const std::size_t n = network.size();
  Best best;
  if (n >= 2 && (options.method == Method::dp || (options.method == Method::automatic && n <= exact_inputs))) {
    if (std::optional<Path> p = optimal(network, 16)) best.offer(*p, score(network, *p), "dp");
  }
  if (!best.found) {
    Path p = greedy(network);
    const Cost c = score(network, p);
    best.offer(std::move(p), c, "greedy");
    ++result.trials;
    if (options.method != Method::greedy && n > 3) {
      const double seconds =
          options.method == Method::hyper && options.seconds < 0 ? most_seconds : budget_for(network, options, c);
      // Reconfiguration takes the last fifth of the budget.
      sample(network, 0.8 * seconds, start, best, result.trials);
      const double left = seconds - elapsed(start);
      Path r = reconfigure(network, best.path, 8, std::max(left, 0.0));
      const Cost rc = score(network, r);
      if (cheaper(rc, best.cost)) best.offer(std::move(r), rc, best.method + "+reconfigured");
    }
  }
  if (options.written) {
    const Cost w = score(network, *options.written);
    result.log2_written_flops = w.log2_flops;
    if (!best.found || !cheaper(best.cost, w)) best = Best{*options.written, w, "as written", true};
  }
  result.path = std::move(best.path);
  result.cost = best.cost;
  result.method = best.method;
  if (result.cost.log2_largest > options.log2_max_size) {
    if (std::optional<Slicing> s = find_slices(network, result.path, options.log2_max_size)) result.slicing = *s;
  }
  result.seconds = elapsed(start);
  return result;
}

}  // namespace tenex::tree
