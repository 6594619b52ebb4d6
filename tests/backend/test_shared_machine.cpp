// SharedMachineThreads (backend/cpu/shared_machine.hpp): on a machine whose cores are taken, a
// set runs on one thread. The cores are taken for certain here: the test process is pinned to
// one CPU and a second thread spins on it, so the evaluating thread is preempted every time
// slice. What is checked is the invariant (the thread count inside and after the scope), never
// a time.
#include <doctest/doctest.h>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tenex/backend/cpu/shared_machine.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

namespace {

using tenex::detail::cpu::SharedMachineThreads;

/// Pins the calling process's threads made from now on (and this one) to one CPU; restores.
struct OneCpu {
  cpu_set_t saved{};
  bool pinned = false;
  OneCpu() {
    if (sched_getaffinity(0, sizeof(saved), &saved) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &saved)) {
        CPU_SET(c, &one);
        break;
      }
    }
    pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~OneCpu() {
    if (pinned) sched_setaffinity(0, sizeof(saved), &saved);
  }
};

/// Opens scopes for up to `seconds` until one backs off as `wanted` says; whether one did.
bool until_backed_off(bool wanted, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    const int before = omp_get_max_threads();
    {
      SharedMachineThreads scope;
      if (scope.backed_off()) CHECK(omp_get_max_threads() == 1);
      if (!scope.backed_off()) CHECK(omp_get_max_threads() == before);
      if (scope.backed_off() == wanted) return true;
    }
    CHECK(omp_get_max_threads() == before);
    // Busy-wait between scopes: a thread that sleeps is seldom preempted.
    const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    while (std::chrono::steady_clock::now() < next) {
    }
  }
  return false;
}

}  // namespace

TEST_CASE("shared machine: a busy core makes a set one thread, and the thread count is restored after") {
  if (omp_get_max_threads() < 2) {
    MESSAGE("one OpenMP thread: nothing to back off from");
    return;
  }
  OneCpu pin;
  REQUIRE(pin.pinned);
  {
    std::atomic<bool> stop{false};
    std::thread spinner([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
    // Busy-wait too: a thread that sleeps is never preempted.
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    while (std::chrono::steady_clock::now() < end) {
    }
    CHECK(until_backed_off(true, 5.0));
    stop = true;
    spinner.join();
  }
  // Quiet again: within a few windows the threads are back, unless another process (a
  // parallel ctest) shares the CPU: that is said, not asserted.
  if (!until_backed_off(false, 2.0)) MESSAGE("the pinned CPU stayed busy: another process runs on it");
}
