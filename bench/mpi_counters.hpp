// Counters of what this rank sends over MPI, filled by a PMPI profiling shim
// (mpi_counters.cpp): the file defines MPI_Send, MPI_Isend, MPI_Bcast, MPI_Alltoallv, ...,
// counts, and forwards each to its PMPI_ twin. Linked into an executable (never into
// libtenex), with the executable's symbols exported (CMake ENABLE_EXPORTS), its definitions
// interpose on every caller of the process: tenex's plugin and ScaLAPACK/BLACS in
// libscalapack-openmpi.so alike.
//
// Bytes are the payload (MPI_Type_size times the count) this rank sends to *other* ranks;
// messages to itself are not counted. A collective is counted by the volume it must move,
// whatever algorithm the MPI library picks, so that the sum over ranks is what a tree or ring
// algorithm sends in all:
//   MPI_Bcast           root: count (P - 1); the others nothing
//   MPI_Reduce          every rank but the root: count
//   MPI_Allreduce       every rank: 2 count (P - 1) / P (a reduce-scatter and an allgather)
//   MPI_Alltoall(v)     the counts for the other ranks
//   MPI_Allgather(v)    this rank's part, to each of the P - 1 others
//   MPI_Gather(v)       every rank but the root: its part
// A call whose datatype is MPI_INT is counted as control (message sizes, tenex's error
// agreement, ScaLAPACK's info checks), apart from the data.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>

namespace mpi_counters {

enum class Call : std::size_t {
  send,  // MPI_Send, MPI_Isend, MPI_Rsend, MPI_Ssend, MPI_Issend, the send of MPI_Sendrecv
  bcast,
  reduce,
  allreduce,
  alltoall,
  alltoallv,
  allgather,
  allgatherv,
  gather,
  gatherv,
};
inline constexpr std::size_t call_kinds = 10;
const char* name(Call call);

struct Tally {
  unsigned long long calls = 0, messages = 0, bytes = 0;
};

struct Counters {
  std::array<Tally, call_kinds> data{}, control{};
  const Tally& operator[](Call c) const { return data[static_cast<std::size_t>(c)]; }
  /// Bytes of data over every kind of call.
  unsigned long long data_bytes() const;
  /// Messages of data over every kind of call.
  unsigned long long messages() const;
  unsigned long long control_bytes() const;
  unsigned long long control_messages() const;
};

/// This process's counters since the last reset.
const Counters& counters();
void reset();

/// Counters over the ranks of a communicator: means and maxima of the data bytes and
/// messages per rank, means of the control bytes and messages, and the mean data bytes per
/// kind of call.
struct Summary {
  double mean_bytes = 0, max_bytes = 0, mean_messages = 0, max_messages = 0;
  double mean_control_bytes = 0, mean_control_messages = 0;
  std::array<double, call_kinds> mean_bytes_by_call{};
};
/// Collective over `comm` (its own messages go through PMPI_ and are not counted).
Summary summarize(const Counters& mine, MPI_Comm comm);

}  // namespace mpi_counters
