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

/// The order of pairwise contractions of `operands` (each a list of labels) that costs
/// the fewest flops, keeping `keep` in the end: exact dynamic programming over subsets
/// up to 10 operands, greedy (cheapest pair first) beyond.
ContractionPath order_product(const std::vector<std::vector<std::string>>& operands,
                              const std::map<std::string, std::size_t>& extents, const std::vector<std::string>& keep);

/// Labels the result of contracting `a` and `b` keeps: those in `needed` (the final labels
/// and the labels of the operands still waiting), in order of first appearance in a then b.
std::vector<std::string> pair_result_labels(const std::vector<std::string>& a, const std::vector<std::string>& b,
                                            const std::vector<std::string>& needed);

}  // namespace tenex::passes
