// The process grids the distributed tests run on, by the number of ranks in MPI_COMM_WORLD:
// every shape the rank count allows (1 x P and P x 1, 2 x 2 on four ranks), with blocks of 2
// or 3 elements, so that edge blocks are partial and, on three ranks, some ranks hold no
// element of a small tensor.
#pragma once

#include <mpi.h>

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

}  // namespace tenex_test::dist
