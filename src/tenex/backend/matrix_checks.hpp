// The matrix functions' messages and checks that do not depend on where the matrix lives:
// shared by the CPU's LAPACK drivers and the distributed backend's ScaLAPACK drivers, so that a
// bad input is the same error, word for word, on either backend.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include "tenex/error.hpp"

namespace tenex::detail {

/// A number in messages: three significant digits.
inline std::string short_number(double v) {
  std::ostringstream os;
  os.precision(3);
  os << v;
  return os.str();
}

/// "the matrix a(i,j) [4 x 4]" where the statement names it, else "the 4 x 4 matrix".
inline std::string matrix_text(std::string_view what, std::size_t n) {
  if (what.empty()) return "the " + std::to_string(n) + " x " + std::to_string(n) + " matrix";
  return "the matrix " + std::string(what);
}

/// pow(a, p)'s tests on the eigenvalues w (ascending, n of them) of a Hermitian a: a negative
/// power needs them positive, a fractional one non-negative, both up to n eps max |w|. Throws
/// NumericalError naming the smallest eigenvalue.
template <class R>
void check_power_eigenvalues(const R* w, std::size_t n, double p, std::string_view what) {
  const double largest = std::max(std::abs(static_cast<double>(w[0])), std::abs(static_cast<double>(w[n - 1])));
  const double zero = static_cast<double>(n) * std::numeric_limits<R>::epsilon() * largest;
  const double smallest = static_cast<double>(w[0]);
  if (p < 0 && !(smallest > zero)) {
    throw NumericalError("tenex: pow: " + matrix_text(what, n) + " is " +
                         (smallest < -zero ? "not positive definite" : "singular") + ": its smallest eigenvalue is " +
                         short_number(smallest) + " (largest magnitude " + short_number(largest) +
                         "); the negative power " + short_number(p) + " needs a positive definite matrix");
  }
  if (smallest < -zero) {
    throw NumericalError(
        "tenex: pow: " + matrix_text(what, n) + " is not positive semidefinite: its smallest eigenvalue is " +
        short_number(smallest) + " (largest magnitude " + short_number(largest) + ", tolerance " + short_number(zero) +
        "); the fractional power " + short_number(p) + " needs a symmetric positive (semi)definite matrix");
  }
}

}  // namespace tenex::detail
