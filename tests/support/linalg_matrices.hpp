// Row-major matrices of double or std::complex<double> with naive-loop arithmetic: the
// reference side of the CPU linear algebra kernel tests (backend/test_cpu_linalg*.cpp).
// For real matrices the adjoint is the transpose.
//
//   const auto a = linalg_matrices::random_matrix<std::complex<double>>(4, 3, 7);
//   const double error = linalg_matrices::column_orthogonality_error(q, 4, 3);
#pragma once

#include <cmath>
#include <complex>
#include <cstddef>
#include <random>
#include <type_traits>
#include <vector>

#include <tenex/scalar.hpp>

namespace linalg_matrices {

/// Entries uniform in [-1, 1) (complex: both parts), from `seed`.
template <class S = double>
std::vector<S> random_matrix(std::size_t m, std::size_t n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<S> a(m * n);
  for (S& x : a) {
    if constexpr (tenex::is_complex_v<S>) {
      const double re = dist(gen);
      x = S(re, dist(gen));
    } else {
      x = dist(gen);
    }
  }
  return a;
}

/// a (m x k) times b (k x n).
template <class S>
std::vector<S> multiply(const std::vector<S>& a, const std::vector<S>& b, std::size_t m, std::size_t k, std::size_t n) {
  std::vector<S> c(m * n, S(0));
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t l = 0; l < k; ++l)
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + l] * b[l * n + j];
  return c;
}

/// The conjugate transpose of a (m x n).
template <class S>
std::vector<S> adjoint(const std::vector<S>& a, std::size_t m, std::size_t n) {
  std::vector<S> t(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if constexpr (tenex::is_complex_v<S>) {
        t[j * m + i] = std::conj(a[i * n + j]);
      } else {
        t[j * m + i] = a[i * n + j];
      }
    }
  }
  return t;
}

/// The Frobenius norm.
template <class S>
double norm(const std::vector<S>& a) {
  double s = 0;
  for (const S& x : a) s += std::norm(x);
  return std::sqrt(s);
}

/// The Frobenius norm of a - b.
template <class S>
double distance(const std::vector<S>& a, const std::vector<S>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::norm(a[i] - b[i]);
  return std::sqrt(s);
}

template <class S = double>
std::vector<S> identity(std::size_t n) {
  std::vector<S> e(n * n, S(0));
  for (std::size_t i = 0; i < n; ++i) e[i * n + i] = S(1);
  return e;
}

/// ||X^H X - I||_F for the columns of x (rows x cols).
template <class S>
double column_orthogonality_error(const std::vector<S>& x, std::size_t rows, std::size_t cols) {
  return distance(multiply(adjoint(x, rows, cols), x, cols, rows, cols), identity<S>(cols));
}

/// The matrix rounded to the kernel's element type T.
template <class T, class S>
std::vector<T> to(const std::vector<S>& a) {
  std::vector<T> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = static_cast<T>(a[i]);
  return out;
}

/// A kernel's result in the reference type (double or std::complex<double>).
template <class T>
auto from(const std::vector<T>& a) {
  using S = std::conditional_t<tenex::is_complex_v<T>, std::complex<double>, double>;
  return std::vector<S>(a.begin(), a.end());
}

}  // namespace linalg_matrices
