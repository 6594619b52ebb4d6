// The run-time choice of SIMD target (simd.hpp): this file is compiled once per target, as
// the kernels are, so that it reports the target their dispatch picks.
#ifndef TENEX_SIMD_CPP_ONCE
#define TENEX_SIMD_CPP_ONCE
#include "tenex/backend/cpu/simd.hpp"
#include "tenex/settings.hpp"

#include <atomic>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace tenex::detail::cpu {
// What the kernels of a target see.
struct TargetInfo {
  std::int64_t target;
  std::size_t float_lanes, double_lanes, registers;
};
}  // namespace tenex::detail::cpu
#endif  // TENEX_SIMD_CPP_ONCE

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tenex/backend/cpu/simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

TargetInfo target_info() {
  constexpr bool wide = HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_ARCH_ARM;
  return TargetInfo{HWY_TARGET, hn::Lanes(hn::ScalableTag<float>()), hn::Lanes(hn::ScalableTag<double>()),
                    wide ? std::size_t{32} : std::size_t{16}};
}

}  // namespace tenex::detail::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tenex::detail::cpu {
namespace {

HWY_EXPORT(target_info);

// Targets at and below `name`'s (Highway's bits grow as targets get weaker); 0 for an
// unknown name.
std::int64_t cap_of(std::string_view name) {
  auto below = [](std::int64_t target) { return ~(target - 1); };
  if (name == "avx512") return below(HWY_AVX3_DL);
  if (name == "avx2") return below(HWY_AVX2);
  if (name == "sse4") return below(HWY_SSE4);
  if (name == "ssse3") return below(HWY_SSSE3);
  if (name == "neon") return below(HWY_NEON);
  if (name == "scalar") return HWY_EMU128 | HWY_SCALAR;
  return 0;
}

std::int64_t from_environment() {
  const char* value = setting(Setting::simd);
  const std::int64_t cap = value == nullptr ? 0 : cap_of(value);
  return hwy::SupportedTargets() & (cap == 0 ? ~std::int64_t{0} : cap);
}

std::atomic<std::int64_t>& allowed() {
  static std::atomic<std::int64_t> targets{from_environment()};
  return targets;
}

const char* name_of(std::int64_t target) {
  if (target == HWY_AVX3 || target == HWY_AVX3_DL) return "avx512";
  if (target == HWY_AVX2) return "avx2";
  if (target == HWY_SSE4) return "sse4";
  if (target == HWY_SSSE3) return "ssse3";
  if (target == HWY_NEON) return "neon";
  if (target == HWY_EMU128 || target == HWY_SCALAR) return "scalar";
  return hwy::TargetName(target);
}

}  // namespace

std::int64_t simd_allowed_targets() { return allowed().load(std::memory_order_relaxed); }

const char* simd_target_name() { return name_of(TENEX_SIMD_DISPATCH(target_info)().target); }

template <>
std::size_t simd_lanes<float>() {
  return TENEX_SIMD_DISPATCH(target_info)().float_lanes;
}
template <>
std::size_t simd_lanes<double>() {
  return TENEX_SIMD_DISPATCH(target_info)().double_lanes;
}

std::size_t simd_vector_registers() { return TENEX_SIMD_DISPATCH(target_info)().registers; }

std::vector<std::string> simd_targets_available() {
  std::vector<std::string> names;
  const std::int64_t compiled = HWY_TARGETS | HWY_EMU128 | HWY_SCALAR;
  for (std::int64_t bits = hwy::SupportedTargets() & compiled; bits != 0; bits &= bits - 1) {
    const std::string name = name_of(bits & -bits);
    if (names.empty() || names.back() != name) names.push_back(name);
  }
  if (names.empty() || names.back() != "scalar") names.emplace_back("scalar");  // always compiled
  return names;
}

void set_simd_target_for_test(std::string_view name) {
  const std::int64_t cap = cap_of(name);
  allowed().store(name.empty() || cap == 0 ? from_environment() : hwy::SupportedTargets() & cap);
}

}  // namespace tenex::detail::cpu
#endif  // HWY_ONCE
