// What statements mean and when they run: deferral, reading inside a scope, program
// order, aliasing, linking, shared intermediates, handles that outlive their operands,
// threads, value semantics, ranks 0 to 8, zero-size extents, shapes, sparse maps and the
// operation graph. Results are compared with the naive reference evaluator.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <unistd.h>

#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#include "support/scalars.hpp"

#include "support/environment_scope.hpp"
#include "support/reference.hpp"

namespace {

namespace ref = tenex_test::reference;
using tenex::Shape;
using tenex::Tensor;

using tenex_test::Scalars;

template <class T>
Tensor<T> random_tensor(const Shape& shape, std::uint64_t seed) {
  ref::Random rng(seed);
  std::vector<T> values(shape.size());
  for (T& v : values) v = static_cast<T>(rng.uniform());
  return Tensor<T>(shape, std::move(values));
}

template <class T>
ref::Array array(const Tensor<T>& t, std::string_view labels) {
  return ref::to_array(t, labels);
}

template <class T>
constexpr double tolerance() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-12;
}

// "" when `got` has the extents and (within tolerance) the values of `expected`.
template <class T>
std::string mismatch(const Tensor<T>& got, const ref::Array& expected) {
  const ref::Extents extents(got.shape().extents().begin(), got.shape().extents().end());
  if (extents != expected.extents) {
    return "shape " + ref::format_extents(extents) + ", expected " + ref::format_extents(expected.extents);
  }
  const auto values = got.to_vector();
  const ref::Array zero{expected.labels, expected.extents, std::vector<double>(expected.values.size(), 0.0)};
  return ref::compare(std::vector<double>(values.begin(), values.end()), expected, zero, tolerance<T>(),
                      tolerance<T>());
}

#define CHECK_MATCHES(got, expected)                       \
  do {                                                     \
    const std::string mismatch_ = mismatch(got, expected); \
    INFO(#got " vs " #expected ": ", mismatch_);           \
    CHECK(mismatch_.empty());                              \
  } while (false)

template <class T, class... I>
T get(const Tensor<T>& t, I... index) {
  return t.at(index...);
}

ref::Labels labels(std::string_view text) { return ref::parse_labels(text); }

}  // namespace

// ---------------------------------------------------------------------------------------
// Deferral and evaluation

