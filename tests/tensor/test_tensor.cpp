// Tensor: values, construction, bounds-checked access, value semantics (copy-on-write,
// moves), fill_random, allclose, and pending results.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"
#include "support/tensors.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

using tenex_test::Scalars;

using tenex_test::iota_tensor;

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("tensor: a default tensor has no value", T, tensor_default) {
  Tensor<T> t;
  CHECK_FALSE(t.has_value());
  CHECK_FALSE(t.pending());
  CHECK_THROWS_AS((void)t.shape(), tenex::Error);
  CHECK_THROWS_AS((void)std::as_const(t).data(), tenex::Error);
  CHECK_THROWS_AS((void)t.data(), tenex::Error);
  CHECK_THROWS_AS((void)t.rank(), tenex::Error);
  CHECK_THROWS_AS((void)t.to_vector(), tenex::Error);
  CHECK_THROWS_AS((void)std::as_const(t).at(0), tenex::Error);
  CHECK_THROWS_AS(tenex::fill_random(t, 1), tenex::Error);
  CHECK_NOTHROW(t.wait());
  // It is a valid assignment target.
  Tensor<T> a = iota_tensor<T>({2, 3});
  t("j,i") = a("i,j");
  CHECK(t.has_value());
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.at(2, 1) == a.at(1, 2));
}
TEST_CASE_TEMPLATE_APPLY(tensor_default, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: construction from a shape is zero-filled", T, tensor_zero) {
  const Tensor<T> t(Shape{2, 3, 4});
  CHECK(t.has_value());
  CHECK_FALSE(t.pending());
  CHECK(t.shape() == Shape{2, 3, 4});
  CHECK(t.rank() == 3);
  CHECK(t.size() == 24);
  const std::vector<T> v = t.to_vector();
  CHECK(v.size() == 24);
  for (T x : v) CHECK(x == T(0));
  const Tensor<T> empty(Shape{3, 0});
  CHECK(empty.size() == 0);
  CHECK(empty.to_vector().empty());
}
TEST_CASE_TEMPLATE_APPLY(tensor_zero, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: construction from data is row-major", T, tensor_data) {
  const Tensor<T> t(Shape{2, 3}, {T(1), T(2), T(3), T(4), T(5), T(6)});
  CHECK(t.at(0, 0) == T(1));
  CHECK(t.at(0, 1) == T(2));
  CHECK(t.at(0, 2) == T(3));
  CHECK(t.at(1, 0) == T(4));
  CHECK(t.at(1, 1) == T(5));
  CHECK(t.at(1, 2) == T(6));
  CHECK(t.data()[4] == T(5));
  CHECK(t.to_vector() == std::vector<T>{1, 2, 3, 4, 5, 6});

  const Tensor<T> u = iota_tensor<T>({2, 3, 4});
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      for (std::size_t k = 0; k < 4; ++k) CHECK(u.at(i, j, k) == static_cast<T>((i * 3 + j) * 4 + k));
    }
  }
  CHECK_THROWS_AS(Tensor<T>(Shape{2, 3}, std::vector<T>(5)), tenex::ShapeError);
  CHECK_THROWS_AS(Tensor<T>(Shape{2, 3}, std::vector<T>(7)), tenex::ShapeError);
}
TEST_CASE_TEMPLATE_APPLY(tensor_data, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: at is bounds-checked", T, tensor_at) {
  Tensor<T> t = iota_tensor<T>({2, 3});
  CHECK_THROWS_WITH_AS((void)std::as_const(t).at(0, 3),
                       "tenex: Tensor::at: index 3 is out of range for mode 1 of extent 3 (shape {2, 3})",
                       tenex::Error);
  CHECK_THROWS_WITH_AS((void)t.at(0, 3),
                       "tenex: Tensor::at: index 3 is out of range for mode 1 of extent 3 (shape {2, 3})",
                       tenex::Error);
  CHECK_THROWS_AS((void)std::as_const(t).at(2, 0), tenex::Error);
  CHECK_THROWS_AS((void)std::as_const(t).at(-1, 0), tenex::Error);
  CHECK_THROWS_AS((void)std::as_const(t).at(0, -1), tenex::Error);
  // The number of indices must be the rank.
  CHECK_THROWS_AS((void)std::as_const(t).at(0), tenex::Error);
  CHECK_THROWS_AS((void)std::as_const(t).at(0, 0, 0), tenex::Error);
  CHECK_THROWS_AS((void)std::as_const(t).at(), tenex::Error);
  CHECK(std::as_const(t).at(1, 2) == T(5));
  // Writes through at() land in the right place.
  t.at(1, 0) = T(-7);
  CHECK(t.to_vector() == std::vector<T>{0, 1, 2, -7, 4, 5});
}
TEST_CASE_TEMPLATE_APPLY(tensor_at, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: rank 0 has one element reached by at()", T, tensor_rank0) {
  Tensor<T> s(Shape{}, std::vector<T>{T(4.5)});
  CHECK(s.rank() == 0);
  CHECK(s.size() == 1);
  CHECK(std::as_const(s).at() == T(4.5));
  s.at() = T(-2);
  CHECK(s.to_vector() == std::vector<T>{T(-2)});
  CHECK_THROWS_AS((void)std::as_const(s).at(0), tenex::Error);
  const Tensor<T> z{Shape{}};
  CHECK(z.at() == T(0));
}
TEST_CASE_TEMPLATE_APPLY(tensor_rank0, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: copies are independent values (copy-on-write)", T, tensor_copy) {
  Tensor<T> a = iota_tensor<T>({2, 3});
  Tensor<T> b = a;
  // Shared until one side writes.
  CHECK(std::as_const(a).data() == std::as_const(b).data());
  b.at(0, 0) = T(100);
  CHECK(std::as_const(a).at(0, 0) == T(0));
  CHECK(std::as_const(b).at(0, 0) == T(100));
  a.at(1, 1) = T(-5);
  CHECK(std::as_const(b).at(1, 1) == T(4));
  CHECK(std::as_const(a).at(1, 1) == T(-5));

  // Writing the original after copying leaves the copy unchanged, also through data().
  Tensor<T> c = iota_tensor<T>({4});
  Tensor<T> d;
  d = c;
  c.data()[3] = T(9);
  CHECK(d.to_vector() == std::vector<T>{0, 1, 2, 3});
  CHECK(c.to_vector() == std::vector<T>{0, 1, 2, 9});

  // fill_random writes: it must detach too.
  Tensor<T> e = c;
  tenex::fill_random(e, 3);
  CHECK(c.to_vector() == std::vector<T>{0, 1, 2, 9});
  CHECK(e.to_vector() != c.to_vector());

  // An expression reads the value its operand had when it was written.
  Tensor<T> f = iota_tensor<T>({2});
  Tensor<T> g;
  {
    auto x = f("i") + f("i");
    g("i") = x;
    f.at(0) = T(50);
  }
  CHECK(g.to_vector() == std::vector<T>{0, 2});
  CHECK(f.to_vector() == std::vector<T>{50, 1});
}
TEST_CASE_TEMPLATE_APPLY(tensor_copy, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: a moved-from tensor has no value and is a valid target", T, tensor_move) {
  Tensor<T> a = iota_tensor<T>({2, 2});
  Tensor<T> b = std::move(a);
  CHECK_FALSE(a.has_value());  // NOLINT(bugprone-use-after-move): the state is specified
  CHECK_THROWS_AS((void)a.shape(), tenex::Error);
  CHECK(b.to_vector() == std::vector<T>{0, 1, 2, 3});

  Tensor<T> c(Shape{5});
  c = std::move(b);
  CHECK_FALSE(b.has_value());  // NOLINT(bugprone-use-after-move)
  CHECK(c.shape() == Shape{2, 2});

  a("j,i") = c("i,j");
  CHECK(a.to_vector() == std::vector<T>{0, 2, 1, 3});
  b = Tensor<T>(Shape{1}, {T(8)});
  CHECK(b.at(0) == T(8));
}
TEST_CASE_TEMPLATE_APPLY(tensor_move, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: to_vector copies the elements", T, tensor_to_vector) {
  Tensor<T> t = iota_tensor<T>({3});
  std::vector<T> v = t.to_vector();
  v[0] = T(42);
  CHECK(t.at(0) == T(0));
  CHECK(v == std::vector<T>{42, 1, 2});
}
TEST_CASE_TEMPLATE_APPLY(tensor_to_vector, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: fill_random is reproducible and uniform between -1 and 1", T, tensor_random) {
  Tensor<T> a(Shape{40, 25}), b(Shape{40, 25}), c(Shape{40, 25});
  tenex::fill_random(a, 12345);
  tenex::fill_random(b, 12345);
  tenex::fill_random(c, 12346);
  const std::vector<T> va = a.to_vector(), vb = b.to_vector(), vc = c.to_vector();
  CHECK(va == vb);
  CHECK(va != vc);
  std::size_t equal = 0, negative = 0;
  T lo = T(1), hi = T(-1);
  double sum = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    CHECK(va[i] >= T(-1));
    CHECK(va[i] < T(1));
    equal += va[i] == vc[i] ? 1 : 0;
    negative += va[i] < T(0) ? 1 : 0;
    lo = std::min(lo, va[i]);
    hi = std::max(hi, va[i]);
    sum += va[i];
  }
  CHECK(equal < 5);
  // 1000 uniform draws: both halves well populated, the range nearly covered.
  CHECK(negative > 400);
  CHECK(negative < 600);
  CHECK(lo < T(-0.95));
  CHECK(hi > T(0.95));
  CHECK(std::abs(sum / static_cast<double>(va.size())) < 0.1);
  // Refilling with the same seed gives the same values again.
  tenex::fill_random(c, 12345);
  CHECK(c.to_vector() == va);
}
TEST_CASE_TEMPLATE_APPLY(tensor_random, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: allclose", T, tensor_allclose) {
  const Tensor<T> a(Shape{2}, {T(1), T(1)});
  const Tensor<T> b(Shape{2}, {T(1), T(1.5)});
  const Tensor<T> c(Shape{2}, {T(1), T(2)});
  CHECK(tenex::allclose(a, a));
  CHECK(tenex::allclose(a, Tensor<T>(Shape{2}, {T(1), T(1)})));
  CHECK_FALSE(tenex::allclose(a, b));
  // Shapes must match, even with the same elements.
  CHECK_FALSE(tenex::allclose(a, Tensor<T>(Shape{1, 2}, {T(1), T(1)})));
  CHECK_FALSE(tenex::allclose(a, Tensor<T>(Shape{2, 1}, {T(1), T(1)})));
  CHECK_FALSE(tenex::allclose(Tensor<T>(Shape{3}), Tensor<T>(Shape{2})));
  // Absolute tolerance: |a - b| <= atol is inclusive.
  CHECK(tenex::allclose(a, b, 0.0, 0.5));
  CHECK_FALSE(tenex::allclose(a, b, 0.0, 0.25));
  // Relative tolerance is taken relative to the second argument.
  CHECK(tenex::allclose(a, c, 0.5, 0.0));        // |1 - 2| <= 0.5 * 2
  CHECK_FALSE(tenex::allclose(c, a, 0.5, 0.0));  // |2 - 1| >  0.5 * 1
  CHECK_FALSE(tenex::allclose(a, c, 0.25, 0.0));
  CHECK(tenex::allclose(a, c, 0.25, 0.5));  // 1 <= 0.5 + 0.25 * 2
  // NaN is never close, not even to itself.
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const Tensor<T> n(Shape{2}, {T(1), nan});
  CHECK_FALSE(tenex::allclose(n, n));
  CHECK_FALSE(tenex::allclose(n, a, 1.0, 1.0));
  CHECK_FALSE(tenex::allclose(a, n, 1.0, 1.0));
  // Empty tensors of the same shape are close.
  CHECK(tenex::allclose(Tensor<T>(Shape{0, 3}), Tensor<T>(Shape{0, 3})));
}
TEST_CASE_TEMPLATE_APPLY(tensor_allclose, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: pending results and wait()", T, tensor_pending) {
  Tensor<T> a = iota_tensor<T>({2, 3});
  Tensor<T> b(Shape{2, 3}, {T(10), T(20), T(30), T(40), T(50), T(60)});
  Tensor<T> c, d;
  {
    auto x = a("i,j") + b("i,j");
    c("i,j") = x;
    CHECK(c.has_value());
    CHECK(c.pending());
    // The shape is known before evaluation.
    CHECK(c.shape() == Shape{2, 3});
    c.wait();
    CHECK_FALSE(c.pending());
    CHECK(c.to_vector() == std::vector<T>{10, 21, 32, 43, 54, 65});
    // The set is still open: a later statement of it stays pending until read or closed.
    d("j,i") = x;
    CHECK(d.pending());
    CHECK(d.shape() == Shape{3, 2});
  }
  CHECK_FALSE(d.pending());
  CHECK(d.to_vector() == std::vector<T>{10, 43, 21, 54, 32, 65});
}
TEST_CASE_TEMPLATE_APPLY(tensor_pending, Scalars);

TEST_CASE_TEMPLATE_DEFINE("tensor: copying a pending tensor evaluates it", T, tensor_copy_pending) {
  Tensor<T> a = iota_tensor<T>({3});
  Tensor<T> c;
  {
    auto x = 2.0 * a("i");
    c("i") = x;
    CHECK(c.pending());
    Tensor<T> copy = c;
    CHECK_FALSE(c.pending());
    CHECK_FALSE(copy.pending());
    CHECK(copy.to_vector() == std::vector<T>{0, 2, 4});
    Tensor<T> assigned;
    assigned = c;
    CHECK(assigned.to_vector() == std::vector<T>{0, 2, 4});
    // Writing the copy leaves the result alone.
    copy.at(0) = T(-1);
    CHECK(std::as_const(c).at(0) == T(0));
  }
  CHECK(c.to_vector() == std::vector<T>{0, 2, 4});
}
TEST_CASE_TEMPLATE_APPLY(tensor_copy_pending, Scalars);
