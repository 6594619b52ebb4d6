// The machine's cache sizes and the probe of one core's rates (machine.hpp).
#include "tenex/backend/cpu/machine.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "tenex/backend/cpu/contraction_problem.hpp"
#include "tenex/backend/cpu/gemm_call.hpp"
#include "tenex/backend/cpu/gett_kernel.hpp"
#include "tenex/backend/cpu/simd.hpp"
#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/config.hpp"
#include "tenex/settings.hpp"

namespace tenex::detail::cpu::machine {
namespace {

std::atomic<std::size_t> probes{0};
// set_caches_for_testing's sizes, where pinned.
Caches pinned_sizes;
std::atomic<const Caches*> pinned{nullptr};

// sysconf's answer for `name`, or 0 (glibc answers 0 or -1 where it does not know).
std::size_t from_sysconf([[maybe_unused]] int name) {
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  const long value = ::sysconf(name);
  return value > 0 ? static_cast<std::size_t>(value) : 0;
#else
  return 0;
#endif
}

// /sys/devices/system/cpu/cpu0/cache/index<x>: the size of the data or unified cache of
// `level`, or 0.
std::size_t from_sys(int level) {
  for (int x = 0; x < 8; ++x) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(x) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int found = 0;
    std::string type, size;
    if (!(level_file >> found) || !(type_file >> type) || !(size_file >> size)) continue;
    if (found != level || type == "Instruction" || size.empty()) continue;
    std::size_t value = 0;
    std::size_t digits = 0;
    while (digits < size.size() && size[digits] >= '0' && size[digits] <= '9') {
      value = value * 10 + static_cast<std::size_t>(size[digits] - '0');
      ++digits;
    }
    const char unit = digits < size.size() ? size[digits] : ' ';
    if (unit == 'K') value <<= 10;
    if (unit == 'M') value <<= 20;
    if (value > 0) return value;
  }
  return 0;
}

template <class T>
double time_gett(std::size_t n) {
  contraction::Prepared prepared = contraction::prepare(sizeof(T), true, {n, n}, {0, 2}, {n, n}, {2, 1}, {0, 1});
  contraction::Problem& p = prepared.problem;
  p.threads = 1;
  if (contraction::gett_panel_operand(p) < 0) return 0;
  std::vector<T> a(n * n, T(0.5)), b(n * n, T(0.25)), c(n * n, T(0));
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run < tuning::kProbeRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    contraction::run_gett<T>(p, T(1), a.data(), b.data(), T(0), c.data());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * static_cast<double>(n * n * n) / best;
}

// Bytes per second (reads plus writes) of a copy between two buffers larger than the L2,
// touched first, the best of kProbeRuns.
double time_copy() {
  const std::size_t bytes = tuning::kProbeCopyBytes;
  std::vector<char> from(bytes, 1), to(bytes, 0);
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run < tuning::kProbeRuns; ++run) {
    from[static_cast<std::size_t>(run)] = static_cast<char>(run);
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // Keeps the copy from being dropped as dead.
  volatile char sink = to[static_cast<std::size_t>(tuning::kProbeRuns - 1)];
  (void)sink;
  return 2.0 * static_cast<double>(bytes) / best;
}

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string name = line.substr(colon + 1);
    const std::size_t first = name.find_first_not_of(" \t");
    return first == std::string::npos ? "unknown" : name.substr(first);
  }
  return "unknown";
}

}  // namespace

Caches read_caches() {
  Caches out;
#if defined(_SC_LEVEL1_DCACHE_SIZE)
  const std::size_t sys_l1 = from_sysconf(_SC_LEVEL1_DCACHE_SIZE), sys_l2 = from_sysconf(_SC_LEVEL2_CACHE_SIZE),
                    sys_l3 = from_sysconf(_SC_LEVEL3_CACHE_SIZE);
#else
  const std::size_t sys_l1 = 0, sys_l2 = 0, sys_l3 = 0;
#endif
  const std::size_t l1 = sys_l1 > 0 ? sys_l1 : from_sys(1);
  const std::size_t l2 = sys_l2 > 0 ? sys_l2 : from_sys(2);
  const std::size_t l3 = sys_l3 > 0 ? sys_l3 : from_sys(3);
  if (l1 > 0) out.l1d = l1;
  if (l2 > 0) out.l2 = l2;
  // A machine without an L3 (many ARM cores): the L2 is the last level.
  out.l3 = l3 > 0 ? l3 : std::max(out.l2, l2 > 0 ? l2 : out.l3);
  out.l2 = std::max(out.l2, out.l1d);
  out.l3 = std::max(out.l3, out.l2);
  return out;
}

const Caches& caches() {
  if (const Caches* sizes = pinned.load(std::memory_order_acquire)) return *sizes;
  static const Caches sizes = read_caches();
  return sizes;
}

void set_caches_for_testing(const Caches* sizes) {
  if (sizes == nullptr) {
    pinned.store(nullptr, std::memory_order_release);
    return;
  }
  pinned_sizes = *sizes;
  pinned.store(&pinned_sizes, std::memory_order_release);
}

bool probe_enabled() {
  const char* value = setting(Setting::probe);
  if (!value) return true;
  const std::string text = value;
  return !(text == "0" || text == "off" || text == "no" || text == "false");
}

Probed probe(std::size_t element_size) {
  probes.fetch_add(1, std::memory_order_relaxed);
  const auto start = std::chrono::steady_clock::now();
  Probed out;
  const std::size_t n = tuning::kProbeExtent;
  out.gemm = contraction::probe_core_peak(element_size, n);
  out.gett = element_size == 4 ? time_gett<float>(n) : time_gett<double>(n);
  out.copy = time_copy();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::size_t probe_count() { return probes.load(std::memory_order_relaxed); }

ProbeKey probe_key() {
  ProbeKey key;
  key.version = TENEX_VERSION_STRING;
#if defined(__x86_64__) || defined(__i386__)
  key.isa = __builtin_cpu_supports("avx512f") ? "avx512f" : __builtin_cpu_supports("avx2") ? "avx2" : "baseline";
#else
  key.isa = "baseline";
#endif
  key.simd = simd_target_name();
  static const std::string model = read_cpu_model();
  key.cpu = model;
  return key;
}

}  // namespace tenex::detail::cpu::machine
