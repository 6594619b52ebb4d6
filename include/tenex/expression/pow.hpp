// tenex/expression/pow.hpp — integer power of a square matrix.
//
//   p("i,j") = tenex::pow(a("i,j"), 3);            // a a a; n = 0 gives the identity
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
  explicit Pow(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
  std::string_view name() const override { return "Pow"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
  /// The power n of pow(a, n).
  unsigned power() const;
};

/// Throws ShapeError unless `a` is a square matrix, tenex::Error for n < 0 (the inverse's
/// powers are not supported yet).
template <class T>
Pow<T> pow(const Expression<T>& a, int n);
/// p must be a non-negative whole number (tenex::Error otherwise: fractional powers are not
/// supported yet); pow(a, 2.0) is pow(a, 2).
template <class T>
Pow<T> pow(const Expression<T>& a, double p);
/// Any other integer type: pow(a, 3u), pow(a, std::size_t{2}).
template <class T, class I>
requires(std::is_integral_v<I> && !std::is_same_v<I, int> &&
         !std::is_same_v<I, bool>) Pow<T> pow(const Expression<T>& a, I n) {
  if (static_cast<long double>(n) > 1e9L) return pow(a, static_cast<double>(n));  // reported as out of range
  return pow(a, static_cast<int>(n));
}

#define TENEX_DECLARE_POW(T)                                          \
  extern template class Pow<T>;                                       \
  extern template TENEX_API Pow<T> pow<T>(const Expression<T>&, int); \
  extern template TENEX_API Pow<T> pow<T>(const Expression<T>&, double);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_POW)
#undef TENEX_DECLARE_POW

}  // namespace tenex
