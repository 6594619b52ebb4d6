// tenex/dist/context.hpp — the process grid of the distributed backend (TENEX_HAS_DIST).
//
// Every rank of a communicator makes the same Context; sets that run on
// BackendKind::distributed then use its BLACS grid and block size. The header
// needs no <mpi.h>: a program that passes MPI_COMM_WORLD includes it itself.
//
//   MPI_Init(&argc, &argv);
//   {
//     tenex::dist::Context ctx(MPI_COMM_WORLD, {.grid_rows = 2, .grid_cols = 2, .block_size = 64});
//     tenex::set_default_backend(tenex::BackendKind::distributed);
//     ...   // every rank builds the same expressions (SPMD)
//   }
//   MPI_Finalize();
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "tenex/config.hpp"
#include "tenex/detail/access.hpp"
#include "tenex/export.hpp"

namespace tenex::dist {

namespace detail {
struct DistContext;
}

struct ContextOptions {
  int grid_rows = 0;            // process rows; 0: chosen with grid_cols (nearest to square)
  int grid_cols = 0;            // process columns; 0: size / grid_rows
  std::size_t block_size = 64;  // rows and columns of a block of the block-cyclic layout
};

/// The communicator, process grid and block size the distributed backend runs on. Made
/// collectively (every rank of the communicator, same options); MPI must be initialised.
/// The latest Context made on a process is the one the backend uses; destroy it (and the
/// DistributedTensors made on it) before MPI_Finalize.
class TENEX_API Context {
 public:
  /// `communicator` is an MPI_Comm (MPI_COMM_WORLD). Throws tenex::Error when MPI is not
  /// initialised, when grid_rows * grid_cols does not match the communicator's size, or
  /// when block_size is 0.
  template <class Communicator>
  explicit Context(Communicator communicator, ContextOptions options = {})
      : Context(static_cast<const void*>(&communicator), sizeof(Communicator), options) {}
  ~Context();
  Context(const Context&) = default;
  Context& operator=(const Context&) = default;

  int rank() const;       // in the communicator
  int size() const;       // ranks in the communicator
  int grid_rows() const;  // process grid
  int grid_cols() const;
  int grid_row() const;  // this rank's place in the grid
  int grid_col() const;
  std::size_t block_size() const;
  /// "2 x 2 grid, blocks of 64": for messages and logs.
  std::string describe() const;

 private:
  // The library's own layers reach the state through detail::Access::dist_context.
  friend struct tenex::detail::Access;
  Context(const void* communicator, std::size_t communicator_bytes, ContextOptions options);
  std::shared_ptr<detail::DistContext> impl_;
};

/// True when a Context is alive on this process (BackendKind::distributed can run).
TENEX_API bool context_available();

/// Where this rank's time went in the distributed backend since the last reset (for
/// benchmarks and the communication model of docs/distributed.md):
///   remap:   MPI_Alltoallv remaps and p?gemr2d block copies between matricizations
///   compute: p?gemm and the ScaLAPACK drivers (their own messages included), local loops
///   gather:  results brought to one or every rank
struct PhaseTimes {
  double remap_seconds = 0;
  double compute_seconds = 0;
  double gather_seconds = 0;
  unsigned long long remap_bytes_sent = 0;  // bytes this rank sent to other ranks in remaps
};
TENEX_API PhaseTimes phase_times();
TENEX_API void reset_phase_times();

}  // namespace tenex::dist
