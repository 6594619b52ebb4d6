// tenex/expression/elementwise.hpp — element-wise functions, scalars on either side of an
// operator, user functions, element-wise max/min and reductions by label.
//
//   r("i,a") = tenex::exp(-beta * e("i,a"));              // Boltzmann factors
//   d("i,a") = 1.0 / (eo("i") - ev("a"));                 // a denominator, broadcast by label
//   y("i")   = tenex::map(x("i"), "expm1", [](double v) { return std::expm1(v); });
//   m("i")   = tenex::max_over(a("i,j"), "j");            // row maxima
//   n("")    = tenex::norm2(a("i,j"));                    // Frobenius norm
//
// A function applies to its operand's value element by element; a product inside it is
// contracted first (its summed labels are summed inside: exp(a("i,k") * b("k,j")) is the
// exponential of the matrix product). The labels the consumer drops are summed after the
// function: c("i") = tenex::exp(a("i,j")) is sum over j of exp(a(i,j)). The fusion pass
// evaluates chains of these with + - * / in one pass over memory.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tenex/expression/expression.hpp"

namespace tenex {

enum class FusedOp : unsigned char;   // the function table, tenex/graph/functions.hpp
enum class ReduceOp : unsigned char;  // tenex/graph/op_kind.hpp
struct ScalarFunction;                // tenex/graph/op_kind.hpp

/// An element-wise function of one operand: exp, sqrt, power, clamp, a scalar added, ...
template <class T>
class TENEX_API Unary : public Nary<1, T> {
 public:
  /// `operand` under `op` (a FusedOp of one value; power takes x, clamp x and y).
  Unary(const Expression<T>& operand, FusedOp op, double x = 0, double y = 0);
  /// `operand` under a C++ callable (tenex::map).
  Unary(const Expression<T>& operand, std::shared_ptr<const ScalarFunction> function);
  std::string_view name() const override { return "Unary"; }
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
  /// The function as text: "exp(x0)", "pow(x0, 0.5)", "(x0 + 3)", "expm1(x0)" for map's "expm1".
  std::string function() const;