TEST_CASE("semantics: a one-line statement is evaluated at its semicolon") {
  auto a = random_tensor<double>({3, 4}, 1), b = random_tensor<double>({4, 5}, 2);
  Tensor<double> c;
  CHECK_FALSE(c.has_value());
  c("i,j") = a("i,k") * b("k,j");
  CHECK_FALSE(c.pending());
  CHECK(c.has_value());
  CHECK(c.shape() == Shape{3, 5});
  CHECK_MATCHES(c, ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j")));
}

TEST_CASE("semantics: a named handle keeps its set pending until the end of its scope") {
  auto a = random_tensor<double>({2, 3}, 3), b = random_tensor<double>({3, 4}, 4);
  Tensor<double> c, d;
  {
    auto ab = a("i,k") * b("k,j");
    c("i,j") = ab;
    CHECK(c.pending());
    CHECK(c.shape() == Shape{2, 4});  // known before evaluation
    CHECK(c.rank() == 2);
    CHECK(c.size() == 8);
    CHECK(c.pending());  // and asking did not evaluate
    d("j,i") = 2.0 * ab;
    CHECK(d.pending());
    CHECK(d.shape() == Shape{4, 2});
  }
  CHECK_FALSE(c.pending());
  CHECK_FALSE(d.pending());
  const auto expected = ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j"));
  CHECK_MATCHES(c, expected);
  CHECK_MATCHES(d, ref::scaled(ref::permuted(expected, labels("j,i")), 2.0));
}

TEST_CASE("semantics: a pending target reports its new shape") {
  auto a = random_tensor<double>({2, 3}, 90);
  Tensor<double> c({9}, std::vector<double>(9, 1.0));
  {
    auto x = a("i,j");
    c("j,i") = x;
    CHECK(c.shape() == Shape{3, 2});
    CHECK(c.pending());
  }
  CHECK_MATCHES(c, ref::permuted(array(a, "i,j"), labels("j,i")));
}

TEST_CASE("semantics: wait() on a tensor that is not pending does nothing") {
  Tensor<double> x({2}, {1, 2});
  CHECK_NOTHROW(x.wait());
  CHECK(x.to_vector() == std::vector<double>{1, 2});
  Tensor<double> y;
  y("i") = x("i") * 2.0;
  CHECK_NOTHROW(y.wait());
  CHECK_NOTHROW(y.wait());
  CHECK(y.to_vector() == std::vector<double>{2, 4});
}

TEST_CASE("semantics: wait() evaluates a pending result") {
  auto a = random_tensor<double>({3, 3}, 5);
  Tensor<double> c;
  {
    auto x = a("i,j");
    c("j,i") = x;
    CHECK(c.pending());
    c.wait();
    CHECK_FALSE(c.pending());
    CHECK_MATCHES(c, ref::permuted(array(a, "i,j"), labels("j,i")));
  }
  CHECK_MATCHES(c, ref::permuted(array(a, "i,j"), labels("j,i")));
}

TEST_CASE("semantics: reading inside a scope evaluates what is recorded so far") {
  auto a = random_tensor<double>({2, 3}, 6);
  Tensor<double> c, d;
  {
    auto x = a("i,j");
    c("i,j") = x * 2.0;
    CHECK(c.pending());
    CHECK(get(c, 1, 2) == doctest::Approx(2.0 * get(a, 1, 2)));  // runs what is recorded
    CHECK_FALSE(c.pending());
    d("i,j") = x + x;  // recorded after the read: pending again until the scope ends
    CHECK(d.pending());
    CHECK_MATCHES(c, ref::scaled(array(a, "i,j"), 2.0));
  }
  CHECK_FALSE(d.pending());
  CHECK_MATCHES(d, ref::scaled(array(a, "i,j"), 2.0));
  CHECK_MATCHES(c, ref::scaled(array(a, "i,j"), 2.0));
}

TEST_CASE("semantics: each read accessor evaluates") {
  auto a = random_tensor<double>({2, 2}, 7);
  const auto expected = ref::scaled(array(a, "i,j"), 3.0);
  SUBCASE("data() const") {
    Tensor<double> c;
    auto x = a("i,j");
    c("i,j") = 3.0 * x;
    const Tensor<double>& cc = c;
    CHECK(cc.data()[3] == doctest::Approx(expected.values[3]));
    CHECK_FALSE(c.pending());
  }
  SUBCASE("data()") {
    Tensor<double> c;
    auto x = a("i,j");
    c("i,j") = 3.0 * x;
    CHECK(c.data()[1] == doctest::Approx(expected.values[1]));
    CHECK_FALSE(c.pending());
  }
  SUBCASE("to_vector()") {
    Tensor<double> c;
    auto x = a("i,j");
    c("i,j") = 3.0 * x;
    CHECK(c.to_vector().size() == 4);
    CHECK_FALSE(c.pending());
    CHECK_MATCHES(c, expected);
  }
  SUBCASE("at()") {
    Tensor<double> c;
    auto x = a("i,j");
    c("i,j") = 3.0 * x;
    CHECK(get(c, 1, 0) == doctest::Approx(expected.values[2]));
    CHECK_FALSE(c.pending());
  }
}

// ---------------------------------------------------------------------------------------
// Program order and aliasing

TEST_CASE("semantics: a later write to an operand does not change a pending result") {
  Tensor<double> a({2, 2}, {1, 2, 3, 4});
  Tensor<double> c, d, e;
  SUBCASE("write through at()") {
    {
      auto x = a("i,j");
      c("i,j") = x * 2.0;
      a.at(0, 0) = 99;
      d("i,j") = x * 3.0;         // x read a before the write
      e("i,j") = a("i,j") * 1.0;  // a statement after the write sees it
    }
    CHECK(get(c, 0, 0) == 2.0);
    CHECK(get(d, 0, 0) == 3.0);
    CHECK(get(e, 0, 0) == 99.0);
    CHECK(get(a, 0, 0) == 99.0);
    CHECK(get(c, 1, 1) == 8.0);
  }
  SUBCASE("write through data()") {
    {
      auto x = a("i,j");
      c("j,i") = x;
      a.data()[1] = -5;  // a(0, 1)
    }
    CHECK(get(c, 1, 0) == 2.0);
    CHECK(get(a, 0, 1) == -5.0);
  }
  SUBCASE("assignment to the operand") {
    Tensor<double> b({2, 2}, {10, 20, 30, 40});
    {
      auto x = a("i,j");
      c("i,j") = x * 2.0;
      a("i,j") = b("i,j") * 1.0;  // a new value for a, in the same scope
      d("i,j") = a("i,j") + x;    // new a plus old a
    }
    CHECK(c.to_vector() == std::vector<double>{2, 4, 6, 8});
    CHECK(a.to_vector() == std::vector<double>{10, 20, 30, 40});
    CHECK(d.to_vector() == std::vector<double>{11, 22, 33, 44});
  }
  SUBCASE("a statement reads the value an earlier pending statement gives") {
    {
      auto x = a("i,j");
      a("i,j") = x * 2.0;       // a pending: 2 * old a
      c("i,j") = a("i,j") + x;  // reads the pending a: 3 * old a
    }
    CHECK(a.to_vector() == std::vector<double>{2, 4, 6, 8});
    CHECK(c.to_vector() == std::vector<double>{3, 6, 9, 12});
  }
}

TEST_CASE("semantics: statements on one target run in program order") {
  auto a = random_tensor<double>({3, 3}, 80);
  const auto x0 = array(a, "i,j");
  SUBCASE("the later assignment wins") {
    Tensor<double> c;
    {
      auto x = a("i,j");
      c("i,j") = x;
      c("i,j") = 2.0 * x;
    }
    CHECK_MATCHES(c, ref::scaled(x0, 2.0));
  }
  SUBCASE("a statement between two assignments reads the first") {
    Tensor<double> c, d;
    {
      auto x = a("i,j");
      c("i,j") = x;
      d("i,j") = c("i,j") * 3.0;
      c("i,j") = 2.0 * x;
    }
    CHECK_MATCHES(c, ref::scaled(x0, 2.0));
    CHECK_MATCHES(d, ref::scaled(x0, 3.0));
  }
  SUBCASE("accumulating into a pending target") {
    Tensor<double> c;
    {
      auto x = a("i,j");
      c("i,j") = x;
      c("i,j") += x;
      c("i,j") += c("j,i");
      c("i,j") -= 0.5 * x;
    }
    const auto two = ref::scaled(x0, 2.0);
    const auto sym = ref::elementwise(ref::Op::add, two, ref::relabelled(two, "j,i"), labels("i,j"));
    CHECK_MATCHES(c, ref::elementwise(ref::Op::subtract, sym, ref::scaled(x0, 0.5), labels("i,j")));
  }
  SUBCASE("a write through at() to a pending target is kept") {
    Tensor<double> c;
    {
      auto x = a("i,j");
      c("i,j") = x * 2.0;
      c.at(0, 0) = 5.0;  // waits for c, then writes
      CHECK_FALSE(c.pending());
    }
    CHECK(get(c, 0, 0) == 5.0);
    CHECK(get(c, 1, 1) == doctest::Approx(2.0 * x0.values[4]));
  }
  SUBCASE("a target destroyed before its set runs") {
    Tensor<double> d;
    {
      auto x = a("i,j");
      {
        Tensor<double> tmp;
        tmp("i,j") = x * 2.0;
        d("i,j") = tmp("i,j") + x;
      }  // tmp dies while pending
    }
    CHECK_MATCHES(d, ref::scaled(x0, 3.0));
  }
  SUBCASE("a pending result nobody reads") {
    {
      Tensor<double> unused;
      auto x = a("i,j");
      unused("j,i") = x * x;
    }
    Tensor<double> c;
    c("i,j") = a("i,j") * 1.0;
    CHECK_MATCHES(c, x0);
  }
}

TEST_CASE("semantics: a target on its own right side") {
  SUBCASE("a(i,j) = a(j,i) on a non-square matrix") {
    auto a = random_tensor<double>({2, 3}, 8);
    const auto old = array(a, "i,j");
    a("i,j") = a("j,i");
    CHECK(a.shape() == Shape{3, 2});
    CHECK_MATCHES(a, ref::permuted(old, labels("j,i")));
  }
  SUBCASE("a(i,j) = a(j,i) on a square matrix") {
    auto a = random_tensor<double>({4, 4}, 9);
    const auto old = array(a, "i,j");
    a("i,j") = a("j,i");
    CHECK_MATCHES(a, ref::permuted(old, labels("j,i")));
  }
  SUBCASE("c(i,j) = c(i,k) * b(k,j)") {
    auto c = random_tensor<double>({3, 4}, 10), b = random_tensor<double>({4, 4}, 11);
    const auto old = array(c, "i,k");
    c("i,j") = c("i,k") * b("k,j");
    CHECK_MATCHES(c, ref::einsum({old, array(b, "k,j")}, labels("i,j")));
  }
  SUBCASE("c(i,j) = b(i,k) * c(k,j) changing the shape") {
    auto c = random_tensor<double>({4, 2}, 12), b = random_tensor<double>({3, 4}, 13);
    const auto old = array(c, "k,j");
    c("i,j") = b("i,k") * c("k,j");
    CHECK(c.shape() == Shape{3, 2});
    CHECK_MATCHES(c, ref::einsum({array(b, "i,k"), old}, labels("i,j")));
  }
  SUBCASE("c(i,j) += c(j,i)") {
    auto c = random_tensor<double>({3, 3}, 14);
    const auto old = array(c, "i,j");
    c("i,j") += c("j,i");
    CHECK_MATCHES(c, ref::elementwise(ref::Op::add, old, ref::relabelled(old, "j,i"), labels("i,j")));
  }
  SUBCASE("c(i,j) -= c(j,i)") {
    auto c = random_tensor<double>({3, 3}, 15);
    const auto old = array(c, "i,j");
    c("i,j") -= c("j,i");
    CHECK_MATCHES(c, ref::elementwise(ref::Op::subtract, old, ref::relabelled(old, "j,i"), labels("i,j")));
    for (std::size_t i = 0; i < 3; ++i) CHECK(get(c, i, i) == 0.0);
  }
  SUBCASE("c(i,j) += c(i,k) * c(k,j)") {
    auto c = random_tensor<double>({3, 3}, 16);
    const auto old = array(c, "i,j");
    c("i,j") += c("i,k") * c("k,j");
    const auto square = ref::einsum(
        {ref::make_array("i,k", {3, 3}, old.values), ref::make_array("k,j", {3, 3}, old.values)}, labels("i,j"));
    CHECK_MATCHES(c, ref::elementwise(ref::Op::add, old, square, labels("i,j")));
  }
  SUBCASE("a(i,j) = a(j,i) on a pending a") {
    auto b = random_tensor<double>({2, 3}, 91);
    Tensor<double> a;
    {
      auto x = b("i,j");
      a("i,j") = x * 2.0;
      a("i,j") = a("j,i");
      CHECK(a.shape() == Shape{3, 2});
    }
    CHECK_MATCHES(a, ref::scaled(ref::permuted(array(b, "i,j"), labels("j,i")), 2.0));
  }
  SUBCASE("c(i,j) = c(i,j) + c(j,i) inside a pending scope") {
    auto c = random_tensor<double>({2, 2}, 17);
    const auto old = array(c, "i,j");
    Tensor<double> d;
    {
      auto keep = c("i,j");
      c("i,j") = c("i,j") + c("j,i");
      d("i,j") = keep * 1.0;  // the old c
    }
    CHECK_MATCHES(c, ref::elementwise(ref::Op::add, old, ref::relabelled(old, "j,i"), labels("i,j")));
    CHECK_MATCHES(d, old);
  }
}

TEST_CASE("semantics: the same tensor several times in one statement") {
  auto a = random_tensor<double>({3, 3}, 18);
  const auto x = array(a, "i,j");
  Tensor<double> square, hadamard, norm;
  square("i,j") = a("i,k") * a("k,j");
  hadamard("i,j") = a("i,j") * a("j,i");
  norm("") = a("i,j") * a("i,j");
  CHECK_MATCHES(
      square,
      ref::einsum({ref::make_array("i,k", {3, 3}, x.values), ref::make_array("k,j", {3, 3}, x.values)}, labels("i,j")));
  CHECK_MATCHES(hadamard, ref::einsum({x, ref::make_array("j,i", {3, 3}, x.values)}, labels("i,j")));
  CHECK_MATCHES(norm, ref::einsum({x, x}, {}));
}

// ---------------------------------------------------------------------------------------
// Linking

TEST_CASE("semantics: a pending result used as an operand links the sets") {
  auto a = random_tensor<double>({3, 4}, 19), b = random_tensor<double>({4, 2}, 20);
  const auto two_a = ref::scaled(array(a, "i,k"), 2.0);
  SUBCASE("inside one scope") {
    Tensor<double> c, d;
    {
      auto x = a("i,k");
      c("i,k") = x * 2.0;
      d("i,j") = c("i,k") * b("k,j");
      CHECK(c.pending());
      CHECK(d.pending());
    }
    CHECK_MATCHES(c, two_a);
    CHECK_MATCHES(d, ref::einsum({two_a, array(b, "k,j")}, labels("i,j")));
  }
  SUBCASE("a one-line statement on a result that another scope keeps pending") {
    Tensor<double> c, d;
    {
      auto x = a("i,k");
      c("i,k") = x * 2.0;
      {
        d("i,j") = c("i,k") * b("k,j");  // uses the pending c
      }
      CHECK_MATCHES(d, ref::einsum({two_a, array(b, "k,j")}, labels("i,j")));
    }
    CHECK_MATCHES(c, two_a);
  }
  SUBCASE("a chain of pending results") {
    Tensor<double> c, d, e;
    {
      auto x = a("i,k");
      c("i,k") = x + x;
      d("k,i") = c("i,k");
      e("i,j") = d("k,i") * b("k,j");
      CHECK(e.pending());
    }
    CHECK_MATCHES(d, ref::permuted(two_a, labels("k,i")));
    CHECK_MATCHES(e, ref::einsum({two_a, array(b, "k,j")}, labels("i,j")));
  }
  SUBCASE("two sets merged by one expression") {
    Tensor<double> c, d, e;
    auto b2 = random_tensor<double>({3, 4}, 21);
    {
      auto x = a("i,k");
      auto y = b2("i,k");
      c("i,k") = 2.0 * x;
      d("i,k") = 3.0 * y;
      e("i,k") = x - y;  // one set now
    }
    CHECK_MATCHES(c, two_a);
    CHECK_MATCHES(d, ref::scaled(array(b2, "i,k"), 3.0));
    CHECK_MATCHES(e, ref::elementwise(ref::Op::subtract, array(a, "i,k"), array(b2, "i,k"), labels("i,k")));
  }
}

TEST_CASE("semantics: a named intermediate used by two statements is computed once") {
  constexpr std::size_t m = 8, n = 9, k = 10;
  auto a = random_tensor<double>({m, k}, 22), b = random_tensor<double>({k, n}, 23);
  Tensor<double> c, d;
  {
    auto ab = a("i,k") * b("k,j");
    c("i,j") = ab;
    d("i,j") = 2.0 * ab;
  }
  const auto expected = ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j"));
  CHECK_MATCHES(c, expected);
  CHECK_MATCHES(d, ref::scaled(expected, 2.0));
  const tenex::RunStats stats = tenex::last_run_stats();
  const double gemm = 2.0 * m * n * k;
  INFO("graph_nodes ", stats.graph_nodes, ", kernels ", stats.kernels, ", flops ", stats.flops);
  CHECK(stats.graph_nodes >= 3);  // two inputs and the product at least
  CHECK(stats.graph_nodes <= 10);
  CHECK(stats.kernels >= 1);
  CHECK(stats.flops >= gemm);       // the product ran
  CHECK(stats.flops < 2.0 * gemm);  // once
  CHECK(stats.seconds >= 0.0);
}

TEST_CASE("semantics: a product chain runs in its cheapest order") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  // (a b) c costs 2 (10*20*30 + 10*30*5) = 15000 flops, a (b c) 2 (20*30*5 + 10*20*5) = 8000.
  auto a = random_tensor<double>({10, 20}, 95), b = random_tensor<double>({20, 30}, 96),
       c = random_tensor<double>({30, 5}, 97);
  Tensor<double> e;
  e("i,l") = a("i,j") * b("j,k") * c("k,l");
  const tenex::RunStats stats = tenex::last_run_stats();
  INFO("flops ", stats.flops, ", kernels ", stats.kernels, ", peak_bytes ", stats.peak_bytes);
  CHECK(stats.flops == doctest::Approx(8000.0));
  CHECK(stats.kernels >= 2);
  CHECK(stats.peak_bytes >= 20 * 5 * sizeof(double));  // the intermediate b c
  CHECK(stats.peak_bytes < 1000000);
  CHECK_MATCHES(e, ref::einsum({array(a, "i,j"), array(b, "j,k"), array(c, "k,l")}, labels("i,l")));
}

