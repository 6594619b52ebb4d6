// A contraction tree (a Path) and what it costs, all in log2 or double: no cost overflows.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tenex/graph/contraction_tree/network.hpp"

namespace tenex::tree {

/// What a path costs on a network, opt_einsum's convention: each step costs the size of
/// every label its operands hold, twice when it sums a label.
struct Cost {
  double log2_flops = -1e300;  // log2 of the sum over steps (-1e300: no step)
  double log2_largest = 0;     // log2 elements of the largest intermediate (the result included)
  double log2_peak = 0;        // log2 elements of intermediates held at once, steps in order
  double flops() const;        // 2^log2_flops (inf beyond double)
};

Cost score(const Network& network, const Path& path);

/// The legs of every operand of `path` (inputs, then one per step).
std::vector<Legs> legs_of(const Network& network, const Path& path);

/// `a` costs less than `b`: fewer flops; within 1e-9 (relative), the smaller largest intermediate.
bool cheaper(const Cost& a, const Cost& b);

/// A complete path: n - 1 steps, each operand used once, every input reached. Throws
/// InternalError naming the fault otherwise (the methods' own check, and tests').
void check_path(std::size_t inputs, const Path& path);

/// opt_einsum's linear form: each pair as positions in the list of live operands, the pair
/// removed and its result appended.
std::vector<std::pair<std::size_t, std::size_t>> linear_path(std::size_t inputs, const Path& path);

}  // namespace tenex::tree
