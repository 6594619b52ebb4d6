// Bad input: each throws at the statement that wrote it, with a message that names the
// operation, the labels and the extents, and leaves every object as it was. The messages
// are part of the library's contract and pinned here exactly.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

Tensor<double> counting(const Shape& shape) {
  std::vector<double> v(shape.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1);
  return Tensor<double>(shape, v);
}

}  // namespace

TEST_CASE("errors: labels naming the wrong number of modes") {
  auto a = counting({2, 3, 4});
  Tensor<double> c({2, 2}, {1, 2, 3, 4});
  const char* message = "tenex: labels \"i,j\" name 2 modes but the tensor has rank 3 with extents {2, 3, 4}";
  CHECK_THROWS_WITH_AS(c("i,j") = a("i,j"), message, tenex::ShapeError);
  CHECK_THROWS_WITH_AS(c("i,j") = a("i,j") * 2.0, message, tenex::ShapeError);
  Tensor<double> b = counting({3, 5});
  CHECK_THROWS_WITH_AS(c("i,k") = a("i,j") * b("j,k"), message, tenex::ShapeError);
  CHECK_FALSE(c.pending());
  CHECK(c.shape() == Shape{2, 2});
  CHECK(c.to_vector() == std::vector<double>{1, 2, 3, 4});
  CHECK(a.shape() == Shape{2, 3, 4});
  // Too many labels too.
  CHECK_THROWS_WITH_AS(c("i,j") = b("i,j,k"),
                       "tenex: labels \"i,j,k\" name 3 modes but the tensor has rank 2 with extents {3, 5}",
                       tenex::ShapeError);
  // A target takes the rank of the right side whatever it had.
  c("i,j,k") = a("i,j,k");
  CHECK(c.shape() == Shape{2, 3, 4});
}

TEST_CASE("errors: malformed labels") {
  auto a = counting({3, 4});
  Tensor<double> c({1}, {7});
  CHECK_THROWS_WITH_AS(c("i,j") = a("i,,j"), "tenex: malformed labels \"i,,j\": empty label at position 2",
                       tenex::Error);
  CHECK_THROWS_WITH_AS(c("i,j") = a("i,3x"), "tenex: malformed labels \"i,3x\": \"3x\" is not an identifier",
                       tenex::Error);
  CHECK_THROWS_WITH_AS(c("i,,j") = a("i,j"), "tenex: malformed labels \"i,,j\": empty label at position 2",
                       tenex::Error);
  CHECK(c.to_vector() == std::vector<double>{7});
  CHECK(c.shape() == Shape{1});
  // Spaces around labels are fine; "" is a scalar.
  CHECK_NOTHROW(c(" j , i ") = a(" i , j "));
  CHECK(c.shape() == Shape{4, 3});
  CHECK(c.at(3, 2) == a.at(2, 3));
  Tensor<double> s;
  CHECK_NOTHROW(s("") = a("i,j"));
  CHECK(s.rank() == 0);
  CHECK(s.at() == 78.0);
}

