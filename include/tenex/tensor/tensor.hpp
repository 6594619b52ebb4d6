// tenex/tensor/tensor.hpp — dense, row-major tensors with value semantics.
//
// A Tensor owns its elements; copying copies (cheaply, copy-on-write). A
// tensor that is the target of a statement is *pending* until its linked set
// is evaluated; reading it (data(), at(), to_vector(), wait(), copying) runs
// the set first and rethrows any error the evaluation raised.
//
// Threads (docs/reliability.md): any number of threads may read one tensor at
// once through every accessor, the non-const data() and at() included (while
// one copies it or uses it as an operand, the others read through the const
// ones); a thread that writes it (assigns, moves from, writes through a
// pointer) must be the only one using it.
//
//   tenex::Tensor<double> a({2, 3});     // zero-filled
//   a.at(1, 2) = 4.0;
//   tenex::Tensor<double> b;             // no value yet: a valid target
//   b("j,i") = a("i,j");                 // b is {3, 2}
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tenex/detail/access.hpp"
#include "tenex/export.hpp"
#include "tenex/scalar.hpp"
#include "tenex/tensor/shape.hpp"

namespace tenex {

template <class Object>
class Indexed;

template <class T>
class TENEX_API Tensor {
  static_assert(is_supported_scalar_v<T>,
                "tenex::Tensor<T> supports T = float, double, std::complex<float> and std::complex<double> only");

 public:
  using value_type = T;

  /// No value yet: usable only as the target of an assignment.
  Tensor();
  /// Zero-filled tensor of the given shape.
  explicit Tensor(Shape shape);
  /// Tensor holding `row_major` (size must equal shape.size()).
  Tensor(Shape shape, std::vector<T> row_major);

  /// Copies wait for a pending source and then share its elements until one side writes.
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  /// True once the tensor has a value (given, or assigned and maybe pending).
  bool has_value() const;
  /// Known as soon as the tensor is assigned, before evaluation. Throws when there is no value.
  /// A pending result of a set holding a truncated decomposition (svd or eigen_solve with a
  /// Truncation) has an extent decided when the set runs: shape() runs the set first, as
  /// data() does, and rethrows its error (docs/linear-algebra.md).
  const Shape& shape() const;
  std::size_t rank() const { return shape().rank(); }
  std::size_t size() const { return shape().size(); }

  /// Element pointer (row-major). Waits for a pending result. It shows the tensor's value until
  /// the tensor is assigned or written through the non-const data() or at().
  const T* data() const;
  /// Writable element pointer; waits, and detaches from values captured by expressions or copies,
  /// so that writing through it changes this tensor only.
  ///
  /// Pointer invalidation: the pointer may be written through only until the tensor is assigned
  /// (`t = u`, `t("i,j") = ...`), copied, or captured by an expression (`t("i,j")` as an
  /// operand). An expression reads the value the tensor had when it was written, through the
  /// same elements: writing through an older pointer may change a pending result, or a copy.
  /// Call data() again after any of these; the same holds for references from at(). For reading,
  /// the pointer stays valid until the tensor is written, or copied or captured and then accessed
  /// through the non-const data() or at() again (on any thread).
  ///
  ///   double* p = t.data();
  ///   c("i,j") = 2.0 * t("i,j");           // captures t: p must not be written any more
  ///   t.data()[0] = 1.0;                    // data() again: c keeps 2 * the old t
  T* data();
  std::vector<T> to_vector() const;

  /// Bounds-checked element access: at(i, j, k), with indices of any integer type. An index out
  /// of range throws tenex::Error naming it as passed (-1, or 18446744073709551615 for SIZE_MAX).
  /// The reference from the non-const form follows the rule of data() below.
  template <class... I>
  T at(I... index) const {
    const AtIndex idx[] = {at_index(index)..., AtIndex{}};
    return data()[offset(idx, sizeof...(I))];
  }
  template <class... I>
  T& at(I... index) {
    const AtIndex idx[] = {at_index(index)..., AtIndex{}};
    const std::size_t off = offset(idx, sizeof...(I));
    return data()[off];
  }

  /// A result not yet evaluated.
  bool pending() const;
  /// Runs the set that produces this tensor now; rethrows its error as tenex::Error.
  void wait() const;

