// tenex/tensor/tensor_view.hpp — a non-owning view of memory the user owns.
//
// A TensorView labels the user's elements like a tensor's, with no copy in or out:
//
//   std::vector<double> mem(n * n);                      // owned by the caller
//   tenex::TensorView<double> v(mem.data(), {n, n});     // row-major
//   tenex::TensorView<double> t(mem.data(), {n, n}, {1, n});  // the same memory, transposed
//   c("i,j") = a("i,k") * v("k,j");                      // an operand, read where it lies
//   v("i,j") = a("i,k") * b("k,j");                      // a target: written into mem
//   v.wait();                                            // the sets using v have run
//
// Strides are in elements, one per mode (row-major when empty); any non-negative strides are
// accepted, also non-contiguous and overlapping ones (a stride of 0 repeats an element; such a
// view cannot be written). A view without elements (an extent 0; `data` may then be null) is an
// operand and a target whatever its strides: nothing is read or written. A contiguous row-major view is read and
// written in place; the kernels write a result straight into it when it overlaps nothing else its set reads. A strided
// view is gathered into row-major order when its set first reads it, and a result is scattered into it when its set
// runs.
//
// Lifetime (docs/interop.md): the memory must outlive every set that reads or writes the view,
// and must hold the view's value from the statement that reads it until that set has run: do
// not write it by hand meanwhile. wait() ends the use: it runs the pending sets that read or
// write the view. The view object itself may go first (a set keeps what it needs), as a tensor
// may. A statement that writes a view whose memory overlaps one of the set's operands (the same
// view on both sides, two views of one buffer, a view of a tensor's own data()) gives the
// result separate memory would: the result is computed apart and copied in after the set's
// reads. Writing a view runs the other pending sets that still read it first.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "tenex/export.hpp"
#include "tenex/scalar.hpp"
#include "tenex/tensor/shape.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex {

namespace detail {
struct ViewBinding;
}

template <class Object>
class Indexed;

template <class T>
class TENEX_API TensorView {
  static_assert(is_supported_scalar_v<T>,
                "tenex::TensorView<T> supports T = float, double, std::complex<float> and std::complex<double> only");

 public:
  using value_type = T;

  /// Views `shape.size()` elements at `data` (owned by the caller), `strides[d]` elements
  /// apart along mode d; row-major when `strides` is empty. Throws tenex::Error for a null
  /// `data` with elements, a `strides` of another length than the rank, or `data` not aligned
  /// for T.
  TensorView(T* data, Shape shape, std::vector<std::size_t> strides = {});
  /// Another view of the same memory (a pending result of `other` is this view's too).
  TensorView(const TensorView& other);
  /// Views `other`'s memory from now on.
  TensorView& operator=(const TensorView& other);
  /// The memory stays the user's; pending sets keep what they need of the view.
  ~TensorView();

  /// The user's memory, as given.
  T* data() const { return data_; }
  /// The view's extents (fixed).
  const Shape& shape() const { return shape_; }
  /// In elements, one per mode.
  const std::vector<std::size_t>& strides() const { return strides_; }
  /// The number of modes.
  std::size_t rank() const { return shape_.rank(); }
  /// The number of elements viewed.
  std::size_t size() const { return shape_.size(); }
  /// Row-major without gaps: read and written in place.
  bool contiguous() const;

  /// Labels the view's modes: `v("i,j")` is an operand, or a target when assigned to.
  Indexed<TensorView<T>> operator()(std::string_view labels);

  /// A statement writing the view has not run yet.
  bool pending() const;
  /// Runs the pending sets that read or write the view; rethrows a failed set's error as
  /// tenex::Error. After it returns the memory holds the view's value and is the user's again.
  void wait() const;

 private:
  template <class>
  friend class Indexed;
  // The tensor that stands for the view in the expression layer, its value bound to the memory.
  Tensor<T>& proxy();
  void bind_fresh();

  T* data_;
  Shape shape_;
  std::vector<std::size_t> strides_;
  std::shared_ptr<detail::ViewBinding> binding_;
  Tensor<T> proxy_;
};

#define TENEX_DECLARE_TENSOR_VIEW(T) extern template class TensorView<T>;
TENEX_FOR_EACH_SCALAR(TENEX_DECLARE_TENSOR_VIEW)
#undef TENEX_DECLARE_TENSOR_VIEW

}  // namespace tenex
