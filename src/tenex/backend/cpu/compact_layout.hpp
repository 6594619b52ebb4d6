// How a compact buffer (OpNode::compact: per-key dense blocks of the elements a pattern
// allows, docs/sparse.md) lies against the dense layout of the same node: the dense tensor of a
// compact buffer (expand), the compact buffer of a dense tensor (gather), and whether two
// compact nodes share one layout. For the CPU's sparse evaluation (sparse.cpp,
// sparse_contract.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "tenex/graph/op_graph.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex::detail::cpu::sparse {

/// Row-major strides of `extents`.
inline std::vector<std::size_t> dense_strides(const std::vector<std::size_t>& extents) {
  std::vector<std::size_t> strides(extents.size(), 1);
  for (std::size_t d = extents.size(); d-- > 1;) strides[d - 1] = strides[d] * extents[d];
  return strides;
}

/// Steps `pos` (one position per row mode in the key's domains) to the next tuple of the key's
/// domains, the last mode fastest; false after the last tuple.
inline bool next_tuple(std::vector<std::size_t>& pos, const SparsePattern::Key& key) {
  for (std::size_t r = pos.size(); r-- > 0;) {
    if (++pos[r] < key.domains[r].size()) return true;
    pos[r] = 0;
  }
  return false;
}

/// The dense tensor of a compact buffer, zeros where the pattern excludes. Every element is
/// written once, in parallel: when the key modes lead, each key owns a contiguous slab of
/// the dense layout, zeroed and filled by the thread that has the key (in cache).
template <class T>
void expand(const SparsePattern& p, const T* compact, T* dense);

/// The allowed elements of a dense tensor, as a compact buffer (keys in parallel).
template <class T>
void gather(const SparsePattern& p, const T* dense, T* compact);

/// Whether two nodes are compact with one layout: equal labels and equal keys and domains.
bool same_layout(const OpNode& a, const OpNode& b);

}  // namespace tenex::detail::cpu::sparse