TEST_CASE("errors: one label with two extents") {
  auto a = counting({3, 4});
  auto b = counting({5, 6});
  Tensor<double> c({2}, {1, 2});
  CHECK_THROWS_WITH_AS(
      c("i,j") = a("i,k") * b("k,j"),
      "tenex: Multiplication: label \"k\" has extent 4 in (\"i,k\") {3, 4} but extent 5 in (\"k,j\") {5, 6}",
      tenex::ShapeError);
  CHECK_THROWS_WITH_AS(c("i,j") = a("i,j") + b("i,j"),
                       "tenex: Addition: label \"i\" has extent 3 in (\"i,j\") {3, 4} but extent 5 in (\"i,j\") {5, 6}",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(
      c("i,k") = a("i,j") - b("j,k"),
      "tenex: Subtraction: label \"j\" has extent 4 in (\"i,j\") {3, 4} but extent 5 in (\"j,k\") {5, 6}",
      tenex::ShapeError);
  CHECK_THROWS_WITH_AS(c("i,k") = a("i,j") / b("j,k"),
                       "tenex: Division: label \"j\" has extent 4 in (\"i,j\") {3, 4} but extent 5 in (\"j,k\") {5, 6}",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(c("i") = a("i,i"), "tenex: labels \"i,i\": label \"i\" has extent 3 and extent 4",
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(c("") = a("i,i"), "tenex: labels \"i,i\": label \"i\" has extent 3 and extent 4",
                       tenex::ShapeError);
  CHECK_FALSE(c.pending());
  CHECK(c.to_vector() == std::vector<double>{1, 2});
  CHECK(a.to_vector() == counting({3, 4}).to_vector());

  // Shapes check the same way.
  Shape sa{3, 4}, sb{5, 6}, sc{9};
  CHECK_THROWS_WITH_AS(
      sc("i,j") = sa("i,k") * sb("k,j"),
      "tenex: Multiplication: label \"k\" has extent 4 in (\"i,k\") {3, 4} but extent 5 in (\"k,j\") {5, 6}",
      tenex::ShapeError);
  CHECK(sc == Shape{9});
}

TEST_CASE("errors: a target that repeats a label") {
  auto a = counting({3, 4});
  Tensor<double> c({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(c("i,i") = a("i,j"), "tenex: assignment target \"i,i\" repeats label \"i\"", tenex::Error);
  CHECK(c.shape() == Shape{2, 2});
  CHECK(c.to_vector() == std::vector<double>{1, 2, 3, 4});
  auto square = counting({3, 3});
  Tensor<double> d = counting({3, 3});
  CHECK_THROWS_WITH_AS(d("i,i") += square("i,j"), "tenex: assignment target \"i,i\" repeats label \"i\"", tenex::Error);
  CHECK_THROWS_WITH_AS(d("j,j") -= square("j,j"), "tenex: assignment target \"j,j\" repeats label \"j\"", tenex::Error);
  CHECK(d.to_vector() == counting({3, 3}).to_vector());
}

TEST_CASE("errors: a target label the right side does not produce") {
  auto a = counting({3, 4});
  Tensor<double> c({2, 2}, {1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(
      c("i,x") = a("i,j"),
      "tenex: assignment target \"i,x\": label \"x\" is not produced by the right side (\"i,j\") {3, 4}", tenex::Error);
  CHECK(c.shape() == Shape{2, 2});
  CHECK(c.to_vector() == std::vector<double>{1, 2, 3, 4});
  Tensor<double> fresh;
  CHECK_THROWS_AS(fresh("x") = a("i,j"), tenex::Error);
  CHECK_FALSE(fresh.has_value());
}

TEST_CASE("errors: data of the wrong size") {
  CHECK_THROWS_WITH_AS(tenex::Tensor<double>({2, 3}, std::vector<double>(5)),
                       "tenex: Tensor: 5 values given for shape {2, 3} of size 6", tenex::Error);
  CHECK_THROWS_WITH_AS(tenex::Tensor<float>({4}, std::vector<float>(7)),
                       "tenex: Tensor: 7 values given for shape {4} of size 4", tenex::Error);
  CHECK_THROWS_AS(tenex::Tensor<double>(Shape{}, std::vector<double>{}), tenex::Error);
}

TEST_CASE("errors: a shape whose number of elements overflows") {
  // 2^62 * 8 and 2^61 * sizeof(double) wrap around std::size_t: such a tensor cannot exist.
  CHECK_THROWS_AS(tenex::Tensor<double>(Shape{std::size_t{1} << 62, 8}), tenex::Error);
  CHECK_THROWS_AS(tenex::Tensor<double>(Shape{std::size_t{1} << 61}), tenex::Error);
  CHECK_THROWS_AS(tenex::Tensor<float>(Shape{std::size_t{1} << 32, std::size_t{1} << 32}), tenex::Error);
}

TEST_CASE("errors: at() out of range or with the wrong number of indices") {
  Tensor<double> t = counting({2, 3});
  const Tensor<double>& ct = t;
  CHECK_THROWS_WITH_AS(t.at(1, 3), "tenex: Tensor::at: index 3 is out of range for mode 1 of extent 3 (shape {2, 3})",
                       tenex::Error);
  CHECK_THROWS_WITH_AS(ct.at(1, 3), "tenex: Tensor::at: index 3 is out of range for mode 1 of extent 3 (shape {2, 3})",
                       tenex::Error);
  CHECK_THROWS_WITH_AS(t.at(2, 0), "tenex: Tensor::at: index 2 is out of range for mode 0 of extent 2 (shape {2, 3})",
                       tenex::Error);
  CHECK_THROWS_WITH_AS(t.at(1), "tenex: Tensor::at: 1 indices given for a tensor of rank 2 (shape {2, 3})",
                       tenex::Error);
  CHECK_THROWS_WITH_AS(ct.at(0, 0, 0), "tenex: Tensor::at: 3 indices given for a tensor of rank 2 (shape {2, 3})",
                       tenex::Error);
  CHECK_THROWS_AS(t.at(-1, 0), tenex::Error);
  CHECK(t.to_vector() == counting({2, 3}).to_vector());
  CHECK(ct.at(1, 2) == 6.0);
}

TEST_CASE("errors: reading a tensor that was never given a value") {
  tenex::Tensor<double> x;
  tenex::Tensor<double> c({1}, {5});
  CHECK_THROWS_WITH_AS(c("i") = x("i"),
                       "tenex: the tensor labelled \"i\" has no value: give it a shape or assign to it first",
                       tenex::Error);
  CHECK(c.to_vector() == std::vector<double>{5});
  CHECK_FALSE(x.has_value());
  CHECK_THROWS_WITH_AS(x.data(), "tenex: Tensor::data: the tensor has no value", tenex::Error);
  const tenex::Tensor<double>& cx = x;
  CHECK_THROWS_WITH_AS(cx.data(), "tenex: Tensor::data: the tensor has no value", tenex::Error);
  CHECK_THROWS_AS(x.to_vector(), tenex::Error);
  CHECK_THROWS_AS(x.shape(), tenex::Error);
  // It is still a valid target.
  x("i") = c("i");
  CHECK(x.to_vector() == std::vector<double>{5});
}

TEST_CASE("errors: sparse maps with unknown labels or out-of-range indices") {
  auto a = counting({3, 4});
  tenex::SparseMap m;
  m.insert({0}, {{1}});
  tenex::Tensor<double> c;
  {
    auto e = a("i,j");
    CHECK_THROWS_WITH_AS(e.set_sparse_map("i", "x", m),
                         "tenex: set_sparse_map(\"i\", \"x\"): label \"x\" does not occur in the linked set",
                         tenex::Error);
    tenex::SparseMap out_of_range;
    out_of_range.insert({7}, {{0}});
    CHECK_THROWS_WITH_AS(e.set_sparse_map("i", "j", out_of_range),
                         "tenex: set_sparse_map(\"i\", \"j\"): index 7 of label \"i\" is out of range for extent 3",
                         tenex::Error);
    tenex::SparseMap target_out_of_range;
    target_out_of_range.insert({0}, {{9}});
    CHECK_THROWS_AS(e.set_sparse_map("i", "j", target_out_of_range), tenex::Error);
    tenex::SparseMap two_modes;
    two_modes.insert({0, 0}, {{0}});
    CHECK_THROWS_AS(e.set_sparse_map("i", "j", two_modes), tenex::Error);  // 2 source indices for 1 label
    c("i,j") = e * 1.0;
  }
  // None of the rejected maps was registered.
  CHECK(c.to_vector() == a.to_vector());
}

TEST_CASE("errors: a rejected statement leaves its set intact") {
  auto a = counting({2, 3});
  auto b = counting({4, 2});
  Tensor<double> c({1}, {-1}), d;
  {
    auto x = a("i,k");
    d("i,k") = x * 2.0;
    CHECK_THROWS_AS(c("i,j") = x * b("k,j"), tenex::ShapeError);  // k: 3 against 4
    CHECK(d.pending());
  }
  CHECK(d.to_vector() == std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK_FALSE(c.pending());
  CHECK(c.to_vector() == std::vector<double>{-1});
}

TEST_CASE("errors: division by a zero number") {
  auto a = counting({2});
  Tensor<double> c({1}, {3});
  CHECK_THROWS_AS(c("i") = a("i") / 0.0, tenex::Error);
  CHECK(c.to_vector() == std::vector<double>{3});
}

TEST_CASE("errors: every error is a tenex::Error and a std::runtime_error") {
  auto a = counting({3, 4});
  Tensor<double> c;
  try {
    c("i,j") = a("i,j,k");
    FAIL("no exception");
  } catch (const tenex::ShapeError& e) {
    const tenex::Error& base = e;
    const std::runtime_error& runtime = e;
    CHECK(std::string(base.what()) == runtime.what());
    CHECK(std::string(e.what()).rfind("tenex: ", 0) == 0);
  }
}

TEST_CASE_TEMPLATE_DEFINE("errors: a failed multi-target statement changes none of its targets", T,
                          errors_multi_target) {
  Tensor<T> a(Shape{3, 3}, {4, 1, 0, 1, 3, 1, 0, 1, 2});
  Tensor<T> v(Shape{2}, {7, 8}), w(Shape{1}, {9});
  CHECK_THROWS_AS(std::make_pair(v("i,j"), w("i")) = tenex::eigen_solve(a("i,j")), tenex::ShapeError);
  CHECK(v.shape() == Shape{2});
  CHECK(v.to_vector() == std::vector<T>{7, 8});
  CHECK(w.to_vector() == std::vector<T>{9});

  Tensor<T> q(Shape{1}, {5}), r(Shape{1}, {6});
  CHECK_THROWS_AS(tenex::tie(q("i,k"), r("k,x")) = tenex::qr(a("i,j")), tenex::ShapeError);
  CHECK(q.to_vector() == std::vector<T>{5});
  CHECK(r.to_vector() == std::vector<T>{6});

  // A good statement after the failed one works, and separate statements stay separate.
  Tensor<T> vv, ww;
  std::make_pair(vv("i,j"), ww("j")) = tenex::eigen_solve(a("i,j"));
  CHECK(vv.shape() == Shape{3, 3});
  CHECK(ww.shape() == Shape{3});
}
TEST_CASE_TEMPLATE_APPLY(errors_multi_target, tenex_test::Scalars);

TEST_CASE("errors: numpy's letters for a tensor's modes are an error where they are written") {
  auto a = counting({2, 3});
  Tensor<double> c({2}, {5, 6});
  const char* message =
      "tenex: labels \"ij\" name one mode but the tensor has rank 2 with extents {2, 3}: labels are "
      "comma-separated identifiers (\"i,j\"), not numpy's letters";
  // The Indexed itself throws: nothing to assign, nothing recorded.
  CHECK_THROWS_WITH_AS(a("ij"), message, tenex::ShapeError);
  CHECK_THROWS_AS(c("i") = a("ij") * 2.0, tenex::ShapeError);
  CHECK_THROWS_AS(a("ij") = c("i") * c("j"), tenex::ShapeError);
  auto b = counting({2, 3, 4});
  CHECK_THROWS_WITH_AS(b("ijk"),
                       "tenex: labels \"ijk\" name one mode but the tensor has rank 3 with extents {2, 3, 4}: "
                       "labels are comma-separated identifiers (\"i,j,k\"), not numpy's letters",
                       tenex::ShapeError);
  Shape s{2, 3};
  CHECK_THROWS_AS(s("ij"), tenex::ShapeError);
  CHECK(a.to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(c.to_vector() == std::vector<double>{5, 6});
  // A one-letter label of a vector, a long label of a vector and a long label whose length is
  // not the rank keep the ordinary rules.
  Tensor<double> v;
  v("ij") = c("ij");
  CHECK(v.to_vector() == std::vector<double>{5, 6});
  CHECK_THROWS_WITH_AS(c("i") = a("abc"),
                       "tenex: labels \"abc\" name 1 mode but the tensor has rank 2 with extents {2, 3}",
                       tenex::ShapeError);
}
