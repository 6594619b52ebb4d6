// tenex/tensor/npy.hpp — tensors to and from numpy's .npy files.
//
//   tenex::Tensor<double> a = tenex::load_npy<double>("fock.npy");   // written by numpy.save
//   tenex::save_npy("result.npy", c);                                 // numpy.load reads it
//
// numpy's format 1.0, 2.0 and 3.0 (the header's length and encoding differ), little-endian
// float32, float64, complex64 and complex128 (the element type must be the file's: a float32
// file is not loaded as a Tensor<double>), C or Fortran order on load (a Fortran-order file is
// transposed into tenex's row-major layout); save writes C order, format 1.0 where the header
// fits, else 2.0. A file that cannot be read, is truncated, has a header that is not numpy's,
// holds another element type or trailing bytes, throws tenex::Error naming the path and the
// fault. save_npy writes a temporary file beside `path` and renames it over `path`, so `path`
// is either the old file or the whole new one, never half-written.
#pragma once

#include <string>

#include "tenex/scalar.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex {

/// Writes `tensor` (its values once its pending set has run; its error, if that failed) to the
/// .npy file `path`, replacing the file atomically. Throws tenex::Error when the file cannot be
/// written; `path` is then left as it was.
template <class T>
void save_npy(const std::string& path, const Tensor<T>& tensor);

/// Reads the .npy file `path` into a tensor of its shape (rank 0 for shape ()). Throws
/// tenex::Error naming `path` when the file cannot be read, is not a well-formed little-endian
/// .npy file, or holds elements of another type than T.
template <class T>
Tensor<T> load_npy(const std::string& path);

#define TENEX_DECLARE_NPY(T)                                                        \
  extern template TENEX_API void save_npy<T>(const std::string&, const Tensor<T>&); \
  extern template TENEX_API Tensor<T> load_npy<T>(const std::string&);
TENEX_FOR_EACH_SCALAR(TENEX_DECLARE_NPY)
#undef TENEX_DECLARE_NPY

}  // namespace tenex
