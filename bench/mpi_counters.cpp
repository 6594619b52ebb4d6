// The PMPI profiling shim of mpi_counters.hpp: each MPI_ function below counts what this
// rank sends and forwards to its PMPI_ twin. Single-threaded use (one thread per rank makes
// MPI calls, as tenex's distributed backend does).
#include "mpi_counters.hpp"

#include <mpi.h>

namespace mpi_counters {

namespace {

Counters state;

unsigned long long type_bytes(MPI_Datatype type, long long count) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return count > 0 ? static_cast<unsigned long long>(count) * static_cast<unsigned long long>(size) : 0ULL;
}

int rank_in(MPI_Comm comm) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  return rank;
}

int size_of(MPI_Comm comm) {
  int size = 1;
  PMPI_Comm_size(comm, &size);
  return size;
}

unsigned long long ceil_log2(int p) {
  unsigned long long steps = 0;
  for (long long reach = 1; reach < p; reach *= 2) ++steps;
  return steps;
}

void add(Call call, MPI_Datatype type, unsigned long long messages, unsigned long long bytes) {
  Tally& t = (type == MPI_INT ? state.control : state.data)[static_cast<std::size_t>(call)];
  ++t.calls;
  t.messages += messages;
  t.bytes += bytes;
}

void point_to_point(MPI_Datatype type, int count, int dest, MPI_Comm comm) {
  if (dest == MPI_PROC_NULL || dest == rank_in(comm)) return;
  add(Call::send, type, 1, type_bytes(type, count));
}

}  // namespace

const char* name(Call call) {
  static constexpr const char* names[call_kinds] = {"send",      "bcast",     "reduce",     "allreduce", "alltoall",
                                                    "alltoallv", "allgather", "allgatherv", "gather",    "gatherv"};
  return names[static_cast<std::size_t>(call)];
}

unsigned long long Counters::data_bytes() const {
  unsigned long long total = 0;
  for (const Tally& t : data) total += t.bytes;
  return total;
}

unsigned long long Counters::control_bytes() const {
  unsigned long long total = 0;
  for (const Tally& t : control) total += t.bytes;
  return total;
}

unsigned long long Counters::messages() const {
  unsigned long long total = 0;
  for (const Tally& t : data) total += t.messages;
  return total;
}

unsigned long long Counters::control_messages() const {
  unsigned long long total = 0;
  for (const Tally& t : control) total += t.messages;
  return total;
}

const Counters& counters() { return state; }
void reset() { state = Counters{}; }

Summary summarize(const Counters& mine, MPI_Comm comm) {
  constexpr int fields = 4 + static_cast<int>(call_kinds);
  double local[fields], sum[fields], top[fields];
  local[0] = static_cast<double>(mine.data_bytes());
  local[1] = static_cast<double>(mine.messages());
  local[2] = static_cast<double>(mine.control_bytes());
  local[3] = static_cast<double>(mine.control_messages());
  for (std::size_t c = 0; c < call_kinds; ++c) local[4 + c] = static_cast<double>(mine.data[c].bytes);
  PMPI_Allreduce(local, sum, fields, MPI_DOUBLE, MPI_SUM, comm);
  PMPI_Allreduce(local, top, fields, MPI_DOUBLE, MPI_MAX, comm);
  const double p = size_of(comm);
  Summary s;
  s.mean_bytes = sum[0] / p;
  s.max_bytes = top[0];
  s.mean_messages = sum[1] / p;
  s.max_messages = top[1];
  s.mean_control_bytes = sum[2] / p;
  s.mean_control_messages = sum[3] / p;
  for (std::size_t c = 0; c < call_kinds; ++c) s.mean_bytes_by_call[c] = sum[4 + c] / p;
  return s;
}

}  // namespace mpi_counters

using mpi_counters::Call;

// The interposed entry points: C linkage, OpenMPI's signatures.
extern "C" {

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  mpi_counters::point_to_point(type, count, dest, comm);
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  mpi_counters::point_to_point(type, count, dest, comm);
  return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

int MPI_Rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  mpi_counters::point_to_point(type, count, dest, comm);
  return PMPI_Rsend(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  mpi_counters::point_to_point(type, count, dest, comm);
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  mpi_counters::point_to_point(type, count, dest, comm);
  return PMPI_Issend(buf, count, type, dest, tag, comm, request);
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  mpi_counters::point_to_point(sendtype, sendcount, dest, comm);
  return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm,
                       status);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  const int p = mpi_counters::size_of(comm);
  if (mpi_counters::rank_in(comm) == root && p > 1) {
    mpi_counters::add(Call::bcast, type, static_cast<unsigned long long>(p - 1),
                      mpi_counters::type_bytes(type, count) * static_cast<unsigned long long>(p - 1));
  } else {
    mpi_counters::add(Call::bcast, type, 0, 0);
  }
  return PMPI_Bcast(buffer, count, type, root, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  const bool sends = mpi_counters::rank_in(comm) != root;
  mpi_counters::add(Call::reduce, type, sends ? 1 : 0, sends ? mpi_counters::type_bytes(type, count) : 0);
  return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const int p = mpi_counters::size_of(comm);
  const unsigned long long bytes = mpi_counters::type_bytes(type, count);
  mpi_counters::add(
      Call::allreduce, type, 2 * mpi_counters::ceil_log2(p),
      p > 1 ? 2 * bytes * static_cast<unsigned long long>(p - 1) / static_cast<unsigned long long>(p) : 0);
  return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  const auto others = static_cast<unsigned long long>(mpi_counters::size_of(comm) - 1);
  mpi_counters::add(Call::alltoall, sendtype, sendcount > 0 ? others : 0,
                    mpi_counters::type_bytes(sendtype, sendcount) * others);
  return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  const int p = mpi_counters::size_of(comm), me = mpi_counters::rank_in(comm);
  unsigned long long messages = 0, bytes = 0;
  for (int q = 0; q < p; ++q) {
    if (q == me || sendcounts[q] <= 0) continue;
    ++messages;
    bytes += mpi_counters::type_bytes(sendtype, sendcounts[q]);
  }
  mpi_counters::add(Call::alltoallv, sendtype, messages, bytes);
  return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  const auto others = static_cast<unsigned long long>(mpi_counters::size_of(comm) - 1);
  const unsigned long long part = sendbuf == MPI_IN_PLACE ? mpi_counters::type_bytes(recvtype, recvcount)
                                                          : mpi_counters::type_bytes(sendtype, sendcount);
  mpi_counters::add(Call::allgather, sendbuf == MPI_IN_PLACE ? recvtype : sendtype, part > 0 ? others : 0,
                    part * others);
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  const auto others = static_cast<unsigned long long>(mpi_counters::size_of(comm) - 1);
  const unsigned long long part = sendbuf == MPI_IN_PLACE
                                      ? mpi_counters::type_bytes(recvtype, recvcounts[mpi_counters::rank_in(comm)])
                                      : mpi_counters::type_bytes(sendtype, sendcount);
  mpi_counters::add(Call::allgatherv, sendbuf == MPI_IN_PLACE ? recvtype : sendtype, part > 0 ? others : 0,
                    part * others);
  return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const bool sends = mpi_counters::rank_in(comm) != root;
  mpi_counters::add(Call::gather, sendtype, sends ? 1 : 0, sends ? mpi_counters::type_bytes(sendtype, sendcount) : 0);
  return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const bool sends = mpi_counters::rank_in(comm) != root;
  mpi_counters::add(Call::gatherv, sendtype, sends ? 1 : 0, sends ? mpi_counters::type_bytes(sendtype, sendcount) : 0);
  return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
}

}  // extern "C"
