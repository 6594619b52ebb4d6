// TensorView: operands and targets in the user's memory, contiguous and strided, every element
// type; overlapping memory on both sides of a statement and across pending sets; the errors.
// Each result is compared with naive loops over the same values.
#include <doctest/doctest.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/linalg_matrices.hpp"
#include "support/scalars.hpp"

namespace {

template <class T>
T value_at(std::size_t i, int salt) {
  const double re = static_cast<double>((i * 7 + static_cast<std::size_t>(salt) * 13) % 17) / 8.0 - 1.0;
  if constexpr (tenex::is_complex_v<T>) {
    const double im = static_cast<double>((i * 5 + static_cast<std::size_t>(salt) * 3) % 11) / 5.0 - 1.0;
    return T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(im));
  } else {
    return static_cast<T>(re);
  }
}

template <class T>
std::vector<T> values(std::size_t n, int salt) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value_at<T>(i, salt);
  return v;
}

template <class T>
double tolerance() {
  return std::is_same_v<tenex::real_type_t<T>, float> ? 1e-4 : 1e-11;
}

template <class T>
void check_close(const T* got, const std::vector<T>& expected, double scale = 1.0) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got[i] - expected[i]) <= tolerance<T>() * scale * (1.0 + std::abs(expected[i])));
  }
}

template <class T>
std::vector<T> transposed(const std::vector<T>& a, std::size_t m, std::size_t n) {
  std::vector<T> t(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) t[j * m + i] = a[i * n + j];
  return t;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("TensorView: a contiguous view is an operand and a target in place", T, view_contiguous) {
  for (std::size_t n : {3u, 70u}) {  // 70: the threaded GEMM kernels
    const std::size_t m = n + 1, k = n + 2;
    std::vector<T> a_mem = values<T>(m * k, 1), b_mem = values<T>(k * n, 2), c_mem(m * n, T(9));
    tenex::TensorView<T> a(a_mem.data(), {m, k}), b(b_mem.data(), {k, n}), c(c_mem.data(), {m, n});
    CHECK(c.contiguous());
    c("i,j") = a("i,k") * b("k,j");
    c.wait();
    check_close(c_mem.data(), linalg_matrices::multiply(a_mem, b_mem, m, k, n), static_cast<double>(k));
    // A product added to an intermediate (the GEMM writes into the addend's buffer, which is
    // then the view's value).
    const std::vector<T> e_mem = values<T>(m * n, 8);
    tenex::Tensor<T> e(tenex::Shape{m, n}, e_mem);
    c("i,j") = 2.0 * e("i,j") + a("i,k") * b("k,j");
    std::vector<T> sum = linalg_matrices::multiply(a_mem, b_mem, m, k, n);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += T(2) * e_mem[i];
    check_close(c_mem.data(), sum, static_cast<double>(k));
    // A view mixes with tensors, and reads the memory as it is when its statement runs.
    tenex::Tensor<T> t;
    a_mem[0] = T(5);
    t("j,i") = a("i,k") * b("k,j");
    check_close(t.data(), transposed(linalg_matrices::multiply(a_mem, b_mem, m, k, n), m, n), static_cast<double>(k));
  }
}
TEST_CASE_TEMPLATE_APPLY(view_contiguous, tenex_test::AllScalars);

TEST_CASE_TEMPLATE_DEFINE("TensorView: strided views are read and written at their strides only", T, view_strided) {
  const std::size_t m = 5, n = 4;
  // a: the transpose of a row-major n x m buffer; c: every other column of an m x 2n buffer.
  std::vector<T> a_mem = values<T>(n * m, 3), c_mem(m * 2 * n, T(7));
  tenex::TensorView<T> a(a_mem.data(), {m, n}, {1, m});
  tenex::TensorView<T> c(c_mem.data(), {m, n}, {2 * n, 2});
  CHECK(!a.contiguous());
  c("i,j") = 2.0 * a("i,j");
  c.wait();
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      CHECK(std::abs(c_mem[i * 2 * n + 2 * j] - T(2) * a_mem[j * m + i]) <= tolerance<T>() * 4);
      CHECK(c_mem[i * 2 * n + 2 * j + 1] == T(7));  // the gaps stay the user's
    }
  }
  // A zero stride repeats an element: readable (a broadcast), never written.
  T one = T(3);
  tenex::TensorView<T> ones(&one, {m, n}, {0, 0});
  tenex::Tensor<T> s;
  s("i") = ones("i,j");
  for (std::size_t i = 0; i < m; ++i)
    CHECK(std::abs(s.at(i) - T(3) * T(static_cast<double>(n))) <= tolerance<T>() * 12);
  CHECK_THROWS_AS(ones("i,j") = a("i,j"), tenex::ShapeError);
  CHECK(one == T(3));
}
TEST_CASE_TEMPLATE_APPLY(view_strided, tenex_test::AllScalars);

