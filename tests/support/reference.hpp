// A naive reference evaluator of generalized Einstein notation, the trusted
// oracle of the test suite.
//
// It works on std::vector<double> (Array) or std::vector<std::complex<double>> (ComplexArray)
// with plain nested loops over every value of every label: an einsum sums, over every label
// the output does not keep, the product of the operands' elements. A label repeated inside one operand takes
// its diagonal; an operand without labels is a scalar. Nothing here is clever,
// so that it can be trusted.
//
//   auto a = reference::make_array("i,k", {2, 3}, values_a);
//   auto b = reference::make_array("k,j", {3, 4}, values_b);
//   auto c = reference::einsum({a, b}, reference::parse_labels("i,j"));   // a matrix product
//
// Every operation has one definition (a template in reference.cpp) and an overload for each
// of the two value types, so that a call with a braced list of arrays picks its type.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tenex_test::reference {

using Extents = std::vector<std::size_t>;
using Labels = std::vector<std::string>;

/// "i, j,mu" -> {"i", "j", "mu"}; "" -> {} (a scalar). Spaces around labels are dropped.
Labels parse_labels(std::string_view text);
/// {"i", "j"} -> "i,j".
std::string join_labels(const Labels& labels);
/// {2, 3} -> "{2, 3}".
std::string format_extents(const Extents& extents);

/// A dense row-major array whose modes carry labels (labels may repeat: a diagonal), of
/// values V: double (Array) or std::complex<double> (ComplexArray).
template <class V>
struct BasicArray {
  Labels labels;
  Extents extents;
  std::vector<V> values;
};
using Complex = std::complex<double>;
using Array = BasicArray<double>;
using ComplexArray = BasicArray<Complex>;

/// Checks that values.size() is the product of the extents and that labels match the rank.
Array make_array(std::string_view labels, Extents extents, std::vector<double> values);
ComplexArray make_array(std::string_view labels, Extents extents, std::vector<Complex> values);
std::size_t element_count(const Extents& extents);

/// out[out_labels] = sum over every other label of the product of all operands.
/// Every output label must occur in some operand and be unique; one label must have one
/// extent everywhere. The result's labels are `out_labels`, its extents follow from the operands.
Array einsum(const std::vector<Array>& operands, const Labels& out_labels);
ComplexArray einsum(const std::vector<ComplexArray>& operands, const Labels& out_labels);

enum class Op { add, subtract, multiply, divide };

/// out[out_labels] = a op b element-wise, matched by label; an operand lacking a label is
/// broadcast along it. Every label of a and b must be in out_labels (repeated labels in
/// an operand read its diagonal).
Array elementwise(Op op, const Array& a, const Array& b, const Labels& out_labels);
ComplexArray elementwise(Op op, const ComplexArray& a, const ComplexArray& b, const Labels& out_labels);

/// alpha * a.
Array scaled(const Array& a, double alpha);
ComplexArray scaled(const ComplexArray& a, Complex alpha);
/// |a| element-wise (the modulus, in the real part, of a complex array): with einsum and
/// elementwise(add) it gives the magnitude of the terms a computation sums, which scales the
/// tolerance of a comparison.
Array absolute(const Array& a);
ComplexArray absolute(const ComplexArray& a);
/// The complex conjugate element-wise.
ComplexArray conjugated(const ComplexArray& a);
/// A real array as a complex one (imaginary parts 0).
ComplexArray complexified(const Array& a);

/// The same data under other labels: `relabelled(c, "j,i")` is the operand `c("j,i")`.
Array relabelled(const Array& a, std::string_view labels);
ComplexArray relabelled(const ComplexArray& a, std::string_view labels);

/// The same data with the modes reordered to `labels` (a permutation of a.labels, unique).
Array permuted(const Array& a, const Labels& labels);
ComplexArray permuted(const ComplexArray& a, const Labels& labels);

/// f applied to every element.
template <class V, class F>
BasicArray<V> mapped(BasicArray<V> a, F f) {
  for (V& v : a.values) v = static_cast<V>(f(v));
  return a;
}

/// A sparse map: for each tuple of source indices, the allowed tuples of target indices.
struct SparsePattern {
  Labels from;
  Labels to;
  std::map<std::vector<std::size_t>, std::set<std::vector<std::size_t>>> allowed;
};

/// Zeroes the elements of `a` the pattern excludes: those whose (from) indices have an entry
/// and whose (to) indices are not allowed by it, and those whose (from) indices have no entry.
/// Both label lists must be labels of `a`.
Array masked(const Array& a, const SparsePattern& pattern);
ComplexArray masked(const ComplexArray& a, const SparsePattern& pattern);

/// Compares `got` element-wise with `expected`: |got - expected| <= atol + rtol * (|expected| +
/// |magnitude|), where `magnitude` is the same computation on absolute values (the size of the
/// terms summed); for complex values |.| is the modulus. Returns "" when every element passes,
/// else a description of the failures.
std::string compare(const std::vector<double>& got, const Array& expected, const Array& magnitude, double rtol,
                    double atol);
std::string compare(const std::vector<Complex>& got, const ComplexArray& expected, const ComplexArray& magnitude,
                    double rtol, double atol);

/// The values of a tenex tensor's element type in the reference's type: double for float
/// and double, std::complex<double> for the complex types.
template <class T>
using ValueOf =
    std::conditional_t<std::is_same_v<T, std::complex<float>> || std::is_same_v<T, Complex>, Complex, double>;

/// The elements of a vector widened to the reference's value type.
template <class T>
std::vector<ValueOf<T>> widened(const std::vector<T>& values) {
  std::vector<ValueOf<T>> out;
  out.reserve(values.size());
  for (const T& v : values) out.push_back(static_cast<ValueOf<T>>(v));
  return out;
}

/// The elements and shape of a tenex tensor (any type with to_vector() and shape().extents())
/// as a labelled reference array (a ComplexArray for a complex tensor).
template <class TensorLike>
auto to_array(const TensorLike& t, std::string_view labels) {
  return make_array(labels, Extents(t.shape().extents().begin(), t.shape().extents().end()), widened(t.to_vector()));
}

/// Deterministic pseudo-random numbers (splitmix64): the same on every platform and compiler.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  std::uint64_t next();
  /// Uniform in [0, n).
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  /// Uniform in [lo, hi].
  int between(int lo, int hi) { return lo + static_cast<int>(below(static_cast<std::size_t>(hi - lo + 1))); }
  /// Uniform in [-1, 1).
  double uniform();
  /// Both parts uniform in [-1, 1).
  Complex uniform_complex() {
    const double re = uniform();
    return {re, uniform()};
  }
  bool chance(double p) { return (next() >> 11) * (1.0 / 9007199254740992.0) < p; }

 private:
  std::uint64_t state_;
};

}  // namespace tenex_test::reference
