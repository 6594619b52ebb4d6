// The sparse backend's vector loops (gather_kernel.hpp): this file compiles itself once per
// SIMD target (hwy/foreach_target.h), and the functions call the target simd.hpp picks.
#ifndef TENEX_GATHER_KERNEL_CPP_ONCE
#define TENEX_GATHER_KERNEL_CPP_ONCE
#include "tenex/backend/cpu/gather_kernel.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tenex/backend/cpu/simd.hpp"
#endif  // TENEX_GATHER_KERNEL_CPP_ONCE

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tenex/backend/cpu/gather_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// A vector of T with 32-bit offsets: for double, a vector of half as many int32 lanes.
template <class T>
void gather_axpy_vectors(T* HWY_RESTRICT c, T a, const T* HWY_RESTRICT b, const std::int32_t* HWY_RESTRICT index,
                         std::size_t n) {
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<std::int32_t, decltype(d)> d32;  // as many int32 lanes as d has
  const std::size_t lanes = hn::Lanes(d);
  const auto s = hn::Set(d, a);
  std::size_t y = 0;
  for (; y + lanes <= n; y += lanes) {
    const auto offsets = hn::PromoteTo(di, hn::LoadU(d32, index + y));
    hn::StoreU(hn::MulAdd(s, hn::GatherIndex(d, b, offsets), hn::LoadU(d, c + y)), d, c + y);
  }
  for (; y < n; ++y) c[y] += a * b[index[y]];  // fewer than a vector
}

template <>
void gather_axpy_vectors<float>(float* HWY_RESTRICT c, float a, const float* HWY_RESTRICT b,
                                const std::int32_t* HWY_RESTRICT index, std::size_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const std::size_t lanes = hn::Lanes(d);
  const auto s = hn::Set(d, a);
  std::size_t y = 0;
  for (; y + lanes <= n; y += lanes) {
    hn::StoreU(hn::MulAdd(s, hn::GatherIndex(d, b, hn::LoadU(di, index + y)), hn::LoadU(d, c + y)), d, c + y);
  }
  for (; y < n; ++y) c[y] += a * b[index[y]];
}

void gather_axpy_float(float* c, float a, const float* b, const std::int32_t* index, std::size_t n) {
  gather_axpy_vectors<float>(c, a, b, index, n);
}
void gather_axpy_double(double* c, double a, const double* b, const std::int32_t* index, std::size_t n) {
  gather_axpy_vectors<double>(c, a, b, index, n);
}

void stream_bytes_target(char* to, const char* from, std::size_t bytes) {
  const hn::ScalableTag<std::uint8_t> d;
  const std::size_t lanes = hn::Lanes(d);
  // Up to the first 64-byte line, then whole vectors, then the rest.
  const std::size_t head = std::min(bytes, (64 - reinterpret_cast<std::uintptr_t>(to) % 64) % 64);
  if (from) {
    std::memcpy(to, from, head);
  } else {
    std::memset(to, 0, head);
  }
  std::size_t x = head;
  auto* out = reinterpret_cast<std::uint8_t*>(to);
  const auto* in = reinterpret_cast<const std::uint8_t*>(from);
  for (; x + lanes <= bytes; x += lanes) hn::Stream(from ? hn::LoadU(d, in + x) : hn::Zero(d), d, out + x);
  if (from) {
    std::memcpy(to + x, from + x, bytes - x);
  } else {
    std::memset(to + x, 0, bytes - x);
  }
  hwy::FlushStream();
}

bool streams() { return HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128; }

}  // namespace
}  // namespace tenex::detail::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tenex::detail::cpu {

HWY_EXPORT(gather_axpy_float);
HWY_EXPORT(gather_axpy_double);
HWY_EXPORT(stream_bytes_target);
HWY_EXPORT(streams);

void gather_axpy_simd(float* c, float a, const float* b, const std::int32_t* index, std::size_t n) {
  TENEX_SIMD_DISPATCH(gather_axpy_float)(c, a, b, index, n);
}
void gather_axpy_simd(double* c, double a, const double* b, const std::int32_t* index, std::size_t n) {
  TENEX_SIMD_DISPATCH(gather_axpy_double)(c, a, b, index, n);
}

void stream_bytes(char* to, const char* from, std::size_t bytes) {
  TENEX_SIMD_DISPATCH(stream_bytes_target)(to, from, bytes);
}

bool streams_past_caches() { return TENEX_SIMD_DISPATCH(streams)(); }

}  // namespace tenex::detail::cpu
#endif  // HWY_ONCE