TEST_CASE("semantics: last_run_stats counts a matrix product") {
  auto a = random_tensor<double>({6, 7}, 24), b = random_tensor<double>({7, 5}, 25);
  Tensor<double> c;
  c("i,j") = a("i,k") * b("k,j");
  const tenex::RunStats stats = tenex::last_run_stats();
  CHECK(stats.flops == doctest::Approx(2.0 * 6 * 7 * 5));
  CHECK(stats.graph_nodes >= 3);
  CHECK(stats.kernels >= 1);
}

// ---------------------------------------------------------------------------------------
// Handles

namespace {

tenex::Multiplication<Tensor<double>> product_of_temporaries(std::uint64_t seed) {
  auto a = random_tensor<double>({2, 3}, seed), b = random_tensor<double>({3, 4}, seed + 1);
  return a("i,k") * b("k,j");  // a and b die here; the expression keeps their values
}

auto transposed_sum(Tensor<double>& a, Tensor<double>& b) { return a("i,j") + b("j,i"); }

}  // namespace

TEST_CASE("semantics: expressions stored with auto, returned and outliving their operands") {
  const auto a = random_tensor<double>({2, 3}, 30), b = random_tensor<double>({3, 4}, 31);
  const auto expected = ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j"));
  SUBCASE("returned from a function whose tensors died") {
    Tensor<double> c;
    {
      auto p = product_of_temporaries(30);
      c("i,j") = p;
    }
    CHECK_MATCHES(c, expected);
  }
  SUBCASE("used in an expression after the function returned") {
    Tensor<double> c;
    c("j,i") = 2.0 * product_of_temporaries(30);
    CHECK_MATCHES(c, ref::scaled(ref::permuted(expected, labels("j,i")), 2.0));
  }
  SUBCASE("auto-typed return") {
    auto x = random_tensor<double>({2, 2}, 32), y = random_tensor<double>({2, 2}, 33);
    Tensor<double> c;
    {
      auto e = transposed_sum(x, y);
      c("i,j") = e;
    }
    CHECK_MATCHES(c, ref::elementwise(ref::Op::add, array(x, "i,j"), array(y, "j,i"), labels("i,j")));
  }
  SUBCASE("an operand made from a temporary tensor") {
    Tensor<double> c;
    {
      auto e = Tensor<double>({2, 2}, {1, 2, 3, 4})("i,j");  // the tensor dies at the ';'
      c("j,i") = e * 2.0;
    }
    CHECK(c.to_vector() == std::vector<double>{2, 6, 4, 8});
  }
  SUBCASE("copies of a handle are the same node") {
    Tensor<double> c;
    {
      auto p = product_of_temporaries(30);
      auto q = p;  // copy
      c("i,j") = p + q;
    }
    CHECK_MATCHES(c, ref::scaled(expected, 2.0));
  }
  SUBCASE("an expression stored and assigned twice") {
    Tensor<double> c, d;
    auto e = product_of_temporaries(30);
    c("i,j") = e;
    d("j,i") = e;
    CHECK(c.pending());  // e still alive
    CHECK_MATCHES(c, expected);
    CHECK_MATCHES(d, ref::permuted(expected, labels("j,i")));
  }
}

// ---------------------------------------------------------------------------------------
// Threads

