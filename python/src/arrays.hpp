// numpy arrays and tenex tensors: the element types the module takes, and the conversions.
//
//   tenex_python::with_dtype(dtype_of(array), [&](auto tag) {
//     using T = typename decltype(tag)::type;      // float, double, std::complex<float|double>
//     tenex::Tensor<T> t = tensor_from_array<T>(array);
//   });
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

namespace tenex_python {

namespace py = pybind11;

/// The element types the module takes (numpy's float32, float64, complex64, complex128).
enum class Dtype { float32, float64, complex64, complex128 };

template <class T>
struct Tag {
  using type = T;
};

/// The tenex element type of `array`; TypeError for any other dtype.
inline Dtype dtype_of(const py::array& array) {
  if (py::isinstance<py::array_t<float>>(array)) return Dtype::float32;
  if (py::isinstance<py::array_t<double>>(array)) return Dtype::float64;
  if (py::isinstance<py::array_t<std::complex<float>>>(array)) return Dtype::complex64;
  if (py::isinstance<py::array_t<std::complex<double>>>(array)) return Dtype::complex128;
  throw py::type_error("tenex: arrays of dtype " + py::str(array.dtype()).cast<std::string>() +
                       " are not supported (float32, float64, complex64 or complex128)");
}

/// Calls f(Tag<T>{}) with the element type of `dtype`.
template <class F>
decltype(auto) with_dtype(Dtype dtype, F&& f) {
  switch (dtype) {
    case Dtype::float32: return f(Tag<float>{});
    case Dtype::float64: return f(Tag<double>{});
    case Dtype::complex64: return f(Tag<std::complex<float>>{});
    case Dtype::complex128: break;
  }
  return f(Tag<std::complex<double>>{});
}

/// The shape of `array` as a tenex Shape.
inline tenex::Shape shape_of(const py::array& array) {
  std::vector<std::size_t> extents(static_cast<std::size_t>(array.ndim()));
  for (std::size_t d = 0; d < extents.size(); ++d) {
    extents[d] = static_cast<std::size_t>(array.shape(static_cast<py::ssize_t>(d)));
  }
  return tenex::Shape(extents);
}

/// A tenex tensor holding a copy of `array` (any strides; an element type other than T is
/// converted as numpy's assignment converts it). One copy of the elements: a memcpy for a
/// C-contiguous array of T, numpy's strided copy into the tensor's storage otherwise.
template <class T>
tenex::Tensor<T> tensor_from_array(const py::array& array) {
  tenex::Tensor<T> tensor(shape_of(array));
  if (tensor.size() == 0) return tensor;
  T* data = tensor.data();
  if (py::isinstance<py::array_t<T>>(array) && (array.flags() & py::array::c_style) != 0) {
    std::memcpy(data, array.data(), tensor.size() * sizeof(T));
    return tensor;
  }
  std::vector<py::ssize_t> extents(array.shape(), array.shape() + array.ndim());
  // A view of the tensor's elements (the capsule owns nothing: the tensor outlives the view).
  py::array_t<T> storage(extents, data, py::capsule(data, [](void*) {}));
  storage.attr("__setitem__")(py::ellipsis(), array);
  return tensor;
}

/// A TensorView over `array`'s memory, where tenex can use it in place: element type T in
/// native byte order, aligned, strides of whole elements and not negative (a broadcast's zero
/// strides included). Otherwise nullopt: the caller copies (tensor_from_array). The array must
/// outlive the sets that use the view.
template <class T>
std::optional<tenex::TensorView<T>> view_of_array(const py::array& array) {
  if (!py::isinstance<py::array_t<T>>(array)) return std::nullopt;
  const auto address = reinterpret_cast<std::uintptr_t>(array.data());
  if (address % alignof(T) != 0) return std::nullopt;
  std::vector<std::size_t> strides(static_cast<std::size_t>(array.ndim()));
  for (py::ssize_t d = 0; d < array.ndim(); ++d) {
    const py::ssize_t bytes = array.strides(d);
    if (bytes < 0 || bytes % static_cast<py::ssize_t>(sizeof(T)) != 0) return std::nullopt;
    strides[static_cast<std::size_t>(d)] = static_cast<std::size_t>(bytes) / sizeof(T);
  }
  // The view never writes an operand; a target's array is checked writeable by the caller.
  T* data = const_cast<T*>(static_cast<const T*>(array.data()));
  return tenex::TensorView<T>(data, shape_of(array), std::move(strides));
}

/// A numpy array holding a copy of `tensor`'s elements (waits for a pending tensor).
template <class T>
py::array_t<T> array_from_tensor(const tenex::Tensor<T>& tensor) {
  const tenex::Shape& shape = tensor.shape();
  std::vector<py::ssize_t> extents;
  for (std::size_t d = 0; d < shape.rank(); ++d) extents.push_back(static_cast<py::ssize_t>(shape.extent(d)));
  py::array_t<T> out(extents);
  if (tensor.size() != 0) std::memcpy(out.mutable_data(), tensor.data(), tensor.size() * sizeof(T));
  return out;
}

// ---- tenex.einsum's conversions (einsum.cpp) ----

/// The tenex element type of numpy's type number `num` (dtype.num), if it is one of the four.
/// The byte order is not looked at: tensor_from_array converts a non-native operand.
inline std::optional<Dtype> dtype_of_num(int num) {
  static const int float32 = py::dtype::of<float>().num();
  static const int float64 = py::dtype::of<double>().num();
  static const int complex64 = py::dtype::of<std::complex<float>>().num();
  static const int complex128 = py::dtype::of<std::complex<double>>().num();
  if (num == float64) return Dtype::float64;
  if (num == float32) return Dtype::float32;
  if (num == complex128) return Dtype::complex128;
  if (num == complex64) return Dtype::complex64;
  return std::nullopt;
}

/// `object` as a numpy array, as numpy.asarray makes it (no copy of an array; scalars and lists
/// become new arrays).
inline py::array as_array(py::handle object) {
  if (py::isinstance<py::array>(object)) return py::reinterpret_borrow<py::array>(object);
  py::array array = py::array::ensure(object);
  if (!array) throw py::error_already_set();
  return array;
}

/// A view of `array` without the axes where `drop[axis]` (each of extent 1: index 0 is taken).
inline py::array without_unit_axes(const py::array& array, const std::vector<bool>& drop) {
  std::vector<py::ssize_t> extents;
  std::vector<py::ssize_t> strides;
  for (py::ssize_t axis = 0; axis < array.ndim(); ++axis) {
    if (drop[static_cast<std::size_t>(axis)]) continue;
    extents.push_back(array.shape(axis));
    strides.push_back(array.strides(axis));
  }
  return py::array(array.dtype(), extents, strides, array.data(), array);
}

/// A numpy array over `tensor`'s elements, which it keeps alive: no copy (waits for a pending
/// tensor; the tensor's storage is detached from any other holder first, so writing to the array
/// changes nothing else).
template <class T>
py::array_t<T> array_owning_tensor(tenex::Tensor<T>&& tensor) {
  auto owner = std::make_unique<tenex::Tensor<T>>(std::move(tensor));
  T* data = owner->data();
  const tenex::Shape& shape = owner->shape();
  std::vector<py::ssize_t> extents;
  for (std::size_t d = 0; d < shape.rank(); ++d) extents.push_back(static_cast<py::ssize_t>(shape.extent(d)));
  py::capsule base(owner.get(), [](void* p) { delete static_cast<tenex::Tensor<T>*>(p); });
  owner.release();  // the capsule deletes it now
  return py::array_t<T>(extents, data, base);
}

}  // namespace tenex_python
