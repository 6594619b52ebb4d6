// DistContext: what a dist::Context holds (communicator, BLACS grid, block size), the
// process's current one, and agreement: a failure on one rank becomes the same
// tenex::Error on every rank, so that no rank is left waiting in a collective.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <exception>
#include <memory>
#include <string>

#include "tenex/dist/context.hpp"

namespace tenex::dist::detail {

struct DistContext {
  MPI_Comm comm = MPI_COMM_NULL;  // a duplicate of the user's communicator, ours to free
  int blacs = -1;                 // BLACS context of the grid
  int rank = 0, size = 1;
  int prow = 1, pcol = 1;    // grid
  int myrow = 0, mycol = 0;  // this rank's place
  int block = 64;
  ~DistContext();
};

/// This process's PhaseTimes (sets on the distributed backend run on one thread per rank).
PhaseTimes& phase_clock();
/// Adds the seconds of its lifetime to `slot`.
class PhaseTimer {
 public:
  explicit PhaseTimer(double& slot) : slot_(slot), start_(MPI_Wtime()) {}
  ~PhaseTimer() { slot_ += MPI_Wtime() - start_; }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double& slot_;
  double start_;
};

/// The context sets on BackendKind::distributed use: the latest one made that is alive.
std::shared_ptr<DistContext> current_context();
void set_current_context(const std::shared_ptr<DistContext>& context);

/// Collective: every rank passes the error it met (null: none). When any rank failed,
/// every rank throws the error of the lowest failing rank (its message; a tenex::Error
/// subclass is kept as that subclass with that message, a tenex::map callable's exception is a
/// tenex::Error with its text). Otherwise returns.
void agree(const DistContext& context, std::exception_ptr local_error);

/// Runs `f` (local work that may throw) and then agrees.
template <class F>
void agreed(const DistContext& context, F&& f) {
  std::exception_ptr error;
  try {
    f();
  } catch (...) {
    error = std::current_exception();
  }
  agree(context, error);
}

}  // namespace tenex::dist::detail
