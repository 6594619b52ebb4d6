// What the Krylov solvers share: the operator called on the same two tensors every time (so its
// statements hit the plan cache), and the vector algebra of a basis held on the host. Sums
// accumulate in double (complex<double>) whatever the element type.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "tenex/error.hpp"
#include "tenex/krylov.hpp"
#include "tenex/scalar.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex::detail::krylov {

/// double for a real T, std::complex<double> for a complex one.
template <class T>
using Wide = std::conditional_t<is_complex_v<T>, std::complex<double>, double>;

template <class T>
using Vector = std::vector<T>;

template <class T>
T narrow(Wide<T> v) {
  if constexpr (is_complex_v<T>) {
    return T(static_cast<real_type_t<T>>(v.real()), static_cast<real_type_t<T>>(v.imag()));
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
double magnitude2(T v) {
  if constexpr (is_complex_v<T>) {
    return static_cast<double>(std::norm(v));
  } else {
    return static_cast<double>(v) * static_cast<double>(v);
  }
}

/// <a, b> = sum conj(a_i) b_i.
template <class T>
Wide<T> inner(const T* a, const T* b, std::size_t n) {
  Wide<T> sum{};
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (is_complex_v<T>) {
      sum += std::conj(Wide<T>(a[i])) * Wide<T>(b[i]);
    } else {
      sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
    }
  }
  return sum;
}

template <class T>
double norm(const T* a, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += magnitude2(a[i]);
  return std::sqrt(sum);
}

/// y += alpha x.
template <class T>
void axpy(Vector<T>& y, Wide<T> alpha, const Vector<T>& x) {
  const T a = narrow<T>(alpha);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += a * x[i];
}

template <class T>
void scale(Vector<T>& y, double factor) {
  const auto f = static_cast<real_type_t<T>>(factor);
  for (T& v : y) v *= f;
}

/// Removes from w its components along basis[0..count), twice (classical Gram-Schmidt twice is
/// orthogonal to working precision), and returns the coefficients removed, summed over both.
template <class T>
std::vector<Wide<T>> orthogonalize(Vector<T>& w, const std::vector<Vector<T>>& basis, std::size_t count) {
  std::vector<Wide<T>> coefficients(count, Wide<T>{});
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Wide<T>> c(count);
    for (std::size_t i = 0; i < count; ++i) c[i] = inner(basis[i].data(), w.data(), w.size());
    for (std::size_t i = 0; i < count; ++i) {
      axpy(w, -c[i], basis[i]);
      coefficients[i] += c[i];
    }
  }
  return coefficients;
}

/// The user's operator, called on the same tensors x and y every time.
template <class T>
class Operator {
 public:
  Operator(const MatVec<T>& op, const Shape& shape, std::string solver)
      : op_(op), x_(shape), y_(shape), solver_(std::move(solver)) {}

  /// y = A v: the values of y (valid until the next call).
  const T* apply(const Vector<T>& v) {
    std::copy(v.begin(), v.end(), x_.data());
    op_(static_cast<const Tensor<T>&>(x_), y_);
    ++calls_;
    const Tensor<T>& y = y_;
    if (y.shape() != x_.shape()) {
      throw Error("tenex::" + solver_ + ": the operator wrote y of shape " + y.shape().to_string() +
                  " for x of shape " + x_.shape().to_string() + "; y = A x must have x's shape");
    }
    return y.data();
  }
  std::size_t calls() const { return calls_; }
  std::size_t size() const { return x_.shape().size(); }

 private:
  const MatVec<T>& op_;
  Tensor<T> x_, y_;
  std::string solver_;
  std::size_t calls_ = 0;
};

/// Values of a tensor as a vector.
template <class T>
Vector<T> values_of(const Tensor<T>& t) {
  const T* p = t.data();
  return Vector<T>(p, p + t.size());
}

}  // namespace tenex::detail::krylov