 private:
  friend struct detail::Access;
  explicit Unary(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

/// Element-wise max or min of two operands, broadcasting by label like `+`.
template <class T>
class TENEX_API Binary : public Nary<2, T> {
 public:
  /// op: FusedOp::maximum or FusedOp::minimum.
  Binary(const Expression<T>& lhs, const Expression<T>& rhs, FusedOp op);
  std::string_view name() const override { return "Binary"; }
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
};

/// A sum, max or min over labels of the operand, which the result drops.
template <class T>
class TENEX_API Reduction : public Nary<1, T> {
 public:
  /// Throws ShapeError when a label of `labels` is not the operand's or repeats.
  Reduction(const Expression<T>& operand, std::string_view labels, ReduceOp op);
  std::string_view name() const override { return "Reduction"; }
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
  ReduceOp op() const;
  /// The labels reduced over.
  const std::vector<std::string>& reduced() const;
};

/// `scalar (op) e` (reversed) or `e (op) scalar`: the Unary of FusedOp add, subtract or divide.
template <class T>
Unary<T> scalar_op(const Expression<T>& e, FusedOp op, double scalar, bool scalar_first);

// The functions of API.md, each an expression (defined in the library, for every object).
template <class T>
Unary<T> exp(const Expression<T>& e);
template <class T>
Unary<T> log(const Expression<T>& e);
template <class T>
Unary<T> sqrt(const Expression<T>& e);
template <class T>
Unary<T> abs(const Expression<T>& e);
template <class T>
Unary<T> square(const Expression<T>& e);
template <class T>
Unary<T> sin(const Expression<T>& e);
template <class T>
Unary<T> cos(const Expression<T>& e);
template <class T>
Unary<T> tanh(const Expression<T>& e);
/// The complex conjugate element by element (a real expression's own value). Inside a
/// product it costs no pass of its own: the GEMM reads the operand conjugated.
template <class T>
Unary<T> conj(const Expression<T>& e);
/// The error function erf(e) = 2/sqrt(pi) * integral from 0 to e of exp(-t^2) dt, element by
/// element: `p("i") = 0.5 * (1.0 + tenex::erf(x("i") / std::sqrt(2.0)));` (normal CDF).
template <class T>
Unary<T> erf(const Expression<T>& e);
/// -1, 0 or 1 element by element; NaN for NaN (numpy's sign).
template <class T>
Unary<T> sign(const Expression<T>& e);
/// 1 / e element by element.
template <class T>
Unary<T> reciprocal(const Expression<T>& e);
/// e^p element by element (pow is the matrix power).
template <class T>
Unary<T> power(const Expression<T>& e, double p);
/// e limited to [lo, hi] element by element. Throws tenex::Error when lo > hi.
template <class T>
Unary<T> clamp(const Expression<T>& e, double lo, double hi);
/// Element-wise maximum and minimum, matching and broadcasting by label like `+`. NaN on
/// either side gives NaN (numpy's maximum and minimum, not std::max or fmax).
template <class T>
Binary<T> max(const Expression<T>& a, const Expression<T>& b);
template <class T>
Binary<T> min(const Expression<T>& a, const Expression<T>& b);

// Scalars on either side (e * s and e / s are Scale, in scale.hpp); s / e is element by element.
template <class T>
Unary<T> operator+(const Expression<T>& e, double s);
template <class T>
Unary<T> operator+(double s, const Expression<T>& e);
template <class T>
Unary<T> operator-(const Expression<T>& e, double s);
template <class T>
Unary<T> operator-(double s, const Expression<T>& e);
template <class T>
Unary<T> operator/(double s, const Expression<T>& e);

/// Explicit summation over `labels` ("j,k"): the result has the operand's other labels.
template <class T>
Reduction<T> sum(const Expression<T>& e, std::string_view labels);
/// Maximum and minimum over `labels`: NaN when any element reduced is NaN.
template <class T>
Reduction<T> max_over(const Expression<T>& e, std::string_view labels);
template <class T>
Reduction<T> min_over(const Expression<T>& e, std::string_view labels);
/// The Frobenius norm, rank 0: sqrt of the sum of squares of every element.
template <class T>
Unary<T> norm2(const Expression<T>& e);

namespace detail {
/// Called in a catch block around a tenex::map callable: carries the exception it threw out
/// of the backend to the set's results, whose every read rethrows that exception object.
[[noreturn]] TENEX_API void throw_from_callable();
/// The Unary of tenex::map: `f` under `name`.
template <class T>
TENEX_API Unary<T> map_unary(const Expression<T>& e, std::string name,
                             std::function<typename ObjectTraits<T>::scalar(typename ObjectTraits<T>::scalar)> f);
}  // namespace detail

/// A C++ callable applied element by element: `tenex::map(x("i"), "expm1", [](double v) { ... })`.
/// `f` takes and returns the element type (or something convertible). It runs on the CPU;
/// a backend that cannot call it evaluates that node on the CPU. Its name shows in plans.
/// An exception `f` throws is not turned into a tenex::Error: every read of the set's results
/// (at(), data(), wait(), ...) rethrows the very exception object `f` threw, as std::future does.
template <class T, class F>
requires(!std::is_void_v<typename ObjectTraits<T>::scalar>) Unary<T> map(const Expression<T>& e, std::string name,
                                                                         F f) {
  using S = typename ObjectTraits<T>::scalar;
  return detail::map_unary<T>(e, std::move(name), [f](S v) {
    try {
      return static_cast<S>(f(v));
    } catch (...) {
      detail::throw_from_callable();
    }
  });
}

#define TENEX_DECLARE_ELEMENTWISE(T)  \
  extern template class Unary<T>;     \
  extern template class Binary<T>;    \
  extern template class Reduction<T>; \
  extern template TENEX_API Unary<T> scalar_op<T>(const Expression<T>&, FusedOp, double, bool);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_ELEMENTWISE)
#undef TENEX_DECLARE_ELEMENTWISE
#define TENEX_DECLARE_MAP(T)                               \
  extern template TENEX_API Unary<T> detail::map_unary<T>( \
      const Expression<T>&, std::string,                   \
      std::function<typename ObjectTraits<T>::scalar(typename ObjectTraits<T>::scalar)>);
TENEX_FOR_EACH_TENSOR_OBJECT(TENEX_DECLARE_MAP)
#undef TENEX_DECLARE_MAP

}  // namespace tenex
