// Truncated modes: which modes of a graph's nodes carry the kept rank of a truncated
// decomposition (svd or eigen_solve with a tenex::Truncation) run in the same set, or in the
// set that wrote a tensor this one reads with truncated modes (InputParams::truncated_modes:
// the real values of a complex decomposition, read through their own set).
//
// Such a mode has, in the graph, the upper bound min(max_rank, k) as its extent; the kernel
// writes zeros beyond the kept rank, so products and sums over the mode later in the set are
// exact. The executor shrinks every target whose mode carries it to the kept rank when it
// writes the target, and pads it back with zeros where the same set reads that target again
// (or reads a tensor with truncated modes, whose kept rank is then the tensor's extent).
// A use that the zeros cannot make exact is an error before anything runs (see
// find_truncated_modes).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

/// Whether node `id` decides a kept rank: a truncated decomposition, or an input whose
/// truncated modes (InputParams::truncated_modes) took one in another set.
bool is_truncation_source(const OpGraph& graph, NodeId id);

struct TruncatedModes {
  static constexpr NodeId none = std::numeric_limits<NodeId>::max();
  /// By node, by mode: the node whose kept rank the mode's extent is (a truncated
  /// decomposition, or an input per is_truncation_source), or `none`. Empty when the graph has
  /// no such node.
  std::vector<std::vector<NodeId>> source;
  bool any() const { return !source.empty(); }
  /// Whether a mode of node `id` is truncated.
  bool truncated(NodeId id) const;
};

/// The truncated modes of `graph` (nodes listed in topological `order`, with their operands).
/// Throws ShapeError, before anything runs, where a node reads a truncated mode in a way the
/// zero padding does not make exact: a decomposition, slice, chip, power, inverse or solve of
/// it; a sum, maximum or minimum over it of values that are not zero beyond the kept rank
/// (exp(S("k")) summed over k); two truncated decompositions' modes under one label.
TruncatedModes find_truncated_modes(const OpGraph& graph, const std::vector<NodeId>& order,
                                    const std::vector<std::vector<NodeId>>& operands);

}  // namespace tenex::detail
