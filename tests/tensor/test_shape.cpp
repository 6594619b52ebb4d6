// Shape: construction, rank, size and extents, comparison, printing, the element-count
// overflow check, and shapes composed through expressions.
#include <doctest/doctest.h>

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

// The message of the tenex::Error `f` throws ("" when it throws none).
template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const tenex::Error& e) {
    return e.what();
  }
  return {};
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("shape: the default shape is rank 0 with one element") {
  const Shape s;
  CHECK(s.rank() == 0);
  CHECK(s.size() == 1);
  CHECK(s.extents().empty());
  CHECK(s.to_string() == "{}");
  CHECK(s == Shape(std::vector<std::size_t>{}));
}

TEST_CASE("shape: initializer-list and vector constructors agree") {
  const Shape a{3, 4, 5};
  const Shape b(std::vector<std::size_t>{3, 4, 5});
  CHECK(a.rank() == 3);
  CHECK(a.size() == 60);
  CHECK(a.extents() == std::vector<std::size_t>{3, 4, 5});
  CHECK(a.extent(0) == 3);
  CHECK(a.extent(1) == 4);
  CHECK(a.extent(2) == 5);
  CHECK(a == b);
  CHECK_FALSE(a != b);
}

TEST_CASE("shape: a zero extent gives size 0") {
  CHECK(Shape{0}.size() == 0);
  CHECK(Shape{3, 0, 7}.size() == 0);
  CHECK(Shape{3, 0, 7}.rank() == 3);
  CHECK(Shape{3, 0, 7}.extent(1) == 0);
  CHECK(Shape{1}.size() == 1);
}

TEST_CASE("shape: extent out of range throws tenex::Error naming Shape::extent") {
  const Shape s{3, 4};
  CHECK_THROWS_AS((void)s.extent(2), tenex::Error);
  CHECK_THROWS_AS((void)s.extent(kMax), tenex::Error);
  CHECK_THROWS_AS((void)Shape().extent(0), tenex::Error);
  const std::string message = error_message([&] { (void)s.extent(2); });
  CHECK_MESSAGE(starts_with(message, "tenex: Shape::extent"), message);
  CHECK_MESSAGE(message.find("{3, 4}") != std::string::npos, message);
  CHECK_NOTHROW((void)s.extent(1));
}

TEST_CASE("shape: equality compares rank and every extent") {
  CHECK(Shape{3, 4} == Shape{3, 4});
  CHECK(Shape{3, 4} != Shape{4, 3});
  CHECK(Shape{3, 4} != Shape{3, 4, 1});
  CHECK(Shape{3} != Shape{});
  CHECK(Shape{0} != Shape{});
  CHECK_FALSE(Shape{2, 2} == Shape{2});
}

TEST_CASE("shape: to_string") {
  CHECK(Shape{3, 4}.to_string() == "{3, 4}");
  CHECK(Shape{7}.to_string() == "{7}");
  CHECK(Shape{1, 0, 12}.to_string() == "{1, 0, 12}");
  CHECK(Shape().to_string() == "{}");
}

TEST_CASE("shape: an element count that std::size_t cannot hold throws tenex::ShapeError") {
  CHECK_THROWS_AS(Shape({kMax, 2}), tenex::ShapeError);
  CHECK_THROWS_AS(Shape(std::vector<std::size_t>{kMax / 2 + 1, 2}), tenex::ShapeError);
  CHECK_THROWS_AS(Shape({std::size_t{1} << 32, std::size_t{1} << 32}), tenex::ShapeError);
  // ShapeError is a tenex::Error.
  CHECK_THROWS_AS(Shape({kMax, kMax}), tenex::Error);
  // The largest counts that fit, and a zero extent anywhere, are fine.
  CHECK_NOTHROW(Shape({kMax, 1}));
  CHECK_NOTHROW(Shape({kMax / 2, 2}));
  CHECK(Shape({kMax, 1}).size() == kMax);
  CHECK(Shape({kMax, kMax, 0}).size() == 0);
  CHECK(Shape({0, kMax, kMax}).size() == 0);
}

TEST_CASE("shape: shapes compose through expressions") {
  Shape a{3, 4}, b{4, 5}, c;
  c("i,j") = a("i,k") * b("k,j");
  CHECK(c == Shape{3, 5});
  Shape t;
  t("j,i") = a("i,j");
  CHECK(t == Shape{4, 3});
}
