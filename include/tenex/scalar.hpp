// tenex/scalar.hpp — the element types tenex supports, listed once.
//
// TENEX_FOR_EACH_SCALAR(X) expands X(float) X(double); it drives the explicit
// instantiations inside the library and the type lists of the tests.
#pragma once

#include <type_traits>

#define TENEX_FOR_EACH_SCALAR(X) X(float) X(double)

/// The objects expressions are built over; drives the expression instantiations.
#define TENEX_FOR_EACH_OBJECT(X) X(::tenex::Tensor<float>) X(::tenex::Tensor<double>) X(::tenex::Shape)

namespace tenex {

class Shape;
template <class T>
class Tensor;

/// True for the element types tenex tensors support.
template <class T>
inline constexpr bool is_supported_scalar_v = std::is_same_v<T, float> || std::is_same_v<T, double>;

/// The objects an expression can be built over: Tensor<float>, Tensor<double>, Shape.
template <class T>
struct ObjectTraits;
template <>
struct ObjectTraits<Shape> {
  using scalar = void;
};
template <>
struct ObjectTraits<Tensor<float>> {
  using scalar = float;
};
template <>
struct ObjectTraits<Tensor<double>> {
  using scalar = double;
};

/// The element type tag carried by graphs (a Shape set carries no data).
enum class DType { f32, f64, shape };

template <class Object>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<Tensor<float>>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<Tensor<double>>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<Shape>() {
  return DType::shape;
}

}  // namespace tenex