TEST_CASE_TEMPLATE_DEFINE("TensorView: a view without elements is an operand and a target, whatever its strides", T,
                          view_empty) {
  // An extent 0: row-major strides repeat 0 (two of them equal), null data is allowed; nothing
  // is read or written, and a sum over an empty mode is 0, as numpy.einsum gives.
  std::vector<T> mem = values<T>(6, 5);
  const std::vector<T> before = mem;
  tenex::TensorView<T> row_major(mem.data(), {2, 0});
  CHECK(row_major.strides() == std::vector<std::size_t>{0, 1});
  tenex::TensorView<T> transposed_empty(nullptr, {0, 2});
  row_major("i,j") = transposed_empty("j,i");
  row_major.wait();
  tenex::TensorView<T> repeated(nullptr, {3, 0, 2}, {0, 0, 0});  // any strides
  tenex::TensorView<T> b_empty(nullptr, {0, 2}, {7, 3});
  tenex::Tensor<T> x(tenex::Shape{3}, values<T>(3, 1));
  repeated("i,k,j") = 2.0 * x("i") * b_empty("k,j");
  repeated.wait();
  CHECK(mem == before);

  // Contracted over the empty mode: zeros written over what the memory held.
  tenex::TensorView<T> a(nullptr, {3, 0}), b(nullptr, {0, 2}, {0, 0});
  tenex::TensorView<T> c(mem.data(), {3, 2});
  c("i,j") = a("i,k") * b("k,j");
  c.wait();
  for (const T& x : mem) CHECK(x == T(0));
  mem = before;
  tenex::TensorView<T> c_strided(mem.data(), {2, 3}, {1, 2});  // c's transpose
  c_strided("j,i") = a("i,k") * b("k,j") + 0.5 * a("i,k") * b("k,j");
  c_strided.wait();
  for (const T& x : mem) CHECK(x == T(0));
  tenex::Tensor<T> total;
  total("") = a("i,k");
  CHECK(total.shape().rank() == 0);
  CHECK(total.at() == T(0));

  // An outer product with an empty mode, into a tensor and into a view.
  tenex::Tensor<T> outer;
  outer("i,j,k") = x("i") * b("k,j");
  CHECK(outer.shape() == tenex::Shape{3, 2, 0});
  tenex::TensorView<T> e(nullptr, {0}), outer_view(nullptr, {0, 3}, {5, 5});
  outer_view("k,i") = x("i") * e("k");
  outer_view.wait();
  CHECK_FALSE(outer_view.pending());
}
TEST_CASE_TEMPLATE_APPLY(view_empty, tenex_test::AllScalars);

TEST_CASE("TensorView: a target overlapping an operand gives the result separate memory would") {
  const std::size_t n = 6;
  const std::vector<double> original = values<double>(n * n, 4);
  SUBCASE("the same view on both sides, transposed") {
    std::vector<double> mem = original;
    tenex::TensorView<double> v(mem.data(), {n, n});
    v("i,j") = v("j,i");
    v.wait();
    check_close(mem.data(), transposed(original, n, n));
  }
  SUBCASE("+= with its own transpose") {
    std::vector<double> mem = original;
    tenex::TensorView<double> v(mem.data(), {n, n});
    v("i,j") += v("j,i");
    std::vector<double> expected = transposed(original, n, n);
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += original[i];
    check_close(mem.data(), expected);
  }
  SUBCASE("two views of one buffer") {
    std::vector<double> mem = original;
    tenex::TensorView<double> v(mem.data(), {n, n}), w(mem.data(), {n, n}, {1, n});
    v("i,j") = w("i,k") * v("k,j");  // (original^T) * original
    check_close(mem.data(), linalg_matrices::multiply(transposed(original, n, n), original, n, n, n), 8.0);
  }
  SUBCASE("a view of a tensor's own elements") {
    tenex::Tensor<double> t(tenex::Shape{n, n}, original);
    tenex::TensorView<double> v(t.data(), {n, n});
    v("i,j") = t("j,i");
    v.wait();
    check_close(v.data(), transposed(original, n, n));
  }
}

