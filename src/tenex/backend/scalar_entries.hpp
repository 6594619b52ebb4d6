// Entries of either kind, for the backends' checks and messages: a complex entry is a pair of
// reals. Shared by the CPU's LAPACK drivers and the distributed backend's ScaLAPACK drivers, so
// that both judge and name things alike.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <string>
#include <type_traits>

#include "tenex/scalar.hpp"

namespace tenex::detail {

/// BLAS and LAPACK's precision letter of T: s, d, c or z.
template <class T>
constexpr char precision_letter() {
  static_assert(is_supported_scalar_v<T>,
                "tenex linear algebra supports T = float, double, std::complex<float> and std::complex<double> only");
  return std::is_same_v<T, float>                 ? 's'
         : std::is_same_v<T, double>              ? 'd'
         : std::is_same_v<T, std::complex<float>> ? 'c'
                                                  : 'z';
}

/// LAPACK's name of a routine for T ("dpotrf"); `complex_suffix` where the Hermitian routine
/// has another name (syevd: heevd, sygvd: hegvd, orgqr: ungqr).
template <class T>
std::string lapack_routine_name(const char* suffix, const char* complex_suffix = nullptr) {
  std::string name(1, precision_letter<T>());
  return name += is_complex_v<T> && complex_suffix != nullptr ? complex_suffix : suffix;
}

/// conj(x) for complex x, x itself for real x.
template <class T>
T conjugate(T x) {
  if constexpr (is_complex_v<T>) {
    return std::conj(x);
  } else {
    return x;
  }
}

/// Both parts finite.
template <class T>
bool is_finite_entry(T x) {
  if constexpr (is_complex_v<T>) {
    return std::isfinite(x.real()) && std::isfinite(x.imag());
  } else {
    return std::isfinite(x);
  }
}

/// Either part NaN.
template <class T>
bool is_nan_entry(T x) {
  if constexpr (is_complex_v<T>) {
    return std::isnan(x.real()) || std::isnan(x.imag());
  } else {
    return std::isnan(x);
  }
}

/// The entry in double precision (double or std::complex<double>), for the checks' sums.
template <class T>
auto widen(T x) {
  if constexpr (is_complex_v<T>) {
    return std::complex<double>(x);
  } else {
    return static_cast<double>(x);
  }
}

/// max(|re x|, |im x|) for complex x, |x| for real, in double: what overflows when scaled
/// by a power of two.
template <class T>
double largest_part(T x) {
  if constexpr (is_complex_v<T>) {
    return std::max(std::abs(static_cast<double>(x.real())), std::abs(static_cast<double>(x.imag())));
  } else {
    return std::abs(static_cast<double>(x));
  }
}

/// x 2^e, each part for complex x (exact unless it overflows or underflows).
template <class T>
T scale_entry(T x, int e) {
  if constexpr (is_complex_v<T>) {
    return T(std::ldexp(x.real(), e), std::ldexp(x.imag(), e));
  } else {
    return std::ldexp(x, e);
  }
}

}  // namespace tenex::detail
