// Tensor element access: at() reports the index the caller passed (indices of 2^63 and more
// were once shown as negative numbers), and the documented rule for pointers from data()
// ("Pointer invalidation" in docs/getting-started.md).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <typeinfo>
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

// The message of what `f` throws, prefixed with the exception's type unless it is
// tenex::Error itself (at() throws tenex::Error, not one of its subclasses).
template <class F>
std::string thrown_error(F f) {
  try {
    f();
  } catch (const tenex::Error& e) {
    if (typeid(e) == typeid(tenex::Error)) return e.what();
    return std::string("(") + typeid(e).name() + ") " + e.what();
  }
  return "(nothing thrown)";
}

std::string out_of_range(const std::string& index, std::size_t mode, std::size_t extent) {
  return "tenex: Tensor::at: index " + index + " is out of range for mode " + std::to_string(mode) + " of extent " +
         std::to_string(extent) + " (shape {2, 3})";
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("tensor access: at() reports the index as passed, also 2^63 and above", T,
                          tensor_access_at_index) {
  Tensor<T> t = iota_tensor<T>({2, 3});
  const Tensor<T>& ct = t;
  constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();
  constexpr std::uint64_t two_to_63 = std::uint64_t{1} << 63;

  SUBCASE("unsigned indices of 2^63 and above") {
    CHECK(thrown_error([&] { (void)t.at(size_max, 0); }) == out_of_range("18446744073709551615", 0, 2));
    CHECK(thrown_error([&] { (void)ct.at(size_max, 0); }) == out_of_range("18446744073709551615", 0, 2));
    CHECK(thrown_error([&] { (void)t.at(0, two_to_63); }) == out_of_range("9223372036854775808", 1, 3));
    CHECK(thrown_error([&] { (void)ct.at(std::size_t{1}, size_max - 1); }) ==
          out_of_range("18446744073709551614", 1, 3));
    CHECK_THROWS_WITH_AS((void)t.at(size_max, size_max), out_of_range("18446744073709551615", 0, 2).c_str(),
                         tenex::Error);
  }
  SUBCASE("negative signed indices stay negative") {
    CHECK(thrown_error([&] { (void)t.at(-1, 0); }) == out_of_range("-1", 0, 2));
    CHECK(thrown_error([&] { (void)ct.at(0, -1); }) == out_of_range("-1", 1, 3));
    CHECK(thrown_error([&] { (void)t.at(0, std::numeric_limits<long long>::min()); }) ==
          out_of_range("-9223372036854775808", 1, 3));
    CHECK(thrown_error([&] { (void)ct.at(std::int8_t{-3}, 0); }) == out_of_range("-3", 0, 2));
  }
  SUBCASE("other integer types") {
    CHECK(thrown_error([&] { (void)t.at(std::uint8_t{200}, 0); }) == out_of_range("200", 0, 2));
    CHECK(thrown_error([&] { (void)ct.at(0, std::numeric_limits<long long>::max()); }) ==
          out_of_range("9223372036854775807", 1, 3));
    CHECK(thrown_error([&] { (void)ct.at(2u, 0); }) == out_of_range("2", 0, 2));
  }
  SUBCASE("in range, any integer type") {
    CHECK(ct.at(std::size_t{1}, std::uint8_t{2}) == T(5));
    CHECK(ct.at(std::int16_t{1}, 0ull) == T(3));
    t.at(std::uint64_t{0}, 1L) = T(42);
    CHECK(ct.at(0, 1) == T(42));
  }
}
TEST_CASE_TEMPLATE_APPLY(tensor_access_at_index, Scalars);

// The rule in docs/getting-started.md ("Pointer invalidation"): after an expression captured
// the tensor, or after a copy or an assignment, data() must be called again before writing;
// the new pointer writes the tensor only, never the value the expression or the copy holds.
TEST_CASE_TEMPLATE_DEFINE("tensor access: data() called again after a capture or a copy writes the tensor only", T,
                          tensor_access_pointer_rule) {
  Tensor<T> a({3}, {1, 2, 3});
  T* const before = a.data();
  Tensor<T> c;
  {
    auto x = a("i");
    c("i") = x * 2.0;
    T* const after = a.data();  // called again after the capture: a's own elements
    CHECK(after != before);
    after[0] = T(100);
  }
  CHECK(c.to_vector() == std::vector<T>{2, 4, 6});
  CHECK(a.to_vector() == std::vector<T>{100, 2, 3});

  Tensor<T> copy = a;
  T* const own = a.data();
  CHECK(own != std::as_const(copy).data());
  own[1] = T(-1);
  CHECK(copy.to_vector() == std::vector<T>{100, 2, 3});
  CHECK(a.to_vector() == std::vector<T>{100, -1, 3});

  // After an assignment the tensor has new elements: data() again gives them.
  a("i") = c("i") * 1.0;
  CHECK(a.data()[2] == T(6));
}
TEST_CASE_TEMPLATE_APPLY(tensor_access_pointer_rule, Scalars);
