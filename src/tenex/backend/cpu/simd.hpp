// The SIMD target of the kernels written over Google Highway's portable vectors
// (gett_kernel.cpp, narrow_kernel.cpp, gather_kernel.cpp, permute.cpp, fused.cpp): each is compiled for every target
// Highway offers here (x86: AVX-512, AVX2, SSE4 and portable scalar code; ARM: NEON and scalar code), and the best one
// the running CPU has is picked at run time. TENEX_SIMD=avx512|avx2|sse4|neon|scalar (read once) caps the choice: a
// named target the CPU lacks falls back to the best it has below it; any other value leaves the default.
#pragma once

#include <hwy/targets.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tenex::detail::cpu {

// The Highway targets (HWY_TARGETS bits) the kernels may use now: those the CPU runs, less
// those above TENEX_SIMD's or set_simd_target_for_test's cap.
std::int64_t simd_allowed_targets();

// The index in a dispatch table of HWY_EXPORT of the target the kernels run, given the table's
// compiled targets (HWY_CHOSEN_TARGET_MASK_TARGETS in the file that made it).
inline std::size_t simd_table_index(std::int64_t compiled) {
  const auto chosen = HWY_CHOSEN_TARGET_SHIFT(simd_allowed_targets()) | HWY_CHOSEN_TARGET_MASK_SCALAR;
  return hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<std::uint64_t>(chosen & compiled));
}

// The function of table HWY_EXPORT(FUNC) for the chosen target. Unlike HWY_DYNAMIC_DISPATCH,
// it does not read or set Highway's process-wide choice, which a program of the user's may own.
#if HWY_IDE || ((HWY_TARGETS & (HWY_TARGETS - 1)) == 0)
#define TENEX_SIMD_DISPATCH(FUNC) (*HWY_DISPATCH_TABLE(FUNC)[0])
#else
#define TENEX_SIMD_DISPATCH(FUNC) \
  (*HWY_DISPATCH_TABLE(FUNC)[::tenex::detail::cpu::simd_table_index(HWY_CHOSEN_TARGET_MASK_TARGETS)])
#endif

// The name of the target the kernels run: "avx512", "avx2", "sse4", "ssse3", "neon",
// "scalar" (Highway's portable emulation), or Highway's own name for another.
const char* simd_target_name();

// Values of T (float or double) in one vector of that target.
template <class T>
std::size_t simd_lanes();

// Vector registers of that target (16 on x86 below AVX-512, 32 on AVX-512 and ARM): the
// kernels size their tiles of sums from it.
std::size_t simd_vector_registers();

// The names of the targets this CPU runs among those compiled, best first ("scalar" last).
std::vector<std::string> simd_targets_available();

// For tests: caps the target as TENEX_SIMD would (a name of simd_targets_available()); an empty
// name goes back to TENEX_SIMD's choice. Not for use while kernels run on other threads.
void set_simd_target_for_test(std::string_view name);

}  // namespace tenex::detail::cpu
