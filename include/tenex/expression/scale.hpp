// tenex/expression/scale.hpp — a scalar factor: `2.0 * e`, `e * 2.0`, `e / 2.0`, `-e`.
//
//   E("") = T("i,a,j,b") * (2.0 * V("i,a,j,b") - V("i,b,j,a"));
#pragma once

#include <complex>

#include "tenex/error.hpp"
#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Scale : public Nary<1, T> {
 public:
  Scale(const Expression<T>& operand, double factor);
  /// A complex factor: for complex expressions only (a real one throws tenex::Error).
  Scale(const Expression<T>& operand, std::complex<double> factor);
  std::string_view name() const override { return "Scale"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
  /// The factor applied (a scale of a scale holds their product); its real part when complex.
  double factor() const;
  /// The factor applied, as a complex number (imaginary part 0 unless a complex factor was given).
  std::complex<double> complex_factor() const;
};

template <class T>
Scale<T> operator*(double factor, const Expression<T>& operand);
template <class T>
Scale<T> operator*(const Expression<T>& operand, double factor);
/// Throws tenex::Error for a divisor of 0.
template <class T>
Scale<T> operator/(const Expression<T>& operand, double divisor);
template <class T>
Scale<T> operator-(const Expression<T>& operand);

/// Complex scalars on either side of a complex expression: `std::complex<double>(0, 1) * a("i")`.
/// On a real expression they are a compile error: cast it first (tenex::cast).
template <class T>
requires is_complex_v<typename ObjectTraits<T>::scalar> Scale<T>
operator*(std::complex<double> factor, const Expression<T>& operand) { return Scale<T>(operand, factor); }
template <class T>
requires is_complex_v<typename ObjectTraits<T>::scalar> Scale<T>
operator*(const Expression<T>& operand, std::complex<double> factor) { return Scale<T>(operand, factor); }
/// Throws tenex::Error for a divisor of 0.
template <class T>
requires is_complex_v<typename ObjectTraits<T>::scalar> Scale<T>
operator/(const Expression<T>& operand, std::complex<double> divisor) {
  if (divisor == 0.0) throw Error("tenex: Scale: division of " + operand.to_string() + " by the scalar 0");
  return Scale<T>(operand, 1.0 / divisor);
}

#define TENEX_DECLARE_SCALE(T)                                                   \
  extern template class Scale<T>;                                                \
  extern template TENEX_API Scale<T> operator*<T>(double, const Expression<T>&); \
  extern template TENEX_API Scale<T> operator*<T>(const Expression<T>&, double); \
  extern template TENEX_API Scale<T> operator/<T>(const Expression<T>&, double); \
  extern template TENEX_API Scale<T> operator-<T>(const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_SCALE)
#undef TENEX_DECLARE_SCALE

}  // namespace tenex
