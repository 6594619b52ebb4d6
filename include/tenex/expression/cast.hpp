// tenex/expression/cast.hpp — a typecast between element types inside an expression, and the
// real-valued parts of a complex expression.
//
//   tenex::Tensor<float> f;  tenex::Tensor<double> d, r;
//   r("i,j") = tenex::cast<double>(f("i,k") * f("k,j")) + d("i,j");   // product in float, sum in double
//   tenex::Tensor<std::complex<double>> z;
//   r("i,j") = tenex::real(z("i,j")) + tenex::abs(z("i,j"));           // real results of a complex z
//
// The operand is evaluated in its own element type (its linked set) and converted when
// the expression that uses the cast runs; nothing is computed when the cast is written.
#pragma once

#include <complex>

#include "tenex/expression/elementwise.hpp"
#include "tenex/expression/expression.hpp"

namespace tenex {

/// The value of an expression over `Tensor<V>` as an expression over `Tensor<U>`: float <->
/// double, real -> complex (imaginary part 0), complex -> complex; from complex to real only
/// through ComplexPart (real, imag, abs, arg).
template <class U, class V>
class TENEX_API Cast final : public Expression<Tensor<U>> {
 public:
  explicit Cast(const Expression<Tensor<V>>& operand);
  std::string_view name() const override { return "Cast"; }
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

/// `e` converted to element type U (float <-> double, real -> complex; U == V copies). From
/// complex to real is a compile error: say which part (tenex::real, imag, abs, arg).
template <class U, class V>
Cast<U, V> cast(const Expression<Tensor<V>>& e) {
  static_assert(is_complex_v<U> || !is_complex_v<V>,
                "tenex::cast: from complex to real drops the imaginary part; say which real value you mean: "
                "tenex::real, tenex::imag, tenex::abs or tenex::arg");
  return Cast<U, V>(e);
}

/// A real value of each element of a complex expression over `Tensor<std::complex<R>>`: its
/// real or imaginary part, modulus or argument (FusedOp real_part, imag_part, abs, arg), as an
/// expression over `Tensor<R>`.
template <class R>
class TENEX_API ComplexPart final : public Expression<Tensor<R>> {
 public:
  /// Throws tenex::Error when `part` is not one of the four.
  ComplexPart(const Expression<Tensor<std::complex<R>>>& operand, FusedOp part);
  std::string_view name() const override { return "ComplexPart"; }
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

/// The real part of each element: `tenex::real(z("i"))` is an expression over Tensor<R>.
template <class R>
ComplexPart<R> real(const Expression<Tensor<std::complex<R>>>& e);
/// The imaginary part of each element.
template <class R>
ComplexPart<R> imag(const Expression<Tensor<std::complex<R>>>& e);
/// The modulus |z| of each element (a real expression; abs of a real expression is real too).
template <class R>
ComplexPart<R> abs(const Expression<Tensor<std::complex<R>>>& e);
/// The argument of each element, in (-pi, pi].
template <class R>
ComplexPart<R> arg(const Expression<Tensor<std::complex<R>>>& e);
/// The Frobenius norm of a complex expression, a real rank-0 expression: sqrt of the sum of |z|^2.
template <class R>
Unary<Tensor<R>> norm2(const Expression<Tensor<std::complex<R>>>& e);

#define TENEX_DECLARE_CAST_FROM(U, V) extern template class Cast<U, V>;
#define TENEX_DECLARE_CAST(U)                     \
  TENEX_DECLARE_CAST_FROM(U, float)               \
  TENEX_DECLARE_CAST_FROM(U, double)              \
  TENEX_DECLARE_CAST_FROM(U, std::complex<float>) \
  TENEX_DECLARE_CAST_FROM(U, std::complex<double>)
TENEX_FOR_EACH_SCALAR(TENEX_DECLARE_CAST)
#undef TENEX_DECLARE_CAST
#undef TENEX_DECLARE_CAST_FROM
extern template class ComplexPart<float>;
extern template class ComplexPart<double>;

}  // namespace tenex
