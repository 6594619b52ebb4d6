// What the Krylov solvers share: the operator called on the same two tensors every time (so its
// statements hit the plan cache), and a basis held on the host in one column-major block, whose
// Gram-Schmidt steps and combinations are BLAS matrix-vector products.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "tenex/error.hpp"
#include "tenex/scalar.hpp"
#include "tenex/solvers/krylov.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex::detail::krylov {

template <class T>
using Vector = std::vector<T>;

template <class T>
double norm(const T* a, std::size_t n) {
  const auto count = static_cast<blasint>(n);
  if constexpr (std::is_same_v<T, float>) return cblas_snrm2(count, a, 1);
  if constexpr (std::is_same_v<T, double>) return cblas_dnrm2(count, a, 1);
  if constexpr (std::is_same_v<T, std::complex<float>>) return cblas_scnrm2(count, a, 1);
  if constexpr (std::is_same_v<T, std::complex<double>>) return cblas_dznrm2(count, a, 1);
}

template <class T>
void scale(Vector<T>& y, double factor) {
  const auto f = static_cast<real_type_t<T>>(factor);
  for (T& v : y) v *= f;
}

/// y = alpha op(A) x + beta y for the column-major rows x cols block A (op: A, or A^H when
/// `adjoint`).
template <class T>
void gemv(bool adjoint, std::size_t rows, std::size_t cols, const T* a, const T* x, T beta, T* y, T alpha) {
  if (rows == 0 || cols == 0) return;
  const auto m = static_cast<blasint>(rows), n = static_cast<blasint>(cols);
  const CBLAS_TRANSPOSE op = adjoint ? CblasConjTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemv(CblasColMajor, op, m, n, alpha, a, m, x, 1, beta, y, 1);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemv(CblasColMajor, op, m, n, alpha, a, m, x, 1, beta, y, 1);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    cblas_cgemv(CblasColMajor, op, m, n, &alpha, a, m, x, 1, &beta, y, 1);
  } else {
    cblas_zgemv(CblasColMajor, op, m, n, &alpha, a, m, x, 1, &beta, y, 1);
  }
}

/// Orthonormal vectors of length n, one after another in one block (column-major n x size).
template <class T>
class Basis {
 public:
  /// Room for `capacity` vectors of length n, reserved at once (a growing block would copy itself).
  Basis(std::size_t n, std::size_t capacity) : n_(n) { data_.reserve(n * capacity); }

  std::size_t size() const { return size_; }
  std::size_t length() const { return n_; }
  const T* vector(std::size_t i) const { return data_.data() + i * n_; }
  void push(const Vector<T>& v) {
    data_.insert(data_.end(), v.begin(), v.end());
    ++size_;
  }
  void clear() {
    data_.clear();
    size_ = 0;
  }

  /// Removes from w its components along the first `count` vectors by classical Gram-Schmidt,
  /// a second pass only where the first removed much of w (Daniel, Gragg, Kaufman and Stewart's
  /// test: the norm fell below 1/sqrt(2) of what it was), and returns the coefficients removed.
  /// One pass reads the basis twice (two matrix-vector products): memory, not arithmetic, is the
  /// cost, so the second pass is skipped where the first left w orthogonal to working precision.
  std::vector<T> orthogonalize(Vector<T>& w, std::size_t count) const {
    std::vector<T> coefficients(count, T{}), pass(count);
    double before = norm(w.data(), w.size());
    for (int passes = 0; passes < 2; ++passes) {
      gemv<T>(true, n_, count, data_.data(), w.data(), T{}, pass.data(), T(1));
      gemv<T>(false, n_, count, data_.data(), pass.data(), T(1), w.data(), T(-1));
      for (std::size_t i = 0; i < count; ++i) coefficients[i] += pass[i];
      const double after = norm(w.data(), w.size());
      if (after > 0.7071067811865476 * before) break;
      before = after;
    }
    return coefficients;
  }

  /// <vector(i), w> and w -= c vector(i): the local step of a three-term recurrence.
  T project_out(Vector<T>& w, std::size_t i) const {
    T c{};
    gemv<T>(true, n_, 1, vector(i), w.data(), T{}, &c, T(1));
    gemv<T>(false, n_, 1, vector(i), &c, T(1), w.data(), T(-1));
    return c;
  }

  /// sum_i coefficients[i] * vector(i) over the first coefficients.size() vectors.
  Vector<T> combine(const std::vector<T>& coefficients) const {
    Vector<T> v(n_, T{});
    gemv<T>(false, n_, coefficients.size(), data_.data(), coefficients.data(), T{}, v.data(), T(1));
    return v;
  }

 private:
  std::size_t n_;
  std::size_t size_ = 0;
  std::vector<T> data_;
};

/// The user's operator, called on the same tensors x and y every time.
template <class T>
class Operator {
 public:
  Operator(const MatVec<T>& op, const Shape& shape, std::string solver)
      : op_(op), x_(shape), y_(shape), solver_(std::move(solver)) {}

  /// y = A v (v: n values): the values of y (valid until the next call).
  const T* apply(const T* v) {
    std::copy(v, v + size(), x_.data());
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
