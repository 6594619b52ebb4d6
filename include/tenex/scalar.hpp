// tenex/scalar.hpp — the element types tenex supports, listed once.
//
// TENEX_FOR_EACH_SCALAR(X) expands X(float) X(double) X(std::complex<float>)
// X(std::complex<double>); it drives the explicit instantiations inside the library and
// the type lists of the tests. TENEX_FOR_EACH_REAL_SCALAR and
// TENEX_FOR_EACH_COMPLEX_SCALAR list each half.
#pragma once

#include <complex>
#include <cstddef>
#include <type_traits>

#define TENEX_FOR_EACH_REAL_SCALAR(X) X(float) X(double)
#define TENEX_FOR_EACH_COMPLEX_SCALAR(X) X(std::complex<float>) X(std::complex<double>)
#define TENEX_FOR_EACH_SCALAR(X) TENEX_FOR_EACH_REAL_SCALAR(X) TENEX_FOR_EACH_COMPLEX_SCALAR(X)

/// The objects expressions are built over; drives the expression instantiations.
#define TENEX_FOR_EACH_OBJECT(X) \
  X(::tenex::Tensor<float>)      \
  X(::tenex::Tensor<double>)     \
  X(::tenex::Tensor<std::complex<float>>) X(::tenex::Tensor<std::complex<double>>) X(::tenex::Shape)
/// The objects whose elements are real or complex numbers (every object but Shape).
#define TENEX_FOR_EACH_TENSOR_OBJECT(X) \
  X(::tenex::Tensor<float>)             \
  X(::tenex::Tensor<double>)            \
  X(::tenex::Tensor<std::complex<float>>) X(::tenex::Tensor<std::complex<double>>)

namespace tenex {

class Shape;
template <class T>
class Tensor;

/// True for std::complex<float> and std::complex<double>.
template <class T>
inline constexpr bool is_complex_v = false;
template <class R>
inline constexpr bool is_complex_v<std::complex<R>> = true;

/// True for the element types tenex tensors support.
template <class T>
inline constexpr bool is_supported_scalar_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::complex<float>> ||
    std::is_same_v<T, std::complex<double>>;

/// The real type of an element type: float for float and std::complex<float>.
template <class T>
struct real_type {
  using type = T;
};
template <class R>
struct real_type<std::complex<R>> {
  using type = R;
};
/// real_type<T>::type.
template <class T>
using real_type_t = typename real_type<T>::type;

/// The objects an expression can be built over: Tensor<T> for each element type, Shape.
template <class T>
struct ObjectTraits;
template <>
struct ObjectTraits<Shape> {
  using scalar = void;
};
template <class T>
struct ObjectTraits<Tensor<T>> {
  using scalar = T;
};

/// The object that holds the real values of a decomposition of `T` (the eigenvalues of a
/// Hermitian matrix, singular values): Tensor<R> for Tensor<std::complex<R>>, T itself otherwise.
template <class T>
struct real_object {
  using type = T;
};
template <class R>
struct real_object<Tensor<std::complex<R>>> {
  using type = Tensor<R>;
};
/// real_object<T>::type: `real_object_t<Tensor<std::complex<double>>>` is Tensor<double>.
template <class T>
using real_object_t = typename real_object<T>::type;

/// The element type tag carried by graphs (a Shape set carries no data).
enum class DType { f32, f64, c64, c128, shape };

/// The tag of an object type: dtype_of<Tensor<float>>() == DType::f32.
template <class Object>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<Object, Tensor<float>>) return DType::f32;
  if constexpr (std::is_same_v<Object, Tensor<double>>) return DType::f64;
  if constexpr (std::is_same_v<Object, Tensor<std::complex<float>>>) return DType::c64;
  if constexpr (std::is_same_v<Object, Tensor<std::complex<double>>>) return DType::c128;
  if constexpr (std::is_same_v<Object, Shape>) return DType::shape;
}

/// The tag of an element type: dtype_of_scalar<float>() == DType::f32.
template <class T>
constexpr DType dtype_of_scalar() {
  return dtype_of<Tensor<T>>();
}

/// Bytes of one element of `dtype` (0 for shape).
constexpr std::size_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::f32: return sizeof(float);
    case DType::f64: return sizeof(double);
    case DType::c64: return sizeof(std::complex<float>);
    case DType::c128: return sizeof(std::complex<double>);
    case DType::shape: return 0;
  }
  return 0;
}

/// Whether `dtype` is one of the complex types.
constexpr bool is_complex_dtype(DType dtype) { return dtype == DType::c64 || dtype == DType::c128; }

/// "float", "double", "complex<float>", "complex<double>", "shape".
constexpr const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::c64: return "complex<float>";
    case DType::c128: return "complex<double>";
    case DType::shape: return "shape";
  }
  return "shape";
}

/// Calls f(T{}) with a value of the element type `dtype` names; `dtype` must not be shape.
template <class F>
decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::c64: return f(std::complex<float>{});
    case DType::c128: return f(std::complex<double>{});
    case DType::f64:
    case DType::shape: break;
  }
  return f(double{});
}

}  // namespace tenex
