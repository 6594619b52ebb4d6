// Threads on a shared machine. OpenMP threads that wait for a partner the scheduler has put
// aside (other processes hold the cores) spin through its time slice, so on a busy machine a
// set of small kernels runs many times slower at two threads than at one (issue 45: a first
// DMRG sweep 45x slower than numpy beside two busy loops). The evaluating thread samples, once
// a window (kWindowSeconds), how many tasks could run (/proc/loadavg: more than the online CPUs
// means some wait) and how often the kernel preempts it (getrusage's involuntary context
// switches); for kBusySeconds after either sign, a set runs on one thread, its kernels and the
// BLAS's included (omp_set_num_threads on that thread only, restored after).
// Results do not depend on the thread count beyond the last bits of LAPACK's (the suite checks
// both), so only time changes.
// TENEX_SHARED_MACHINE=0 turns the measurement off.
#pragma once

namespace tenex::detail::cpu {

/// While alive, the OpenMP threads of the calling thread's parallel regions are one if the
/// machine was busy lately; else nothing changes. Never throws.
class SharedMachineThreads {
 public:
  SharedMachineThreads() noexcept;
  ~SharedMachineThreads();
  SharedMachineThreads(const SharedMachineThreads&) = delete;
  SharedMachineThreads& operator=(const SharedMachineThreads&) = delete;

  /// Whether this scope runs its set on one thread because the machine is busy.
  bool backed_off() const { return saved_ > 0; }

 private:
  int saved_ = 0;  // the thread count to restore, 0 when none was changed
};

/// The OpenMP threads this thread's sets run on when the machine is quiet: omp_get_max_threads(),
/// or inside a scope that backed off the count it replaced (what the plan file records).
int configured_threads() noexcept;

}  // namespace tenex::detail::cpu
