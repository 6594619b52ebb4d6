// tenex/expression/pow.hpp — powers of a square matrix.
//
//   p("i,j") = tenex::pow(a("i,j"), 3);            // a a a; n = 0 gives the identity
//   q("i,j") = tenex::pow(a("i,j"), -2);           // the square of the inverse
//   x("m,n") = tenex::pow(s("m,n"), -0.5);         // s^-1/2 (Löwdin), s symmetric positive definite
//
// The result is labelled like a. A fractional power goes through the eigendecomposition
// a = V diag(w) V^T: a^p = V diag(w^p) V^T, for symmetric positive (semi)definite a.
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Pow : public Nary<1, T> {
 public:
  std::string_view name() const override { return "Pow"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
  /// The power as given: n of pow(a, n) (negative: of the inverse), p of pow(a, p).
  double power() const;

 private:
  friend struct detail::Access;
  explicit Pow(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

/// Throws ShapeError unless `a` is a square matrix. n < 0 is the power -n of the inverse
/// (LU; a singular matrix is a NumericalError on read), n = 0 the identity.
template <class T>
Pow<T> pow(const Expression<T>& a, int n);
/// A whole p is pow(a, int(p)) (pow(a, 2.0) is pow(a, 2), pow(a, -1.0) the inverse); any
/// other p needs a symmetric positive (semi)definite a, checked on read: a non-symmetric a
/// (relative tolerance), a negative eigenvalue beyond n epsilon max |w|, or for p < 0 a zero
/// one, is a NumericalError; eigenvalues within that tolerance of zero count as zero.
/// Throws ShapeError unless `a` is a square matrix, tenex::Error for a non-finite p.
template <class T>
Pow<T> pow(const Expression<T>& a, double p);
/// Any other integer type: pow(a, 3u), pow(a, std::size_t{2}).
template <class T, class I>
requires(std::is_integral_v<I> && !std::is_same_v<I, int> &&
         !std::is_same_v<I, bool>) Pow<T> pow(const Expression<T>& a, I n) {
  if (static_cast<long double>(n) > 1e9L || static_cast<long double>(n) < -1e9L) {
    return pow(a, static_cast<double>(n));  // reported as out of range
  }
  return pow(a, static_cast<int>(n));
}

#define TENEX_DECLARE_POW(T)                                          \
  extern template class Pow<T>;                                       \
  extern template TENEX_API Pow<T> pow<T>(const Expression<T>&, int); \
  extern template TENEX_API Pow<T> pow<T>(const Expression<T>&, double);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_POW)
#undef TENEX_DECLARE_POW

}  // namespace tenex
