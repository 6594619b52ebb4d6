// Plain dense matrices in double: the oracle side of the linear-algebra identities
// (L L^T = A, A V = V diag(w), Q R = A, ...), computed with plain loops.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

namespace tenex_test {

struct Dense {
  std::size_t rows = 0, cols = 0;
  std::vector<double> v;
  Dense() = default;
  Dense(std::size_t r, std::size_t c) : rows(r), cols(c), v(r * c, 0.0) {}
  double& operator()(std::size_t i, std::size_t j) { return v[i * cols + j]; }
  double operator()(std::size_t i, std::size_t j) const { return v[i * cols + j]; }
};

template <class T>
Dense dense(const tenex::Tensor<T>& t) {
  REQUIRE(t.rank() == 2);
  Dense d(t.shape().extent(0), t.shape().extent(1));
  for (std::size_t i = 0; i < d.rows; ++i) {
    for (std::size_t j = 0; j < d.cols; ++j) d(i, j) = static_cast<double>(t.at(i, j));
  }
  return d;
}

template <class T>
std::vector<double> dense_vector(const tenex::Tensor<T>& t) {
  REQUIRE(t.rank() == 1);
  std::vector<double> out(t.shape().extent(0));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(t.at(i));
  return out;
}

template <class T>
tenex::Tensor<T> tensor(const Dense& d) {
  std::vector<T> values(d.v.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(d.v[i]);
  return tenex::Tensor<T>(tenex::Shape{d.rows, d.cols}, std::move(values));
}

inline Dense product(const Dense& a, const Dense& b) {
  REQUIRE(a.cols == b.rows);
  Dense c(a.rows, b.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t k = 0; k < a.cols; ++k) {
      for (std::size_t j = 0; j < b.cols; ++j) c(i, j) += a(i, k) * b(k, j);
    }
  }
  return c;
}

inline Dense transpose(const Dense& a) {
  Dense t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  }
  return t;
}

inline Dense identity(std::size_t n) {
  Dense d(n, n);
  for (std::size_t i = 0; i < n; ++i) d(i, i) = 1.0;
  return d;
}

}  // namespace tenex_test
