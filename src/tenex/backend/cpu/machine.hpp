// What the cost model knows about the machine it runs on: the data cache sizes, read from the
// system, and the rates of one core, probed once per process (or loaded from a plan file).
//
// The probe times, on the calling thread and one core, a 128 x 128 x 128 product three ways:
// the BLAS GEMM (sgemm or dgemm), the GETT kernel (gett_kernel.hpp) on the same shape with
// its SIMD target, and a copy through memory. It runs at most once per element size per
// process, the first time a contraction large enough to need the model's rates is planned
// (kProbeMinFlops in tuning.hpp), a few milliseconds in all; TENEX_PROBE=0 skips it, and the
// model then uses the constants of tuning.hpp.
#pragma once

#include <cstddef>
#include <string>

namespace tenex::detail::cpu::machine {

// Data cache sizes in bytes. l1d and l2 are one core's; l3 is the last level's whole size
// (shared). Where neither sysconf nor /sys answers, the defaults below stand.
struct Caches {
  std::size_t l1d = 32 * 1024;
  std::size_t l2 = 1024 * 1024;
  std::size_t l3 = 8 * 1024 * 1024;
};

// The sizes of this machine (read once), or those pinned by set_caches_for_testing.
const Caches& caches();
// Read afresh (for the tests): sysconf first, /sys/devices/system/cpu/cpu0/cache next.
Caches read_caches();
// For tests: pins the sizes caches() answers to another machine's (a profile: a test that
// checks a choice made from the caches states the machine it assumes), or, given null, goes
// back to this machine's. Plans made before are not remade (plan_search::reset_for_testing
// forgets them). Not for use while kernels run or plans are made on other threads.
void set_caches_for_testing(const Caches* sizes);

// Rates of one core; 0 where unknown. Index 0: float, 1: double.
struct Rates {
  double gemm[2] = {0, 0};  // BLAS GEMM, flops per second
  double gett[2] = {0, 0};  // the GETT kernel on the same shape, flops per second
  double copy = 0;          // bytes per second a copy through memory moves (reads plus writes)
};

// Whether the probe may run: TENEX_PROBE is unset, or anything but 0, off, no or false.
bool probe_enabled();

// Times the machine for `element_size` (4 or 8): the GEMM and GETT rates of that type, and
// the copy bandwidth. Each call counts (probe_count).
struct Probed {
  double gemm = 0, gett = 0, copy = 0;
  double seconds = 0;  // what the probe took
};
Probed probe(std::size_t element_size);

// Probes run in this process so far (the tests check it stays at most one per element size).
std::size_t probe_count();

// The key a probe entry of a plan file carries: tenex version, instruction set, SIMD target
// of the kernels and CPU model.
struct ProbeKey {
  std::string version, isa, simd, cpu;
};
ProbeKey probe_key();

}  // namespace tenex::detail::cpu::machine