namespace {

struct ThreadResult {
  std::string error;
  std::size_t mismatches = 0;
  tenex::RunStats stats;
};

// Builds and evaluates sets of its own, checking each against the reference; `extra` is an
// input made on the main thread.
ThreadResult thread_work(int id, Tensor<double>& extra) {
  ThreadResult r;
  try {
    for (int rep = 0; rep < 25; ++rep) {
      const std::size_t m = 3 + static_cast<std::size_t>(id), k = 4 + static_cast<std::size_t>(rep % 3);
      auto a = random_tensor<double>({m, k}, 1000 * static_cast<std::uint64_t>(id) + static_cast<std::uint64_t>(rep));
      auto b = random_tensor<double>({k, 5}, 5000 + static_cast<std::uint64_t>(rep));
      Tensor<double> c, d, e;
      {
        auto x = a("i,k");
        c("i,j") = x * b("k,j");
        d("k,i") = 2.0 * x - x;
        e("j,l") = c("i,j") * extra("i,l");
      }
      const auto expected_c = ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j"));
      const auto expected_d = ref::permuted(array(a, "i,k"), labels("k,i"));
      if (!mismatch(c, expected_c).empty()) ++r.mismatches;
      if (!mismatch(d, expected_d).empty()) ++r.mismatches;
      if (!mismatch(e, ref::einsum({expected_c, array(extra, "i,l")}, labels("j,l"))).empty()) ++r.mismatches;
      r.stats = tenex::last_run_stats();
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

}  // namespace

TEST_CASE("semantics: sets built and evaluated on several threads are independent") {
  constexpr int threads = 4;
  std::vector<Tensor<double>> extra;
  for (int id = 0; id < threads; ++id)
    extra.push_back(random_tensor<double>({3 + static_cast<std::size_t>(id), 4}, 900));
  std::vector<ThreadResult> alone;
  for (int id = 0; id < threads; ++id) alone.push_back(thread_work(id, extra[static_cast<std::size_t>(id)]));
  for (const auto& r : alone) REQUIRE(r.error.empty());
  for (int round = 0; round < 3; ++round) {
    std::vector<ThreadResult> results(threads);
    std::vector<std::thread> pool;
    for (int id = 0; id < threads; ++id) {
      pool.emplace_back(
          [&, id] { results[static_cast<std::size_t>(id)] = thread_work(id, extra[static_cast<std::size_t>(id)]); });
    }
    for (auto& t : pool) t.join();
    for (int id = 0; id < threads; ++id) {
      const ThreadResult& r = results[static_cast<std::size_t>(id)];
      INFO("round ", round, ", thread ", id, ": ", r.error);
      CHECK(r.error.empty());
      CHECK(r.mismatches == 0);
      // RunStats are per thread: each thread sees its own last set.
      CHECK(r.stats.flops == alone[static_cast<std::size_t>(id)].stats.flops);
      CHECK(r.stats.graph_nodes == alone[static_cast<std::size_t>(id)].stats.graph_nodes);
    }
  }
}

TEST_CASE("semantics: threads reading one tensor") {
  auto a = random_tensor<double>({6, 5}, 901);
  const auto expected = ref::einsum({array(a, "i,k"), ref::relabelled(array(a, "i,k"), "j,k")}, labels("i,j"));
  std::vector<std::string> reports(4);
  std::vector<std::thread> pool;
  for (std::size_t id = 0; id < reports.size(); ++id) {
    pool.emplace_back([&, id] {
      try {
        for (int rep = 0; rep < 20; ++rep) {
          Tensor<double> g;
          g("i,j") = a("i,k") * a("j,k");
          const std::string m = mismatch(g, expected);
          if (!m.empty()) reports[id] = m;
        }
      } catch (const std::exception& e) {
        reports[id] = e.what();
      }
    });
  }
  for (auto& t : pool) t.join();
  for (const auto& r : reports) {
    INFO(r);
    CHECK(r.empty());
  }
}

// ---------------------------------------------------------------------------------------
// Tensors

TEST_CASE("semantics: tensors are values") {
  Tensor<double> a({2, 2}, {1, 2, 3, 4});
  SUBCASE("a copy is a copy") {
    Tensor<double> b = a;
    b.at(0, 0) = 10;
    CHECK(get(a, 0, 0) == 1.0);
    a.at(1, 1) = 7;
    CHECK(get(b, 1, 1) == 4.0);
    Tensor<double> c;
    c = a;
    a("i,j") = a("j,i");
    CHECK(c.to_vector() == std::vector<double>{1, 2, 3, 7});
    CHECK(a.to_vector() == std::vector<double>{1, 3, 2, 7});
    c.data()[0] = -1;
    CHECK(get(a, 0, 0) == 1.0);
  }
  SUBCASE("a copy made while a result is pending waits for it") {
    Tensor<double> p;
    {
      auto x = a("i,j");
      p("j,i") = 2.0 * x;
      CHECK(p.pending());
      Tensor<double> q = p;
      CHECK_FALSE(q.pending());
      CHECK(q.to_vector() == std::vector<double>{2, 6, 4, 8});
      CHECK_FALSE(p.pending());
      Tensor<double> r;
      r = p;
      CHECK(r.to_vector() == std::vector<double>{2, 6, 4, 8});
    }
    CHECK(p.to_vector() == std::vector<double>{2, 6, 4, 8});
  }
  SUBCASE("copy assignment from a pending result") {
    Tensor<double> p, q({5});
    {
      auto x = a("i,j");
      p("i,j") = x + x;
      q = p;
      CHECK(q.shape() == Shape{2, 2});
      CHECK(q.to_vector() == std::vector<double>{2, 4, 6, 8});
    }
  }
  SUBCASE("a moved pending result is still fulfilled") {
    Tensor<double> moved;
    {
      Tensor<double> p;
      auto x = a("i,j");
      p("i,j") = 3.0 * x;
      moved = std::move(p);
    }
    CHECK_FALSE(moved.pending());
    CHECK(moved.to_vector() == std::vector<double>{3, 6, 9, 12});
  }
  SUBCASE("constructors") {
    Tensor<double> none;
    CHECK_FALSE(none.has_value());
    CHECK_FALSE(none.pending());
    Tensor<float> zeros(Shape{2, 3});
    CHECK(zeros.shape() == Shape{2, 3});
    CHECK(zeros.rank() == 2);
    CHECK(zeros.size() == 6);
    CHECK(zeros.to_vector() == std::vector<float>(6, 0.0f));
    Tensor<double> scalar(Shape{}, {2.5});
    CHECK(scalar.rank() == 0);
    CHECK(scalar.size() == 1);
    CHECK(scalar.at() == 2.5);
  }
  SUBCASE("fill_random and allclose") {
    Tensor<double> x({3, 4}), y({3, 4}), z({3, 4});
    tenex::fill_random(x, 42);
    tenex::fill_random(y, 42);
    tenex::fill_random(z, 43);
    CHECK(tenex::allclose(x, y));
    CHECK_FALSE(tenex::allclose(x, z));
    for (double v : x.to_vector()) {
      CHECK(v >= -1.0);
      CHECK(v < 1.0);
    }
    Tensor<double> w;
    w("i,j") = x("i,j") * 1.0;
    CHECK(tenex::allclose(w, x));
    CHECK_FALSE(tenex::allclose(w, Tensor<double>({4, 3})));
  }
}

TEST_CASE_TEMPLATE_DEFINE("semantics: ranks 0 to 8", T, semantics_ranks) {
  const std::vector<std::size_t> pattern = {2, 3, 1, 2, 2, 1, 2, 3};
  for (std::size_t rank = 0; rank <= 8; ++rank) {
    INFO("rank ", rank);
    std::vector<std::size_t> extents(pattern.begin(), pattern.begin() + static_cast<std::ptrdiff_t>(rank));
    ref::Labels names;
    for (std::size_t m = 0; m < rank; ++m) {
      names.emplace_back(1, 'i');  // then appended: "i" + std::to_string is GCC 12's false -Wrestrict
      names.back() += std::to_string(m);
    }
    ref::Labels reversed(names.rbegin(), names.rend());
    const std::string forward = ref::join_labels(names), backward = ref::join_labels(reversed);
    auto a = random_tensor<T>(Shape(extents), 100 + rank);
    CHECK(a.rank() == rank);
    const auto x = array(a, forward);

    Tensor<T> permuted, total, twice, hadamard;
    permuted(backward) = a(forward);
    total("") = a(forward);
    twice(forward) = a(forward) + a(forward);
    hadamard(backward) = a(forward) * a(forward);
    CHECK_MATCHES(permuted, ref::permuted(x, reversed));
    CHECK_MATCHES(total, ref::einsum({x}, {}));
    CHECK_MATCHES(twice, ref::scaled(x, 2.0));
    CHECK_MATCHES(hadamard, ref::einsum({x, x}, reversed));
    CHECK(permuted.rank() == rank);
    CHECK(total.rank() == 0);
  }
}
TEST_CASE_TEMPLATE_APPLY(semantics_ranks, Scalars);

TEST_CASE_TEMPLATE_DEFINE("semantics: rank-8 contractions", T, semantics_rank8) {
  const std::vector<std::size_t> ea = {2, 3, 1, 2, 2, 1, 2, 3}, eb = {2, 1, 2, 3, 2, 3, 1, 2};
  auto a = random_tensor<T>(Shape(ea), 120), b = random_tensor<T>(Shape(eb), 121);
  const std::string la = "i0,i1,i2,i3,i4,i5,i6,i7", lb = "i4,i5,i6,i7,j0,j1,j2,j3";
  Tensor<T> c, h;
  c("j3,i0,j0,i1,j1,i2,j2,i3") = a(la) * b(lb);
  CHECK(c.rank() == 8);
  CHECK_MATCHES(c, ref::einsum({array(a, la), array(b, lb)}, labels("j3,i0,j0,i1,j1,i2,j2,i3")));
  // A batch over four modes and a contraction over the other four.
  h("i4,i0,i1,i2,i3") = a(la) * b("i4,i5,i6,i7,i0,i1,i2,i3");
  CHECK_MATCHES(h, ref::einsum({array(a, la), ref::relabelled(array(b, lb), "i4,i5,i6,i7,i0,i1,i2,i3")},
                               labels("i4,i0,i1,i2,i3")));
}
TEST_CASE_TEMPLATE_APPLY(semantics_rank8, Scalars);

TEST_CASE_TEMPLATE_DEFINE("semantics: operands large enough for the blocked kernels", T, semantics_large) {
  SUBCASE("matrix products in every transpose") {
    auto a = random_tensor<T>({64, 48}, 130), b = random_tensor<T>({48, 80}, 131);
    const auto A = array(a, "i,k"), B = array(b, "k,j");
    const auto expected = ref::einsum({A, B}, labels("i,j"));
    Tensor<T> c1, c2, c3;
    c1("i,j") = a("i,k") * b("k,j");
    c2("j,i") = a("i,k") * b("k,j");
    c3("i,j") = b("k,j") * a("i,k");
    CHECK_MATCHES(c1, expected);
    CHECK_MATCHES(c2, ref::permuted(expected, labels("j,i")));
    CHECK_MATCHES(c3, expected);
    auto at = random_tensor<T>({48, 64}, 132);
    Tensor<T> c4;
    c4("i,j") = at("k,i") * b("k,j");
    CHECK_MATCHES(c4, ref::einsum({array(at, "k,i"), B}, labels("i,j")));
  }
  SUBCASE("a batched product") {
    auto x = random_tensor<T>({6, 20, 30}, 133), y = random_tensor<T>({30, 6, 25}, 134);
    Tensor<T> h;
    h("i,b,j") = x("b,i,k") * y("k,b,j");
    CHECK_MATCHES(h, ref::einsum({array(x, "b,i,k"), array(y, "k,b,j")}, labels("i,b,j")));
  }
  SUBCASE("a rank-4 contraction over two modes") {
    auto x = random_tensor<T>({9, 8, 7, 6}, 135), y = random_tensor<T>({7, 10, 9, 5}, 136);
    Tensor<T> z;
    z("l,j,m,n") = x("i,j,k,l") * y("k,m,i,n");
    CHECK_MATCHES(z, ref::einsum({array(x, "i,j,k,l"), array(y, "k,m,i,n")}, labels("l,j,m,n")));
  }
  SUBCASE("permutations and sums of a rank-4 tensor") {
    auto x = random_tensor<T>({16, 12, 10, 14}, 137);
    const auto X = array(x, "i,j,k,l");
    Tensor<T> p, q, r;
    p("l,j,i,k") = x("i,j,k,l");
    q("l,i") = x("i,j,k,l");
    r("k,j,i,l") = x("i,j,k,l") * 2.0 + x("i,j,k,l");
    CHECK_MATCHES(p, ref::permuted(X, labels("l,j,i,k")));
    CHECK_MATCHES(q, ref::einsum({X}, labels("l,i")));
    CHECK_MATCHES(r, ref::scaled(ref::permuted(X, labels("k,j,i,l")), 3.0));
  }
  SUBCASE("broadcasting over large modes") {
    auto e = random_tensor<T>({300}, 138), f = random_tensor<T>({200}, 139);
    Tensor<T> d;
    d("a,i") = e("i") - f("a");
    CHECK_MATCHES(d, ref::elementwise(ref::Op::subtract, array(e, "i"), array(f, "a"), labels("a,i")));
  }
}
TEST_CASE_TEMPLATE_APPLY(semantics_large, Scalars);

TEST_CASE("semantics: the MP2 energy expression") {
  constexpr std::size_t nocc = 3, nvirt = 5, naux = 7;
  auto B = random_tensor<double>({naux, nocc, nvirt}, 140);
  auto eo = random_tensor<double>({nocc}, 141), ev = random_tensor<double>({nvirt}, 142);
  for (std::size_t i = 0; i < nocc; ++i) eo.at(i) = eo.at(i) - 2.0;  // occupied below virtual
  for (std::size_t a = 0; a < nvirt; ++a) ev.at(a) = ev.at(a) + 2.0;
  Tensor<double> V, D, T, E;
  V("i,a,j,b") = B("Q,i,a") * B("Q,j,b");
  D("i,a,j,b") = eo("i") - ev("a") + eo("j") - ev("b");
  T("i,a,j,b") = V("i,a,j,b") / D("i,a,j,b");
  E("") = T("i,a,j,b") * (2.0 * V("i,a,j,b") - V("i,b,j,a"));

  const auto Bq = array(B, "Q,i,a");
  const auto v = ref::einsum({Bq, ref::relabelled(Bq, "Q,j,b")}, labels("i,a,j,b"));
  const auto Eo = array(eo, "i"), Ev = array(ev, "a");
  auto d = ref::elementwise(ref::Op::subtract, Eo, Ev, labels("i,a"));
  d = ref::elementwise(ref::Op::add, d, ref::relabelled(Eo, "j"), labels("i,a,j"));
  d = ref::elementwise(ref::Op::subtract, d, ref::relabelled(Ev, "b"), labels("i,a,j,b"));
  const auto t = ref::elementwise(ref::Op::divide, v, d, labels("i,a,j,b"));
  const auto w =
      ref::elementwise(ref::Op::subtract, ref::scaled(v, 2.0), ref::relabelled(v, "i,b,j,a"), labels("i,a,j,b"));
  const auto energy = ref::einsum({t, w}, {});
  CHECK_MATCHES(D, d);
  CHECK_MATCHES(T, t);
  CHECK_MATCHES(E, energy);
  // The same in one set, with named intermediates.
  Tensor<double> E2;
  {
    auto vv = B("Q,i,a") * B("Q,j,b");
    auto tt = vv / (eo("i") - ev("a") + eo("j") - ev("b"));
    Tensor<double> Vs;
    Vs("i,a,j,b") = vv;
    E2("") = tt * (2.0 * Vs("i,a,j,b") - Vs("i,b,j,a"));
  }
  CHECK_MATCHES(E2, energy);
}

TEST_CASE("semantics: at() on ranks 0 to 8") {
  Tensor<double> r0(Shape{}, {5.0});
  CHECK(r0.at() == 5.0);
  auto r3 = random_tensor<double>({2, 3, 4}, 40);
  CHECK(r3.at(1, 2, 3) == r3.to_vector()[1 * 12 + 2 * 4 + 3]);
  auto r8 = random_tensor<double>({2, 2, 2, 2, 2, 2, 2, 2}, 41);
  CHECK(r8.at(1, 0, 1, 0, 1, 0, 1, 1) == r8.to_vector()[0b10101011]);
  r8.at(1, 1, 1, 1, 1, 1, 1, 1) = 3.0;
  CHECK(r8.to_vector()[255] == 3.0);
}

TEST_CASE("semantics: zero-size extents") {
  SUBCASE("an empty free mode") {
    Tensor<double> a({0, 3}), c;
    auto b = random_tensor<double>({3, 4}, 42);
    c("i,j") = a("i,k") * b("k,j");
    CHECK(c.shape() == Shape{0, 4});
    CHECK(c.size() == 0);
    CHECK(c.to_vector().empty());
  }
  SUBCASE("an empty summed mode gives zeros") {
    Tensor<double> p({2, 0}), q({0, 3}), r;
    r("i,j") = p("i,k") * q("k,j");
    CHECK(r.shape() == Shape{2, 3});
    CHECK(r.to_vector() == std::vector<double>(6, 0.0));
  }
  SUBCASE("sums, permutations and element-wise work on empty tensors") {
    Tensor<double> z({0, 3}), t, d, e;
    t("") = z("i,j");
    CHECK(t.rank() == 0);
    CHECK(t.at() == 0.0);
    d("j,i") = z("i,j");
    CHECK(d.shape() == Shape{3, 0});
    e("i,j") = z("i,j") + 2.0 * z("i,j");
    CHECK(e.shape() == Shape{0, 3});
  }
  SUBCASE("a zero-size tensor from data") {
    Tensor<float> z(Shape{4, 0, 2}, std::vector<float>{});
    CHECK(z.size() == 0);
    CHECK(z.rank() == 3);
  }
}

// ---------------------------------------------------------------------------------------
// Labels, broadcasting, diagonals

TEST_CASE("semantics: labels may be long and have spaces around them") {
  auto a = random_tensor<double>({3, 4}, 50), b = random_tensor<double>({4, 2}, 51);
  Tensor<double> c, d;
  c(" mu , nu ") = a("mu,lambda") * b(" lambda,nu");
  d("nu,mu") = a("mu , nu");
  CHECK_MATCHES(c, ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j")));
  CHECK_MATCHES(d, ref::permuted(array(a, "i,j"), labels("j,i")));
  Tensor<double> e;
  e("x_1,Y2") = a("x_1,_k") * b("_k,Y2");
  CHECK_MATCHES(e, ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j")));
}

TEST_CASE_TEMPLATE_DEFINE("semantics: broadcasting, traces and diagonals", T, semantics_broadcast) {
  auto e = random_tensor<T>({3}, 52), f = random_tensor<T>({4}, 53), a = random_tensor<T>({4, 4}, 54);
  auto s = random_tensor<T>(Shape{}, 55);
  Tensor<T> D, tr, diag, shifted, ratio;
  D("i,a") = e("i") - f("a");
  tr("") = a("i,i");
  diag("i") = a("i,i");
  shifted("a,b") = a("a,b") + s("");
  auto g = random_tensor<T>({4}, 56);
  for (std::size_t k = 0; k < 4; ++k) g.at(k) = static_cast<T>(1.5) + g.at(k);  // in [0.5, 2.5)
  ratio("a,i") = e("i") / g("a");
  const auto E = array(e, "i"), F = array(f, "a"), A = array(a, "i,i"), S = array(s, "");
  CHECK_MATCHES(D, ref::elementwise(ref::Op::subtract, E, F, labels("i,a")));
  CHECK_MATCHES(tr, ref::einsum({A}, {}));
  CHECK_MATCHES(diag, ref::einsum({A}, labels("i")));
  CHECK_MATCHES(shifted, ref::elementwise(ref::Op::add, array(a, "a,b"), S, labels("a,b")));
  CHECK_MATCHES(ratio, ref::elementwise(ref::Op::divide, E, array(g, "a"), labels("a,i")));
}
TEST_CASE_TEMPLATE_APPLY(semantics_broadcast, Scalars);

TEST_CASE_TEMPLATE_DEFINE("semantics: products and element-wise operations mixed", T, semantics_mixed) {
  auto a = random_tensor<T>({3, 4}, 150), b = random_tensor<T>({3, 4}, 151), m = random_tensor<T>({4, 5}, 152);
  auto d = random_tensor<T>({3, 5}, 153), dt = random_tensor<T>({5, 3}, 154), v = random_tensor<T>({4}, 155);
  auto e = random_tensor<T>({6}, 156), f = random_tensor<T>({6}, 157);
  for (std::size_t i = 0; i < 3; ++i) {  // keep the divisors away from zero
    for (std::size_t j = 0; j < 4; ++j) b.at(i, j) = static_cast<T>(2) + b.at(i, j);
    for (std::size_t j = 0; j < 5; ++j) d.at(i, j) = static_cast<T>(2) + d.at(i, j);
  }
  const auto A = array(a, "i,j"), B = array(b, "i,j"), M = array(m, "k,j"), D = array(d, "i,j"), V = array(v, "j");
  const auto AM = ref::einsum({ref::relabelled(A, "i,k"), M}, labels("i,j"));
  Tensor<T> c1, c2, c3, c4, c5, c6;
  c1("i") = (a("i,j") / b("i,j")) * v("j");
  c2("i,j") = (a("i,k") + b("i,k")) * m("k,j");
  c3("") = (e("i") - f("i")) * (e("i") - f("i"));
  c4("i,j") = 2.0 * (a("i,k") * m("k,j")) - 0.5 * dt("j,i");
  c5("i,j") = -(a("i,k") * m("k,j")) / 4.0 + d("i,j");
  c6("j,i") = (a("i,k") * m("k,j")) / d("i,j");
  CHECK_MATCHES(c1, ref::einsum({ref::elementwise(ref::Op::divide, A, B, labels("i,j")), V}, labels("i")));
  CHECK_MATCHES(
      c2, ref::einsum({ref::relabelled(ref::elementwise(ref::Op::add, A, B, labels("i,j")), "i,k"), M}, labels("i,j")));
  const auto diff = ref::elementwise(ref::Op::subtract, array(e, "i"), array(f, "i"), labels("i"));
  CHECK_MATCHES(c3, ref::einsum({diff, diff}, {}));
  CHECK_MATCHES(
      c4, ref::elementwise(ref::Op::subtract, ref::scaled(AM, 2.0), ref::scaled(array(dt, "j,i"), 0.5), labels("i,j")));
  CHECK_MATCHES(c5, ref::elementwise(ref::Op::add, ref::scaled(AM, -0.25), D, labels("i,j")));
  CHECK_MATCHES(c6, ref::elementwise(ref::Op::divide, AM, D, labels("j,i")));
}
TEST_CASE_TEMPLATE_APPLY(semantics_mixed, Scalars);

// ---------------------------------------------------------------------------------------
// Backend choice

namespace {

// Runs this test executable again on one test case with extra environment variables
// (the environment is read once a process has not chosen a backend itself).
int run_self(const std::string& environment, const std::string& test_case) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command =
      environment + " '" + self + "' '--test-case=" + test_case + "' --no-intro=true > /dev/null 2>&1";
  return std::system(command.c_str());
}

void check_backend_runs() {
  auto a = random_tensor<double>({4, 3}, 160), b = random_tensor<double>({3, 2}, 161);
  Tensor<double> c;
  c("i,j") = a("i,k") * b("k,j");
  CHECK_MATCHES(c, ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j")));
}

}  // namespace

TEST_CASE("semantics: TENEX_BACKEND chooses the default backend") {
  const char* child = std::getenv("TENEX_TEST_BACKEND_CHILD");
  if (!child) {
    for (const std::string kind : {"cpu", "auto", "cuda"}) {
      INFO("TENEX_BACKEND=", kind);
      CHECK(run_self("TENEX_TEST_BACKEND_CHILD=" + kind + " TENEX_BACKEND=" + kind,
                     "semantics: TENEX_BACKEND chooses the default backend") == 0);
    }
    return;
  }
  // In the child process.
  const std::string kind = child;
  if (kind == "cpu") {
    CHECK(tenex::default_backend() == tenex::BackendKind::cpu);
    check_backend_runs();
  } else if (kind == "auto") {
    CHECK(tenex::default_backend() == tenex::BackendKind::automatic);
    check_backend_runs();
  } else if (kind == "cuda" && tenex::cuda_available()) {
    CHECK(tenex::default_backend() == tenex::BackendKind::cuda);
    check_backend_runs();
  } else if (kind == "cuda") {
    CHECK(tenex::default_backend() == tenex::BackendKind::cuda);
    auto a = random_tensor<double>({2, 2}, 162);
    Tensor<double> c;
    CHECK_NOTHROW(c("i,j") = a("i,j") * 2.0);  // the error is stored in c
    CHECK_THROWS_AS(c.wait(), tenex::BackendError);
    try {
      c.wait();
    } catch (const tenex::Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find("CUDA") != std::string::npos);
    }
  }
}

TEST_CASE("semantics: set_default_backend") {
  const tenex::BackendKind before = tenex::default_backend();
  tenex::set_default_backend(tenex::BackendKind::cpu);
  CHECK(tenex::default_backend() == tenex::BackendKind::cpu);
  check_backend_runs();
  tenex::set_default_backend(tenex::BackendKind::automatic);
  CHECK(tenex::default_backend() == tenex::BackendKind::automatic);
  check_backend_runs();
  if (!tenex::cuda_available()) {
    CHECK_THROWS_AS(tenex::set_default_backend(tenex::BackendKind::cuda), tenex::BackendError);
    CHECK(tenex::default_backend() == tenex::BackendKind::automatic);
  }
  tenex::set_default_backend(
      before == tenex::BackendKind::cuda && !tenex::cuda_available() ? tenex::BackendKind::automatic : before);
}

// ---------------------------------------------------------------------------------------
// Shapes

TEST_CASE("semantics: shapes compose without data") {
  Shape a{3, 4}, b{4, 5}, c;
  c("i,j") = a("i,k") * b("k,j");
  CHECK(c == Shape{3, 5});
  Shape d;
  d("j,i") = a("i,j");
  CHECK(d == Shape{4, 3});
  Shape e{3}, f{7}, g;
  g("i,a") = e("i") - f("a");
  CHECK(g == Shape{3, 7});
  Shape t;
  t("") = a("i,k") * b("k,j");
  CHECK(t.rank() == 0);
  CHECK(t == Shape{});
  Shape h{4, 4}, diag;
  diag("i") = h("i,i");
  CHECK(diag == Shape{4});
  Shape x{2, 3}, y{3, 4}, z{4, 5, 6}, w;
  w("l,i,m") = x("i,j") * y("j,k") * z("k,l,m");
  CHECK(w == Shape{5, 2, 6});
  Shape scoped;
  {
    auto xk = a("i,k");
    scoped("i,j") = xk * b("k,j");
  }
  CHECK(scoped == Shape{3, 5});
  Shape bad{5, 6};
  CHECK_THROWS_AS(c("i,j") = a("i,k") * bad("k,j"), tenex::ShapeError);
  CHECK(c == Shape{3, 5});
}

// ---------------------------------------------------------------------------------------
// Sparse maps

TEST_CASE("semantics: sparse maps zero the elements they exclude") {
  auto a = random_tensor<double>({3, 4}, 60), b = random_tensor<double>({4, 5}, 61);
  const auto product = ref::einsum({array(a, "i,k"), array(b, "k,j")}, labels("i,j"));
  tenex::SparseMap L;
  L.insert({0}, {{0}, {1}});
  L.insert({1}, {{1}, {2}});
  L.insert({2}, {{3}, {4}, {0}});
  ref::SparsePattern pattern{{"i"}, {"j"}, {}};
  pattern.allowed[{0}] = {{0}, {1}};
  pattern.allowed[{1}] = {{1}, {2}};
  pattern.allowed[{2}] = {{3}, {4}, {0}};
  const auto expected = ref::masked(product, pattern);

  SUBCASE("registered on the product") {
    Tensor<double> c;
    {
      auto x = a("i,k") * b("k,j");
      x.set_sparse_map("i", "j", L);
      c("i,j") = x;
    }
    CHECK_MATCHES(c, expected);
    CHECK(get(c, 0, 3) == 0.0);
    CHECK(get(c, 0, 0) != 0.0);
  }
  SUBCASE("registered through another handle of the set, permuted target") {
    Tensor<double> c;
    {
      auto ai = a("i,k");
      auto x = ai * b("k,j");
      ai.set_sparse_map("i", "j", L);  // j occurs in the set through x
      c("j,i") = x;
    }
    CHECK_MATCHES(c, ref::permuted(expected, labels("j,i")));
  }
  SUBCASE("registered after the assignment, before the set runs") {
    Tensor<double> c;
    {
      auto x = a("i,k") * b("k,j");
      c("i,j") = x;
      x.set_sparse_map("i", "j", L);
    }
    CHECK_MATCHES(c, expected);
  }
  SUBCASE("registered inside a one-line statement") {
    Tensor<double> c;
    c("i,j") = (a("i,k") * b("k,j")).set_sparse_map("i", "j", L);
    CHECK_MATCHES(c, expected);
  }
  SUBCASE("a map of another set does not apply") {
    Tensor<double> c, d;
    {
      auto x = a("i,k") * b("k,j");
      x.set_sparse_map("i", "j", L);
      c("i,j") = x;
    }
    d("i,j") = a("i,k") * b("k,j");
    CHECK_MATCHES(c, expected);
    CHECK_MATCHES(d, product);
  }
  SUBCASE("built from a std::map") {
    tenex::SparseMap M(std::map<std::size_t, std::vector<std::size_t>>{{0, {0, 1}}, {1, {1, 2}}, {2, {3, 4, 0}}});
    Tensor<double> c;
    {
      auto x = a("i,k") * b("k,j");
      x.set_sparse_map("i", "j", M);
      c("i,j") = x;
    }
    CHECK_MATCHES(c, expected);
  }
  SUBCASE("on an element-wise result") {
    auto e = random_tensor<double>({3}, 62), f = random_tensor<double>({5}, 63);
    Tensor<double> D;
    {
      auto d = e("i") - f("j");
      d.set_sparse_map("i", "j", L);
      D("i,j") = d;
    }
    CHECK_MATCHES(
        D, ref::masked(ref::elementwise(ref::Op::subtract, array(e, "i"), array(f, "j"), labels("i,j")), pattern));
  }
  SUBCASE("a map over two modes") {
    auto v = random_tensor<double>({2, 3}, 64), w = random_tensor<double>({2, 2}, 65);
    tenex::SparseMap P;
    ref::SparsePattern pp{{"i", "j"}, {"a", "b"}, {}};
    for (std::size_t i = 0; i < 2; ++i) {
      for (std::size_t j = 0; j < 2; ++j) {
        std::vector<tenex::SparseMap::Index> allowed = {{(i + j) % 3, j}, {2, 1 - j}};
        P.insert({i, j}, allowed);
        for (const auto& t : allowed) pp.allowed[{i, j}].insert(t);
      }
    }
    Tensor<double> c;
    {
      auto x = v("i,a") * w("j,b");
      x.set_sparse_map("i,j", "a,b", P);
      c("i,j,a,b") = x;
    }
    CHECK_MATCHES(c, ref::masked(ref::einsum({array(v, "i,a"), array(w, "j,b")}, labels("i,j,a,b")), pp));
  }
  SUBCASE("operands that honour the map contract as usual") {
    // a2 is zero where the map excludes (i, j): the map is a true statement about it.
    auto a2 = ref::masked(array(random_tensor<double>({3, 5}, 66), "i,j"), pattern);
    Tensor<double> t(Shape{3, 5}, a2.values);
    auto v = random_tensor<double>({5}, 67);
    Tensor<double> d;
    {
      auto x = t("i,j") * v("j");
      x.set_sparse_map("i", "j", L);
      d("i") = x;
    }
    CHECK_MATCHES(d, ref::einsum({a2, array(v, "j")}, labels("i")));
  }
}

// ---------------------------------------------------------------------------------------
// The operation graph

namespace {

std::size_t count_kind(const tenex::OpGraph& g, tenex::OpKind kind) {
  std::size_t n = 0;
  for (tenex::NodeId id = 0; id < g.size(); ++id) n += g.node(id).kind == kind ? 1 : 0;
  return n;
}

bool contains(const std::string& text, std::string_view what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("graph: to_dot shows each node's operation, labels and extents") {
  auto a = random_tensor<double>({7, 11}, 70), b = random_tensor<double>({11, 7}, 71);
  tenex::OpGraph g;
  auto amn = a("mu,nu");
  auto e = amn + 2.0 * b("nu,mu");
  const tenex::NodeId n = e.add_to_graph(g);
  CHECK(n < g.size());
  CHECK_NOTHROW(g.validate());
  CHECK(g.topological_order().size() == g.size());
  CHECK(g.node(n).kind == tenex::OpKind::add);
  CHECK(count_kind(g, tenex::OpKind::add) == 1);
  CHECK(count_kind(g, tenex::OpKind::input) == 2);
  const std::string dot = g.to_dot();
  INFO(dot);
  CHECK(contains(dot, "digraph"));
  CHECK(contains(dot, tenex::op_kind_name(tenex::OpKind::add)));
  CHECK(contains(dot, tenex::op_kind_name(tenex::OpKind::input)));
  CHECK(contains(dot, "mu"));
  CHECK(contains(dot, "nu"));
  CHECK(contains(dot, "7"));
  CHECK(contains(dot, "11"));
  CHECK(contains(dot, "->"));

  tenex::OpGraph s;
  (2.0 * amn).add_to_graph(s);
  CHECK(count_kind(s, tenex::OpKind::scale) == 1);
  CHECK(contains(s.to_dot(), tenex::op_kind_name(tenex::OpKind::scale)));

  tenex::OpGraph p;
  (a("i,k") * b("k,j")).add_to_graph(p);
  CHECK(count_kind(p, tenex::OpKind::contract) == 1);
  CHECK(contains(p.to_dot(), tenex::op_kind_name(tenex::OpKind::contract)));
}

TEST_CASE("graph: sparse maps are carried on the nodes and shown in the DOT text") {
  auto a = random_tensor<double>({3, 4}, 76), b = random_tensor<double>({4, 5}, 77);
  tenex::SparseMap L;
  L.insert({0}, {{0}, {1}});
  L.insert({2}, {{4}});
  auto x = a("i,k") * b("k,j");
  x.set_sparse_map("i", "j", L);
  tenex::OpGraph g;
  const tenex::NodeId n = x.add_to_graph(g);
  REQUIRE(g.sparse_maps().size() == 1);
  CHECK(g.sparse_maps()[0].source == std::vector<std::string>{"i"});
  CHECK(g.sparse_maps()[0].target == std::vector<std::string>{"j"});
  CHECK(g.sparse_maps()[0].map->pair_count() == 3);
  CHECK(g.node(n).sparse_maps == std::vector<std::size_t>{0});
  const std::string dot = g.to_dot();
  INFO(dot);
  CHECK(contains(dot, "sparse"));
}

TEST_CASE("graph: a shared node is added once") {
  auto a = random_tensor<double>({3, 4}, 72), b = random_tensor<double>({4, 5}, 73);
  auto x = a("i,k") * b("k,j");
  tenex::OpGraph g;
  const tenex::NodeId first = x.add_to_graph(g);
  const std::size_t size = g.size();
  CHECK(x.add_to_graph(g) == first);
  CHECK(g.size() == size);
  auto copy = x;
  CHECK(copy.add_to_graph(g) == first);
  CHECK(g.size() == size);
  auto scaled = x * 2.0;
  scaled.add_to_graph(g);
  CHECK(g.size() == size + 1);  // only the scale is new

  tenex::OpGraph twice;
  (x + x).add_to_graph(twice);
  CHECK(count_kind(twice, tenex::OpKind::contract) == 1);
  CHECK(count_kind(twice, tenex::OpKind::add) == 1);
  CHECK(count_kind(twice, tenex::OpKind::input) == 2);
}

TEST_CASE("graph: TENEX_DUMP_GRAPH writes each evaluated set") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tenex-dump-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto a = random_tensor<double>({3, 4}, 74), b = random_tensor<double>({4, 5}, 75);
  Tensor<double> c, d;
  ::setenv("TENEX_DUMP_GRAPH", dir.c_str(), 1);
  c("i,j") = a("i,k") * b("k,j");
  d("j,i") = c("i,j") + c("i,j");
  ::unsetenv("TENEX_DUMP_GRAPH");
  Tensor<double> after;
  after("i,j") = a("i,j") * 1.0;  // not dumped

  std::vector<fs::path> dumps;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    INFO("file ", name);
    const bool numbered = name.size() > 8 && name.rfind("set-", 0) == 0 && name.substr(name.size() - 4) == ".dot" &&
                          name.find_first_not_of("0123456789", 4) == name.size() - 4;
    CHECK(numbered);  // set-N.dot
    dumps.push_back(entry.path());
  }
  CHECK(dumps.size() == 2);
  bool saw_contract = false;
  for (const auto& path : dumps) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(contains(text.str(), "digraph"));
    saw_contract = saw_contract || contains(text.str(), tenex::op_kind_name(tenex::OpKind::contract));
  }
  CHECK(saw_contract);
  CHECK_MATCHES(d, ref::scaled(ref::permuted(array(c, "i,j"), labels("j,i")), 2.0));
  fs::remove_all(dir);
}

TEST_CASE("graph: shape expressions draw into an OpGraph too") {
  tenex::Shape a{3, 4}, b{4, 5};
  tenex::OpGraph g;
  auto product = a("i,k") * b("k,j");
  const tenex::NodeId id = product.add_to_graph(g);
  g.validate();
  CHECK(g.node(id).kind == tenex::OpKind::contract);
  CHECK(g.node(id).extents == std::vector<std::size_t>{3, 5});
  CHECK(g.to_dot().find("(i,j) {3, 5}") != std::string::npos);
  const std::size_t size = g.size();
  CHECK(product.add_to_graph(g) == id);  // memoized: the same handle, the same node
  CHECK(g.size() == size);
}

TEST_CASE_TEMPLATE_DEFINE("semantics: += and -= through a stored handle read the current value", T,
                          semantics_stored_handle) {
  Tensor<T> a(Shape{3}, {1, 2, 3}), b(Shape{3}, {10, 20, 30}), c(Shape{3}, {100, 100, 100});
  {
    auto h = c("i");
    c("i") = a("i");
    h += b("i");
  }
  CHECK(c.to_vector() == std::vector<T>{11, 22, 33});
  // t = a; t -= a through a handle kept in a vector gives zero.
  Tensor<T> t;
  std::vector<tenex::Indexed<Tensor<T>>> handles;
  handles.push_back(t("i"));
  handles[0] = a("i");
  handles[0] -= a("i");
  handles.clear();
  CHECK(t.to_vector() == std::vector<T>{0, 0, 0});
}
TEST_CASE_TEMPLATE_APPLY(semantics_stored_handle, tenex_test::Scalars);

TEST_CASE("semantics: a moved-from expression is an error") {
  Tensor<double> a(Shape{2}, {1, 2}), c;
  auto x = a("i") + a("i");
  auto y = std::move(x);
  CHECK_THROWS_WITH_AS(c("i") = x, doctest::Contains("moved from"), tenex::Error);
  CHECK_THROWS_AS((void)x.labels(), tenex::Error);
  c("i") = y;
  CHECK(c.at(1) == 4.0);
}

TEST_CASE("semantics: an Indexed keeps its labels as written") {
  using Labels = std::vector<std::string>;
  Tensor<double> a(Shape{2, 2}, {1, 2, 3, 4}), none, t;
  const auto plain = a("j,i");
  CHECK(plain.written_labels() == Labels{"j", "i"});
  CHECK(plain.labels() == Labels{"j", "i"});
  CHECK(plain.to_string() == "(\"j,i\") {2, 2}");
  auto diagonal = a("i,i");
  CHECK(diagonal.written_labels() == Labels{"i", "i"});
  CHECK(diagonal.labels() == Labels{"i"});
  CHECK(diagonal.to_string() == "(\"i,i\") {2, 2}");
  auto copy = diagonal;
  CHECK(copy.written_labels() == Labels{"i", "i"});
  const auto moved = std::move(copy);
  CHECK(copy.written_labels().empty());  // NOLINT(bugprone-use-after-move): a moved-from Indexed has none
  CHECK(moved.written_labels() == Labels{"i", "i"});
  CHECK(none("i,j").written_labels() == Labels{"i", "j"});
  CHECK(a("i,j,k").written_labels() == Labels{"i", "j", "k"});  // the wrong rank is an error where it is read
  t("") = moved;
  CHECK(t.at() == 5.0);
  // A target written with its labels in another order permutes; one with a repeated label is refused.
  Tensor<double> c;
  c("j,i") = a("i,j");
  CHECK(get(c, 0, 1) == 3.0);
  CHECK_THROWS_WITH_AS(c("i,i") = a("i,j"), doctest::Contains("repeats label \"i\""), tenex::ShapeError);
  CHECK(get(c, 0, 1) == 3.0);
}

// set_sparse_map checks its labels against every label the set has seen: those of each
// operand, summed or not, through scales, permutations and a pending result read. (The maps
// allow every element: what a map zeroes is tested above.)
TEST_CASE("semantics: a set knows the labels of all its operands") {
  Tensor<double> a(Shape{2, 3}, {1, 2, 3, 4, 5, 6}), b(Shape{3, 4}), c, d;
  tenex::fill_random(b, 7);
  tenex::SparseMap k_to_j, i_to_k;
  for (std::size_t k = 0; k < 3; ++k) k_to_j.insert({k}, {{0}, {1}, {2}, {3}});
  for (std::size_t i = 0; i < 2; ++i) i_to_k.insert({i}, {{0}, {1}, {2}});
  {
    auto x = 2.0 * permute(a("i,k"), "k,i") * b("k,j");
    x.set_sparse_map("k", "j", k_to_j);  // k is summed: it is on the factors only
    CHECK_THROWS_WITH_AS(x.set_sparse_map("q", "j", k_to_j), doctest::Contains("label \"q\" does not occur"),
                         tenex::ShapeError);
    c("i,j") = x;
  }
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < 3; ++k) sum += 2.0 * get(a, i, k) * get(b, k, j);
      CHECK(get(c, i, j) == doctest::Approx(sum));
    }
  }
  {
    Tensor<double> p;
    auto y = 2.0 * a("i,k");
    p("i,k") = y;  // pending while y lives
    auto z = p("i,k") + a("i,k");
    z.set_sparse_map("i", "k", i_to_k);  // the pending operand joined y's set
    CHECK_THROWS_WITH_AS(z.set_sparse_map("i", "x", i_to_k), doctest::Contains("label \"x\" does not occur"),
                         tenex::ShapeError);
    d("i,k") = z;
  }
  CHECK(get(d, 1, 2) == doctest::Approx(18.0));
}
