// What the distributed tests share: the process grids they run on, by the number of ranks in
// MPI_COMM_WORLD (every shape the rank count allows (1 x P and P x 1, 2 x 2 on four ranks), with blocks of 2
// or 3 elements, so that edge blocks are partial and, on three ranks, some ranks hold no
// element of a small tensor), and the check of a rank's part against a reference.
#pragma once

#include <mpi.h>

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "tenex/tenex.hpp"

namespace tenex_test::dist {

/// Ranks in MPI_COMM_WORLD.
inline int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// The grids for this rank count, then `extra` where its count matches (options of 0 x 0:
/// the library's own square-ish grid, past four ranks).
inline std::vector<tenex::dist::ContextOptions> grids(
    const std::vector<std::pair<int, tenex::dist::ContextOptions>>& extra = {}) {
  std::vector<tenex::dist::ContextOptions> out;
  switch (world_size()) {
    case 1: out = {{1, 1, 2}}; break;
    case 2: out = {{1, 2, 2}, {2, 1, 3}}; break;
    case 3: out = {{3, 1, 2}, {1, 3, 3}}; break;
    case 4: out = {{2, 2, 2}, {1, 4, 3}}; break;
    default: out = {{0, 0, 2}}; break;
  }
  for (const auto& [ranks, options] : extra) {
    if (ranks == world_size()) out.push_back(options);
  }
  return out;
}

/// Row-major offset of `index` in a tensor of `shape`.
inline std::size_t offset(const tenex::Shape& shape, const std::vector<std::size_t>& index) {
  std::size_t at = 0;
  for (std::size_t k = 0; k < shape.rank(); ++k) at = at * shape.extent(k) + index[k];
  return at;
}

/// Elements of this rank's part of `d` that differ from `reference` by more than
/// tol * (1 + |reference|), or 1000000 for a shape mismatch. Not collective.
template <class C>
std::size_t local_mismatches(const tenex::dist::DistributedTensor<C>& d, const tenex::Tensor<C>& reference,
                             double tol) {
  if (!(d.shape() == reference.shape())) return 1000000;
  std::size_t bad = 0;
  d.for_each_local([&](const std::vector<std::size_t>& index, C v) {
    const C r = reference.data()[offset(reference.shape(), index)];
    if (!(std::abs(v - r) <= tol * (1 + std::abs(r)))) ++bad;
  });
  return bad;
}

}  // namespace tenex_test::dist
