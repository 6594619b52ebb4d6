// Ordering of product chains by flop count.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tenex::passes {

/// One pairwise step: operands `first` and `second` (slot numbers) make a new slot,
/// numbered after all earlier slots (the inputs are slots 0..n-1).
using ContractionPath = std::vector<std::pair<std::size_t, std::size_t>>;

/// Largest number of operands ordered exactly (dynamic programming over subsets).
inline constexpr std::size_t exact_order_limit = 10;

/// The order of pairwise contractions of `operands` (each a list of labels) that costs
/// the fewest flops, keeping `keep` in the end: exact dynamic programming over subsets
/// up to exact_order_limit operands; beyond, greedy (opt_einsum's way): a priority queue
/// of the pairs that share a label, cheapest first, and outer products of the smallest
/// operands only when no two share one. Near-linear in the number of operands when each
/// label is held by a few of them.
/// `max_intermediate` (elements; 0: none) caps the intermediates: orders whose every
/// intermediate fits are preferred; when none fits, the cheapest order is taken.
ContractionPath order_product(const std::vector<std::vector<std::string>>& operands,
                              const std::map<std::string, std::size_t>& extents, const std::vector<std::string>& keep,
                              double max_intermediate = 0);

}  // namespace tenex::passes