  /// Labels this tensor's modes: `a("i,j")` is an operand, or a target when assigned to.
  Indexed<Tensor<T>> operator()(std::string_view labels);
  /// A const tensor's modes labelled for reading: an operand only (the x of an operator
  /// op(const Tensor& x, Tensor& y)); assigning to it throws tenex::Error.
  Indexed<Tensor<T>> operator()(std::string_view labels) const;

  /// A token that expires when this object is destroyed: an Indexed target checks it before
  /// writing, so a handle that outlived its tensor throws instead of writing to freed memory.
  std::weak_ptr<const void> lifetime() const;

 private:
  // The library's layers reach the storage through detail::Access::storage and set_storage.
  friend struct detail::Access;
  // The shared storage. Taking it counts as sharing it: the next non-const data() copies first
  // if someone still holds it.
  std::shared_ptr<detail::Storage<T>> storage() const;
  // Replaces the value (a write: no other thread may use the tensor meanwhile).
  void set_storage(std::shared_ptr<detail::Storage<T>> storage);

  // An index of at() as the caller gave it: every value of a signed or an unsigned type up to
  // 64 bits keeps its meaning (converting all to long long showed SIZE_MAX as -1).
  struct AtIndex {
    std::uint64_t magnitude = 0;
    bool negative = false;
  };
  template <class I>
  static constexpr AtIndex at_index(I index) {
    static_assert(std::is_integral_v<I> && sizeof(I) <= sizeof(std::uint64_t),
                  "tenex::Tensor::at takes integer indices of at most 64 bits");
    if constexpr (std::is_signed_v<I>) {
      // -(index + 1) + 1 cannot overflow, also for the most negative value.
      if (index < 0) return {static_cast<std::uint64_t>(-(index + 1)) + 1, true};
    }
    return {static_cast<std::uint64_t>(index), false};
  }
  std::size_t offset(const AtIndex* index, std::size_t count) const;
  // The non-const data() when the storage may be shared: copies it (once, under a lock) first.
  T* detach();
  std::shared_ptr<detail::Storage<T>> share() const;
  void replace(std::shared_ptr<detail::Storage<T>> storage, bool unshared) noexcept;

  // Thread safety (docs/reliability.md): reading a tensor from several threads at once, also
  // through the non-const data() and at(), is safe. The non-const accessors copy a shared
  // storage before handing out writable elements; that copy happens once, under a lock keyed by
  // the tensor's address, and readers on other threads never read storage_ itself but the
  // atomic current_, so the swap races with no one.
  std::shared_ptr<detail::Storage<T>> storage_;  // written under the lock, or by a write (assignment)
  // The storage the last copy replaced: another thread may still read elements it took from it
  // (released when the tensor is next assigned, destroyed, or copies again).
  std::shared_ptr<detail::Storage<T>> retired_;
  std::atomic<detail::Storage<T>*> current_{nullptr};  // storage_.get()
  // storage_ is known to be this tensor's alone (so data() may hand out writable elements at the
  // cost of one atomic load); cleared whenever the storage is copied, captured or replaced.
  mutable std::atomic<bool> unshared_{false};
  mutable std::shared_ptr<const void> lifetime_;  // made on first use by lifetime()
};

/// Fills `t` (which must have a value) with uniform numbers in [-1, 1), reproducibly for a seed.
template <class T>
void fill_random(Tensor<T>& t, std::uint64_t seed);

/// Same shape and |a - b| <= atol + rtol * |b| element-wise.
template <class T>
bool allclose(const Tensor<T>& a, const Tensor<T>& b, double rtol = 1e-10, double atol = 1e-12);

#define TENEX_DECLARE_TENSOR(T)                                             \
  extern template class Tensor<T>;                                          \
  extern template TENEX_API void fill_random<T>(Tensor<T>&, std::uint64_t); \
  extern template TENEX_API bool allclose<T>(const Tensor<T>&, const Tensor<T>&, double, double);
TENEX_FOR_EACH_SCALAR(TENEX_DECLARE_TENSOR)
#undef TENEX_DECLARE_TENSOR

}  // namespace tenex
