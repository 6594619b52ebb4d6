#include "tenex/backend/cpu/shared_machine.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tenex/settings.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
inline void omp_set_num_threads(int) {}
#endif

namespace tenex::detail::cpu {

namespace {

// A window is at least this long: shorter ones count too few switches to mean anything.
constexpr double kWindowSeconds = 0.02;
// Involuntary switches per second above which the machine counts as busy. A thread alone on a
// quiet core is preempted a few times a second (kernel threads, timers); beside one busy loop
// per core, every few milliseconds (CFS slices of 3-12 ms: 80-300 a second).
constexpr double kBusyRate = 40.0;

bool enabled() {
  static const bool on = [] {
    const char* v = setting(Setting::shared_machine);
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

long involuntary_switches() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return -1;
  return usage.ru_nivcsw;
}

// After a sign of a busy machine, sets stay on one thread this long: a thread waiting for its
// partner blocks, and a blocked thread is neither preempted nor counted as runnable, so the
// signs come and go while the machine stays busy.
constexpr double kBusySeconds = 0.5;

/// This process's threads the kernel could run now (state R in /proc/self/task/*/stat).
long own_running() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return 1;
  long running = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    char path[300];
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/stat", entry->d_name);
    std::FILE* f = std::fopen(path, "r");
    if (!f) continue;
    char text[512];
    const std::size_t n = std::fread(text, 1, sizeof(text) - 1, f);
    std::fclose(f);
    text[n] = '\0';
    // "pid (name) S ...": the state follows the last ')' (a name may hold one).
    const char* close = std::strrchr(text, ')');
    if (close && close[1] == ' ' && close[2] == 'R') ++running;
  }
  closedir(dir);
  return std::max(running, 1L);
}

/// Whether other processes' runnable tasks leave too few of the online CPUs for this
/// process's OpenMP threads (/proc/loadavg's "running/total" counts every runnable task,
/// this process's included); false where it cannot be read.
bool overloaded() {
  static const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return false;
  double a = 0, b = 0, c = 0;
  long running = 0, total = 0;
  const int read = std::fscanf(f, "%lf %lf %lf %ld/%ld", &a, &b, &c, &running, &total);
  std::fclose(f);
  if (read != 5 || cpus <= 0) return false;
  const long others = std::max(running - own_running(), 0L);
  return others + omp_get_max_threads() > cpus;
}

struct Window {
  std::chrono::steady_clock::time_point start{};
  std::chrono::steady_clock::time_point last_busy{};
  long switches = -1;
  bool sign = false;  // the last window showed a sign of a busy machine
};
thread_local Window window;

/// Updates the calling thread's window; whether the machine is busy. Two signs, each sampled
/// once a window: more runnable tasks than CPUs, or this thread preempted often. A sign counts
/// when two windows in a row show one: on a quiet machine a kernel thread is runnable at one
/// sample in twenty (a lone sign would hold sets on one thread most of the time), where
/// beside busy loops the signs persist.
bool measure() {
  const auto now = std::chrono::steady_clock::now();
  const bool started = window.start != std::chrono::steady_clock::time_point{};
  const double seconds = std::chrono::duration<double>(now - window.start).count();
  if (!started || seconds >= kWindowSeconds) {
    // The system calls once a window only: a tiny statement's set costs a few microseconds.
    const long switches = involuntary_switches();
    const bool preempted = started && switches >= 0 && window.switches >= 0 &&
                           static_cast<double>(switches - window.switches) > kBusyRate * seconds;
    if (!started) window.last_busy = now - std::chrono::hours(1);
    const bool sign = preempted || overloaded();
    if (sign && window.sign) window.last_busy = now;
    window.sign = sign;
    window.start = now;
    window.switches = switches;
  }
  return std::chrono::duration<double>(now - window.last_busy).count() < kBusySeconds;
}

}  // namespace

// The count a scope of this thread replaced, 0 when none is backing off.
thread_local int replaced_threads = 0;

SharedMachineThreads::SharedMachineThreads() noexcept {
  if (!enabled() || omp_in_parallel() || replaced_threads > 0) return;
  const int threads = omp_get_max_threads();
  if (threads > 1 && measure()) {
    saved_ = threads;
    replaced_threads = threads;
    omp_set_num_threads(1);
  }
}

SharedMachineThreads::~SharedMachineThreads() {
  if (saved_ > 0) {
    omp_set_num_threads(saved_);
    replaced_threads = 0;
  }
}

int configured_threads() noexcept { return replaced_threads > 0 ? replaced_threads : omp_get_max_threads(); }

}  // namespace tenex::detail::cpu
