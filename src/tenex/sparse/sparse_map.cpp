#include "tenex/sparse/sparse_map.hpp"

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
  if (source.empty()) throw Error("tenex: SparseMap::insert: the source index tuple is empty");
  if (entries_.empty()) {
    source_rank_ = source.size();
    target_rank_ = 0;
  } else if (source.size() != source_rank_) {
    throw Error("tenex: SparseMap::insert: source tuple of length " + std::to_string(source.size()) +
                " in a map whose source tuples have length " + std::to_string(source_rank_));
  }
  for (const Index& t : targets) {
    if (t.empty()) throw Error("tenex: SparseMap::insert: a target index tuple is empty");
    if (target_rank_ == 0) target_rank_ = t.size();
    if (t.size() != target_rank_) {
      throw Error("tenex: SparseMap::insert: target tuple of length " + std::to_string(t.size()) +
                  " in a map whose target tuples have length " + std::to_string(target_rank_));
    }
  }
  auto& allowed = entries_[source];
  allowed.insert(targets.begin(), targets.end());
}

bool SparseMap::allows(const Index& source, const Index& target) const {
  auto it = entries_.find(source);
  return it != entries_.end() && it->second.count(target) > 0;
}

std::size_t SparseMap::pair_count() const {
  std::size_t n = 0;
  for (const auto& [source, targets] : entries_) n += targets.size();
  return n;
}

}  // namespace tenex
