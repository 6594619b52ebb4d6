// tenex/sparse/sparse_map.hpp — which index values of some modes may be non-zero
// for each index value of other modes.
//
// A map from source modes to target modes: for each tuple of source indices it
// lists the allowed tuples of target indices. Registered on a linked set with
// `expr.set_sparse_map("i", "j", map)`, it declares every element of every tensor
// of the set that carries both labels, with (i, j) not listed, to be zero.
//
//   tenex::SparseMap L;
//   L.insert({0}, {{0}, {1}});           // i = 0 pairs with j = 0 and j = 1
//   L.insert({1}, {{1}, {2}});
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tenex/export.hpp"

namespace tenex {

class TENEX_API SparseMap {
 public:
  using Index = std::vector<std::size_t>;

  SparseMap();
  /// One mode to one mode: source index -> allowed target indices.
  explicit SparseMap(const std::map<std::size_t, std::vector<std::size_t>>& one_to_one);

  /// Allows each of `targets` for the source index tuple `source`. All tuples of one map
  /// must have the same lengths (the number of source and target modes).
  void insert(const Index& source, const std::vector<Index>& targets);

  /// Number of source modes and target modes (0 while empty).
  std::size_t source_rank() const { return source_rank_; }
  std::size_t target_rank() const { return target_rank_; }
  bool empty() const { return !entries_ || entries_->empty(); }
  /// True when (source, target) is allowed.
  bool allows(const Index& source, const Index& target) const;
  const std::map<Index, std::set<Index>>& entries() const;
  /// Number of allowed (source, target) pairs.
  std::size_t pair_count() const;
  /// An address that copies of this map share while neither changes: copies are cheap (the
  /// entries are shared until one of them is changed), and two maps with the same
  /// content_id() have the same entries.
  const void* content_id() const noexcept { return entries_.get(); }
  /// One past the largest index at each position of the source and target tuples (empty
  /// while the map is): what extents the map needs, known without reading its entries.
  const std::vector<std::size_t>& source_bounds() const { return source_bounds_; }
  const std::vector<std::size_t>& target_bounds() const { return target_bounds_; }

 private:
  std::shared_ptr<std::map<Index, std::set<Index>>> entries_;  // shared by copies; copied on change
  std::vector<std::size_t> source_bounds_, target_bounds_;
  std::size_t source_rank_ = 0;
  std::size_t target_rank_ = 0;
};

}  // namespace tenex
