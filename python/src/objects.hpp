// tenex.Tensor, tenex's expressions as Python objects, and what the three objects_*.cpp share.
//
//   Expr e = make_expr(a_view("i,k") * b_view("k,j"), {a_tensor, b_tensor});
//   Expr promoted = cast_to(e, Dtype::complex128);      // real -> complex through tenex::cast
//   with_expr(promoted, [&](const auto& x) { ... });    // x: const Expression<Tensor<T>>&
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <complex>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <tenex/tenex.hpp>

#include "arrays.hpp"

namespace tenex_python {

namespace py = pybind11;

template <class T>
using ExprPtr = std::shared_ptr<const tenex::Expression<tenex::Tensor<T>>>;

/// The factors of one decomposition, assigned outside lazy(): run together (objects_tensor.cpp).
struct Group;
/// A group of `members` factors.
std::shared_ptr<Group> make_group(std::size_t members);

/// A tenex expression as Python holds it. The alternatives are in Dtype's order.
struct Expr {
  std::variant<ExprPtr<float>, ExprPtr<double>, ExprPtr<std::complex<float>>, ExprPtr<std::complex<double>>> value;
  /// The tenex.Tensor objects the expression reads or writes: their arrays must outlive its set.
  std::vector<py::object> keep;
  /// Set on the factors a decomposition returns (the same group for all of them).
  std::shared_ptr<Group> group;

  Dtype dtype() const { return static_cast<Dtype>(value.index()); }
};

/// Several expressions: the factors of a decomposition (a Python tuple of Expr).
using ExprTuple = std::vector<Expr>;

/// Holds `e` (any expression class of the library) as an Expr that keeps `keep` alive.
template <class E>
Expr make_expr(E e, std::vector<py::object> keep) {
  using Object = typename std::decay_t<E>::object_type;
  using T = typename Object::value_type;
  Expr result;
  result.value = ExprPtr<T>(std::make_shared<std::decay_t<E>>(std::move(e)));
  result.keep = std::move(keep);
  return result;
}

/// Calls f(expression) with the C++ expression of `e`.
template <class F>
decltype(auto) with_expr(const Expr& e, F&& f) {
  return std::visit([&](const auto& pointer) -> decltype(auto) { return f(*pointer); }, e.value);
}

/// Both keep lists.
std::vector<py::object> joined(const std::vector<py::object>& a, const std::vector<py::object>& b);

/// The numpy dtype of `dtype`.
py::dtype numpy_dtype(Dtype dtype);
/// The Dtype of a numpy dtype (or anything numpy.dtype() takes); TypeError for others.
Dtype dtype_from(const py::object& dtype);
/// "float32", "float64", "complex64", "complex128".
std::string dtype_text(Dtype dtype);
/// The type both promote to: complex if either is, 64-bit if either is.
Dtype promoted(Dtype a, Dtype b);
/// `e` converted to `dtype` through tenex::cast (real -> complex, float32 <-> float64); TypeError
/// from complex to real (say which part: tenex.real, imag, abs, arg).
Expr cast_to(const Expr& e, Dtype dtype);

/// The C++ element type of `dtype` as a Tag, for with_dtype.
template <class T>
constexpr Dtype dtype_tag() {
  if constexpr (std::is_same_v<T, float>) return Dtype::float32;
  if constexpr (std::is_same_v<T, double>) return Dtype::float64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return Dtype::complex64;
  if constexpr (std::is_same_v<T, std::complex<double>>) return Dtype::complex128;
}

/// The expression of `e` as an expression over Tensor<T> (e must be of that dtype).
template <class T>
const tenex::Expression<tenex::Tensor<T>>& expression_of(const Expr& e) {
  return *std::get<ExprPtr<T>>(e.value);
}

// The three parts of bind_objects.
void bind_tensor(py::module_& m);
void bind_expressions(py::module_& m);
void bind_algebra(py::module_& m);

}  // namespace tenex_python
