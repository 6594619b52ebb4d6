#include "tenex/sparse/sparse_map.hpp"

#include <algorithm>

#include "tenex/error.hpp"

namespace tenex {

SparseMap::SparseMap() = default;

SparseMap::SparseMap(const std::map<std::size_t, std::vector<std::size_t>>& one_to_one) {
  for (const auto& [source, targets] : one_to_one) {
    std::vector<Index> tuples;
    tuples.reserve(targets.size());
    for (std::size_t t : targets) tuples.push_back({t});
    insert({source}, tuples);
  }
}

void SparseMap::insert(const Index& source, const std::vector<Index>& targets) {
  // Strong guarantee: validate into locals, build the new targets apart, then change the map
  // only with operations that cannot throw (set::merge moves nodes and allocates nothing).
  if (source.empty()) throw Error("tenex: SparseMap::insert: the source index tuple is empty");
  if (!empty() && source.size() != source_rank_) {
    throw Error("tenex: SparseMap::insert: source tuple of length " + std::to_string(source.size()) +
                " in a map whose source tuples have length " + std::to_string(source_rank_));
  }
  // 0 while no target tuple has fixed the length: an empty map, or sources inserted with none.
  const std::size_t known_target_rank = empty() ? 0 : target_rank_;
  std::size_t target_rank = known_target_rank;
  for (const Index& t : targets) {
    if (t.empty()) throw Error("tenex: SparseMap::insert: a target index tuple is empty");
    if (target_rank == 0) target_rank = t.size();
    if (t.size() == target_rank) continue;
    if (known_target_rank == 0) {
      throw Error("tenex: SparseMap::insert: target tuples of lengths " + std::to_string(target_rank) + " and " +
                  std::to_string(t.size()) + " in one insertion; all target tuples of a map must have one length");
    }
    throw Error("tenex: SparseMap::insert: target tuple of length " + std::to_string(t.size()) +
                " in a map whose target tuples have length " + std::to_string(target_rank));
  }
  std::vector<std::size_t> source_bounds = source_bounds_, target_bounds = target_bounds_;
  source_bounds.resize(source.size(), 0);
  for (std::size_t d = 0; d < source.size(); ++d) source_bounds[d] = std::max(source_bounds[d], source[d] + 1);
  if (target_rank) target_bounds.resize(target_rank, 0);
  for (const Index& t : targets) {
    for (std::size_t d = 0; d < t.size(); ++d) target_bounds[d] = std::max(target_bounds[d], t[d] + 1);
  }
  std::set<Index> added(targets.begin(), targets.end());
  // Copies share their entries: change a copy of its own (made before anything changes).
  std::shared_ptr<std::map<Index, std::set<Index>>> own =
      entries_ && entries_.use_count() == 1 ? entries_ : std::make_shared<std::map<Index, std::set<Index>>>(entries());
  auto& allowed = (*own)[source];  // inserts an empty set or throws with the map unchanged
  allowed.merge(added);
  entries_ = std::move(own);
  source_bounds_.swap(source_bounds);
  target_bounds_.swap(target_bounds);
  source_rank_ = source.size();
  target_rank_ = target_rank;
}

const std::map<SparseMap::Index, std::set<SparseMap::Index>>& SparseMap::entries() const {
  static const std::map<Index, std::set<Index>> none;
  return entries_ ? *entries_ : none;
}

bool SparseMap::allows(const Index& source, const Index& target) const {
  if (!entries_) return false;
  auto it = entries_->find(source);
  return it != entries_->end() && it->second.count(target) > 0;
}

std::size_t SparseMap::pair_count() const {
  std::size_t n = 0;
  for (const auto& [source, targets] : entries()) n += targets.size();
  return n;
}

}  // namespace tenex
