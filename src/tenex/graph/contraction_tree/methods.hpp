// The tree optimizer's methods, one file each (README.md), and the driver that budgets them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tenex/graph/contraction_tree/tree.hpp"

namespace tenex::tree {

/// Exact: the cheapest path (flops), dynamic programming over connected subsets (dp.cpp).
/// Outer products only where the network is disconnected. `most_inputs`: refuses (nullopt)
/// larger networks. `log2_max_size`: intermediates above it are not formed (nullopt when no
/// path fits).
std::optional<Path> optimal(const Network& network, std::size_t most_inputs = 16, double log2_max_size = 1e300);

struct GreedyOptions {
  double costmod = 1.0;      // score = size(result) - costmod * (size(a) + size(b))
  double temperature = 0.0;  // 0: deterministic; > 0: Boltzmann (Gumbel) noise on the scores
  std::uint64_t seed = 0;
};

/// Greedy (greedy.cpp): the pair sharing a label with the best score first, then outer
/// products of the smallest operands.
Path greedy(const Network& network, const GreedyOptions& options = {});

struct BisectOptions {
  double imbalance = 0.2;     // the larger part at most (1 + imbalance) / 2 of the inputs
  std::size_t leaf_size = 8;  // parts of at most this many inputs are ordered by `optimal`
  std::uint64_t seed = 0;
};

/// Recursive bisection of the hypergraph (bisect.cpp): each part cut in two with the least
/// log2 weight of labels cut, parts contracted by the tree of cuts.
Path bisect(const Network& network, const BisectOptions& options = {});

/// Subtree reconfiguration (reconfigure.cpp): each subtree of the tree cut into at most
/// `subtree_size` parts re-ordered exactly, repeated while a pass improves; never worse.
Path reconfigure(const Network& network, Path path, std::size_t subtree_size = 8, double seconds = 0.1);

/// Labels to slice (slice.cpp): fixed one value at a time, each slice of the network is
/// contracted by the same path and the slices summed.
struct Slicing {
  std::vector<Label> labels;    // empty: nothing sliced
  double slices = 1;            // the product of their extents
  Cost sliced;                  // one slice's cost
  double log2_total_flops = 0;  // log2(slices) + sliced.log2_flops
};

/// The summed labels to slice so that every intermediate of `path` fits `log2_max_size`,
/// chosen one at a time for the most cut of the largest intermediate per extra flop
/// (cotengra's slice finder's rule). nullopt when slicing every summed label still does not fit.
std::optional<Slicing> find_slices(const Network& network, const Path& path, double log2_max_size);

enum class Method { automatic, greedy, dp, hyper };

struct Options {
  Method method = Method::automatic;
  double seconds = -1;            // the search budget; < 0: the default (TENEX_ORDER_BUDGET or the rule)
  double log2_max_size = 1e300;   // the memory limit in elements (log2); beyond it, slicing
  const Path* written = nullptr;  // the order as written: the result is never worse
  bool remember = false;          // look the tree up, and keep it, in the tree store (tree_store.hpp)
  bool bounded_by_work = false;   // a set's product: the search also within a tenth of its predicted time
};

struct Result {
  Path path;
  Cost cost;
  Slicing slicing;                     // labels empty unless the limit needed them
  std::string method;                  // which method found the path ("dp", "greedy", "random-greedy", ...)
  std::size_t trials = 0;              // trees scored
  double seconds = 0;                  // time spent
  double log2_written_flops = -1e300;  // the written order's cost (-1e300: none given)
};

/// The driver (optimize.cpp): small networks exactly, larger ones by greedy, sampled greedy
/// restarts and bisection within the budget, the best reconfigured; the written order when
/// it is no worse; slices when the best does not fit.
Result optimize(const Network& network, const Options& options = {});

/// TENEX_ORDER (auto|greedy|dp|hyper) and TENEX_ORDER_BUDGET (seconds), read per call.
Options options_from_environment();

}  // namespace tenex::tree