TEST_CASE("TensorView: pending sets that read or write a view keep their order") {
  const std::size_t n = 5;
  const std::vector<double> original = values<double>(n, 5), x_values = values<double>(n, 6);
  std::vector<double> mem = original;
  tenex::TensorView<double> v(mem.data(), {n});
  tenex::Tensor<double> x(tenex::Shape{n}, x_values), c, d;
  SUBCASE("a pending reader runs before a statement writes the view") {
    {
      auto keep = v("i");  // keeps the reader's set open
      c("i") = 2.0 * keep;
      CHECK(c.pending());
      v("i") = x("i");  // runs c's set first: c reads the old value
      CHECK(!c.pending());
    }
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(c.at(i) == doctest::Approx(2.0 * original[i]));
      CHECK(mem[i] == doctest::Approx(x_values[i]));
    }
  }
  SUBCASE("two writes in one set: the memory takes the later, a reader of the earlier keeps it") {
    {
      auto keep = x("i");
      v("i") = 2.0 * keep;
      auto first = v("i");  // the first result (pending: links to the set)
      v("i") = 3.0 * keep;
      d("i") = first;
      CHECK(v.pending());
    }
    v.wait();
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(mem[i] == doctest::Approx(3.0 * x_values[i]));
      CHECK(d.at(i) == doctest::Approx(2.0 * x_values[i]));
    }
  }
  SUBCASE("wait() runs a pending set that writes the view") {
    auto keep = x("i");
    v("i") = keep * 4.0;
    CHECK(v.pending());
    CHECK(mem[0] == original[0]);
    v.wait();
    CHECK(!v.pending());
    CHECK(mem[0] == doctest::Approx(4.0 * x_values[0]));
  }
}

TEST_CASE("TensorView: decompositions and complex conj write views") {
  const std::size_t n = 6;
  // A Hermitian matrix h = z + z^H.
  std::vector<std::complex<double>> z = values<std::complex<double>>(n * n, 7), h(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) h[i * n + j] = z[i * n + j] + std::conj(z[j * n + i]);
  std::vector<std::complex<double>> vec_mem(n * n);
  std::vector<double> val_mem(n);
  tenex::TensorView<std::complex<double>> H(h.data(), {n, n}), V(vec_mem.data(), {n, n});
  tenex::TensorView<double> w(val_mem.data(), {n});
  std::make_pair(V("i,k"), w("k")) = tenex::eigen_solve(H("i,j"));
  w.wait();
  V.wait();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      std::complex<double> hv = 0;
      for (std::size_t j = 0; j < n; ++j) hv += h[i * n + j] * vec_mem[j * n + k];
      CHECK(std::abs(hv - val_mem[k] * vec_mem[i * n + k]) < 1e-10);
    }
  }
  // conj on a view operand, the result in a view.
  std::vector<std::complex<double>> out(n * n);
  tenex::TensorView<std::complex<double>> O(out.data(), {n, n});
  tenex::TensorView<std::complex<double>> Z(z.data(), {n, n});
  O("i,j") = tenex::conj(Z("k,i")) * Z("k,j");
  O.wait();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      std::complex<double> s = 0;
      for (std::size_t k = 0; k < n; ++k) s += std::conj(z[k * n + i]) * z[k * n + j];
      CHECK(std::abs(out[i * n + j] - s) < 1e-12);
    }
  }
}

TEST_CASE("TensorView: bad input is a tenex::Error and leaves the memory as it was") {
  std::vector<double> mem(12, 1.0);
  CHECK_THROWS_AS(tenex::TensorView<double>(mem.data(), {3, 4}, {4}), tenex::Error);
  CHECK_THROWS_AS(tenex::TensorView<double>(nullptr, {3, 4}), tenex::Error);
  CHECK_NOTHROW(tenex::TensorView<double>(nullptr, {0, 4}));
  auto* misaligned = reinterpret_cast<double*>(reinterpret_cast<std::uintptr_t>(mem.data()) + 1);
  CHECK_THROWS_AS(tenex::TensorView<double>(misaligned, {2}), tenex::Error);
  tenex::TensorView<double> v(mem.data(), {3, 4});
  tenex::Tensor<double> a(tenex::Shape{4, 3});
  CHECK_THROWS_AS(v("i,j") = a("i,j"), tenex::ShapeError);  // a view's shape is fixed
  CHECK_THROWS_AS(v("i,j,k") = a("i,j"), tenex::ShapeError);
  for (double x : mem) CHECK(x == 1.0);
  // The view is still usable, and a copy views the same memory.
  tenex::TensorView<double> copy = v;
  copy("i,j") = 2.0 * a("j,i");
  v.wait();
  for (double x : mem) CHECK(x == 0.0);
}
