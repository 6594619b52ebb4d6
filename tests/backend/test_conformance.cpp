// Conformance (ggml's test-backend-ops idea): every op kind of TENEX_FOR_EACH_OP, on every
// backend this build has and this machine can run, in float, double, complex<float> and
// complex<double>, driven through the public DSL and compared with the naive reference
// (support/reference.hpp) or, for the decompositions, with their defining identities
// evaluated by plain loops in double or complex<double> (L L^H = A, A V = V diag(w),
// A V = B V diag(w), Q R = A, U diag(S) Vt = A; ^H is the transpose for real matrices).
// A backend without complex sets (CUDA) leaves them to the CPU: the complex suite asks for
// each backend all the same, and its results are the CPU's.
//
// Each statement runs with TENEX_DUMP_GRAPH set, and the optimized graph it ran must hold
// the kind under test; every kind named in any dumped graph is recorded, and at the end of
// each backend the kinds seen must be the whole op table. The kinds are driven from the
// table: a new kind without a Conformance case does not compile.
//
// tests/dist compiles this file a second time with TENEX_CONFORMANCE_DISTRIBUTED
// (tenex_dist_conformance, run under mpirun on 1 to 4 ranks): the same cases on
// BackendKind::distributed, with every operand and target a DistributedTensor (CaseTensor),
// each rank checking the whole result; the kinds that backend refuses (dist_refused_kinds)
// are checked to be refused instead.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

#include <tenex/config.hpp>
#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#if TENEX_CONFORMANCE_DISTRIBUTED
#include <mpi.h>

#include <optional>
#endif

#include "support/dumped_graphs.hpp"
#include "support/environment_scope.hpp"

#include "support/reference.hpp"
#include "support/scalars.hpp"

namespace {

namespace ref = tenex_test::reference;
using ref::Complex;
using tenex::BackendKind;
using tenex::Shape;
using tenex::Tensor;
using tenex_test::ComplexScalars;
using tenex_test::Scalars;

#define TENEX_TEST_KIND_NAME(name, arity, Params) #name,
const std::vector<std::string> table_names = {TENEX_FOR_EACH_OP(TENEX_TEST_KIND_NAME)};
#undef TENEX_TEST_KIND_NAME

// ---- the tensors the cases make ----------------------------------------------------------

#if TENEX_CONFORMANCE_DISTRIBUTED
// The same cases under mpirun (tests/dist, tenex_dist_conformance): every operand and target
// is a DistributedTensor on the grid the test case makes, every rank runs every statement,
// and every rank checks the whole result (gathered to every rank) against the reference.
using tenex::dist::DistributedTensor;

/// The Context of the grid the cases run on (set by the test case while it lives).
tenex::dist::Context* current_grid = nullptr;

/// A CaseTensor's reading of itself: its elements widened, or the error reading it raised.
struct Reading {
  bool has_value = false;
  std::vector<Complex> values;
  std::string error;
  bool operator==(const Reading&) const = default;
};

/// Every CaseTensor alive, in the order they were made (the same on every rank): what a
/// refused statement must leave as it was.
class Tracked {
 public:
  virtual Reading read() const = 0;

 protected:
  Tracked() { live().push_back(this); }
  ~Tracked() { live().erase(std::find(live().begin(), live().end(), this)); }

 public:
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  static std::vector<const Tracked*>& live() {
    static std::vector<const Tracked*> tensors;
    return tensors;
  }
};

/// A DistributedTensor that reads like a Tensor: shape(), at() and to_vector() read the
/// whole tensor, gathered to every rank once after each use in a statement (collective:
/// every rank reads the same tensors in the same order, as the cases do).
template <class T>
class CaseTensor : public Tracked {
 public:
  using value_type = T;
  /// No value yet: a target.
  CaseTensor() : tensor_(*current_grid) {}
  /// The values of `whole`, spread over the grid.
  CaseTensor(const Tensor<T>& whole)  // NOLINT(google-explicit-constructor): as a Tensor's copy
      : tensor_(DistributedTensor<T>::from_replicated(*current_grid, whole)), whole_(whole), used_(true) {}
  CaseTensor(CaseTensor&& other) noexcept
      : tensor_(std::move(other.tensor_)), whole_(std::move(other.whole_)), used_(other.used_) {}

  tenex::Indexed<Tensor<T>> operator()(std::string_view labels) {
    whole_.reset();
    used_ = true;
    return tensor_(labels);
  }
  const Shape& shape() const { return whole().shape(); }
  std::vector<T> to_vector() const { return whole().to_vector(); }
  template <class... I>
  T at(I... index) const {
    return whole().at(index...);
  }

  Reading read() const override {
    Reading r;
    // Not gather_all(): on a DistributedTensor never assigned it dereferences a null
    // storage (a crash, not a tenex::Error).
    if (!used_) {
      r.error = "no value yet";
      return r;
    }
    try {
      const Tensor<T> all = tensor_.gather_all();
      for (const T& v : all.to_vector()) r.values.push_back(Complex(v));
      r.has_value = true;
    } catch (const tenex::Error& e) {
      r.error = e.what();
    }
    return r;
  }

 private:
  const Tensor<T>& whole() const {
    if (!whole_) whole_ = tensor_.gather_all();
    return *whole_;
  }
  DistributedTensor<T> tensor_;
  mutable std::optional<Tensor<T>> whole_;
  bool used_ = false;  // made from values or used in a statement
};
#else
/// The tensors of the cases: plain Tensors on one process.
template <class T>
using CaseTensor = Tensor<T>;
#endif

// ---- data --------------------------------------------------------------------------------

/// The real type of T's values: the element type of eigenvalues and singular values.
template <class T>
using Real = tenex::real_type_t<T>;

/// Values uniform in [lo, hi]; for a complex T both parts are.
template <class T>
Tensor<T> random_values(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  ref::Random rng(seed);
  std::vector<T> values(shape.size());
  for (T& v : values) {
    const double re = lo + (hi - lo) * (rng.uniform() + 1.0) / 2.0;
    if constexpr (tenex::is_complex_v<T>) {
      v = T(static_cast<Real<T>>(re), static_cast<Real<T>>(lo + (hi - lo) * (rng.uniform() + 1.0) / 2.0));
    } else {
      v = static_cast<T>(re);
    }
  }
  return Tensor<T>(shape, std::move(values));
}

/// The same values as an operand of the backend under test (see CaseTensor).
template <class T>
CaseTensor<T> random_tensor(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_values<T>(shape, seed, lo, hi);
}

template <class X>
auto array(const X& t, std::string_view labels) {
  return ref::to_array(t, labels);
}

ref::Labels labels(std::string_view text) { return ref::parse_labels(text); }

template <class T>
constexpr double eps() {
  return static_cast<double>(std::numeric_limits<Real<T>>::epsilon());
}

/// "" when `got` has the extents of `expected` and its values within rtol = atol = 64 eps(T)
/// of it, relative to `magnitude` (the same computation on absolute values).
template <class X, class V>
std::string mismatch(const X& got, const ref::BasicArray<V>& expected, const ref::BasicArray<V>& magnitude) {
  using T = typename X::value_type;
  const ref::Extents extents(got.shape().extents().begin(), got.shape().extents().end());
  if (extents != expected.extents) {
    return "shape " + ref::format_extents(extents) + ", expected " + ref::format_extents(expected.extents);
  }
  const auto values = got.to_vector();
  return ref::compare(ref::widened(values), expected, magnitude, 64 * eps<T>(), 64 * eps<T>());
}

#define CHECK_MATCHES(got, expected, magnitude)                       \
  do {                                                                \
    const std::string mismatch_ = mismatch(got, expected, magnitude); \
    INFO(#got " vs " #expected ": ", mismatch_);                      \
    CHECK(mismatch_.empty());                                         \
  } while (false)

/// Same values exactly (copies, permutations, slices, chips: no arithmetic).
template <class X, class V>
void check_exact(const X& got, const ref::BasicArray<V>& expected) {
  REQUIRE(ref::Extents(got.shape().extents().begin(), got.shape().extents().end()) == expected.extents);
  const auto values = got.to_vector();
  REQUIRE(values.size() == expected.values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    CAPTURE(i);
    CHECK(static_cast<V>(values[i]) == expected.values[i]);
  }
}

// ---- plain dense matrices in double or complex<double>: the oracle side of the identities ----

template <class S>
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<S> v;
  Matrix() = default;
  Matrix(std::size_t r, std::size_t c) : rows(r), cols(c), v(r * c, S(0)) {}
  S& operator()(std::size_t i, std::size_t j) { return v[i * cols + j]; }
  S operator()(std::size_t i, std::size_t j) const { return v[i * cols + j]; }
};
using Dense = Matrix<double>;

/// A rank-2 tensor as a matrix of double (real T) or complex<double>.
template <class X, class S = ref::ValueOf<typename X::value_type>>
Matrix<S> dense(const X& t) {
  REQUIRE(t.shape().rank() == 2);
  Matrix<S> d(t.shape().extent(0), t.shape().extent(1));
  for (std::size_t i = 0; i < d.rows; ++i) {
    for (std::size_t j = 0; j < d.cols; ++j) d(i, j) = static_cast<S>(t.at(i, j));
  }
  return d;
}

/// A rank-1 tensor of real values (eigenvalues, singular values) as doubles; held in a complex
/// tensor, their imaginary parts must be 0.
template <class X>
std::vector<double> dense_vector(const X& t) {
  using R = typename X::value_type;
  REQUIRE(t.shape().rank() == 1);
  std::vector<double> out(t.shape().extent(0));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if constexpr (tenex::is_complex_v<R>) {
      CHECK(t.at(i).imag() == 0);
      out[i] = static_cast<double>(t.at(i).real());
    } else {
      out[i] = static_cast<double>(t.at(i));
    }
  }
  return out;
}

/// The object an expression over it writes (in unevaluated operands only): the tensor types
/// that hold the eigenvalues and singular values of a Tensor<T>'s decompositions.
template <class O>
O object_of(const tenex::Expression<O>&);
template <class T>
using EigenValuesTensor = CaseTensor<typename decltype(object_of(
    std::get<1>(tenex::eigen_solve(std::declval<tenex::Indexed<Tensor<T>>>()))))::value_type>;
template <class T>
using SingularValuesTensor = CaseTensor<typename decltype(object_of(
    std::get<1>(tenex::svd(std::declval<tenex::Indexed<Tensor<T>>>()))))::value_type>;

template <class T, class S>
CaseTensor<T> tensor(const Matrix<S>& d) {
  std::vector<T> values(d.v.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(d.v[i]);
  return Tensor<T>(Shape{d.rows, d.cols}, std::move(values));
}

template <class S>
Matrix<S> product(const Matrix<S>& a, const Matrix<S>& b) {
  REQUIRE(a.cols == b.rows);
  Matrix<S> c(a.rows, b.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t k = 0; k < a.cols; ++k) {
      for (std::size_t j = 0; j < b.cols; ++j) c(i, j) += a(i, k) * b(k, j);
    }
  }
  return c;
}

double conjugate(double x) { return x; }
Complex conjugate(Complex x) { return std::conj(x); }

/// The conjugate transpose (the transpose of a real matrix).
template <class S>
Matrix<S> adjoint(const Matrix<S>& a) {
  Matrix<S> t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) t(j, i) = conjugate(a(i, j));
  }
  return t;
}

/// The transpose (no conjugation), and the conjugate element by element.
template <class S>
Matrix<S> transpose(const Matrix<S>& a) {
  Matrix<S> t(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  }
  return t;
}
template <class S>
Matrix<S> conjugated(Matrix<S> a) {
  for (S& x : a.v) x = conjugate(x);
  return a;
}

Dense identity(std::size_t n) {
  Dense d(n, n);
  for (std::size_t i = 0; i < n; ++i) d(i, i) = 1.0;
  return d;
}

/// a with column j scaled by w[j] (a diag(w)).
template <class S>
Matrix<S> scale_columns(Matrix<S> a, const std::vector<double>& w) {
  REQUIRE(w.size() == a.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) a(i, j) *= w[j];
  }
  return a;
}

template <class S>
double norm(const Matrix<S>& a) {
  double s = 0;
  for (S x : a.v) s += std::norm(x);
  return std::sqrt(s);
}

template <class S1, class S2>
double max_difference(const Matrix<S1>& a, const Matrix<S2>& b) {
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.cols == b.cols);
  double m = 0;
  for (std::size_t i = 0; i < a.v.size(); ++i) m = std::max(m, std::abs(Complex(a.v[i]) - Complex(b.v[i])));
  return m;
}

/// The bound of a backward-stable n x n computation on a matrix of norm `scale`.
template <class T>
double residual_bound(std::size_t n, double scale) {
  return 100.0 * static_cast<double>(n) * eps<T>() * std::max(scale, 1.0);
}

#define CHECK_IDENTITY(lhs, rhs, bound)                                          \
  do {                                                                           \
    const double difference_ = max_difference(lhs, rhs);                         \
    INFO(#lhs " = " #rhs ": max difference ", difference_, ", bound ", (bound)); \
    CHECK(difference_ <= (bound));                                               \
  } while (false)

/// `s` made exactly Hermitian (symmetric): its lower triangle the adjoint of its upper one
/// and a real diagonal, as LAPACK's Hermitian routines require of their input.
template <class S>
Matrix<S> hermitian_part(Matrix<S> s) {
  for (std::size_t i = 0; i < s.rows; ++i) {
    s(i, i) = S(std::real(s(i, i)));
    for (std::size_t j = 0; j < i; ++j) s(i, j) = conjugate(s(j, i));
  }
  return s;
}

/// A random Hermitian (real: symmetric) matrix, and a positive definite one (M M^H + n I).
template <class T>
CaseTensor<T> symmetric(std::size_t n, std::uint64_t seed) {
  const auto m = dense(random_values<T>(Shape{n, n}, seed));
  auto s = m;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) s(i, j) = m(i, j) + conjugate(m(j, i));
  }
  return tensor<T>(hermitian_part(s));
}

template <class T>
CaseTensor<T> positive_definite(std::size_t n, std::uint64_t seed) {
  const auto m = dense(random_values<T>(Shape{n, n}, seed));
  auto s = product(m, adjoint(m));
  for (std::size_t i = 0; i < n; ++i) s(i, i) += static_cast<double>(n);
  return tensor<T>(hermitian_part(s));
}

// ---- the dumped graphs ------------------------------------------------------------------

using tenex_test::dumped_graphs;

/// The kinds of the nodes in DOT text: each node's label starts with its kind.
std::set<std::string> kinds_in(const std::string& dot) {
  std::set<std::string> kinds;
  const std::string needle = "label=\"";
  for (std::size_t at = dot.find(needle); at != std::string::npos; at = dot.find(needle, at + 1)) {
    std::size_t end = at + needle.size();
    while (end < dot.size() && (std::islower(static_cast<unsigned char>(dot[end])) || dot[end] == '_')) ++end;
    const std::string word = dot.substr(at + needle.size(), end - at - needle.size());
    if (std::find(table_names.begin(), table_names.end(), word) != table_names.end()) kinds.insert(word);
  }
  return kinds;
}

/// Thrown by Context::run after a statement the backend refused, as it must: the rest of
/// that case reads results the statement could not make.
struct Refused {};

/// What one backend's run has seen.
struct Context {
  std::string backend;
  std::set<std::string> seen;  // kinds found in the graphs evaluated so far
  std::string refused_kind;    // when set, the backend must refuse the first statement run

  /// Runs `statement`, which must evaluate at least one set; every kind of `expected` must
  /// be in one of the graphs it ran. Returns the graphs. While `refused_kind` is set, the
  /// backend must refuse the statement instead (check_refused), and this throws Refused.
  std::vector<std::string> run(const std::vector<std::string>& expected, const std::function<void()>& statement) {
#if TENEX_CONFORMANCE_DISTRIBUTED
    std::vector<Reading> before;
    if (!refused_kind.empty()) {
      for (const Tracked* t : Tracked::live()) before.push_back(t->read());
    }
#endif
    const std::vector<std::string> graphs = dumped_graphs(statement);
#if TENEX_CONFORMANCE_DISTRIBUTED
    if (!refused_kind.empty()) check_refused(before);
#endif
    CHECK_MESSAGE(!graphs.empty(), "the statement evaluated no set");
    std::set<std::string> here;
    std::string all;
    for (const std::string& dot : graphs) {
      const std::set<std::string> k = kinds_in(dot);
      here.insert(k.begin(), k.end());
      all += dot;
    }
    for (const std::string& kind : expected) CHECK_MESSAGE(here.count(kind) == 1, "no ", kind, " node in:\n", all);
    seen.insert(here.begin(), here.end());
    return graphs;
  }

#if TENEX_CONFORMANCE_DISTRIBUTED
  /// After a statement the backend must refuse with a tenex::Error naming `refused_kind`:
  /// each tensor of the case reads as that error (a target of the statement, on every rank)
  /// or as it read `before` the statement. Throws Refused when the statement was refused.
  void check_refused(const std::vector<Reading>& before) const {
    std::vector<Reading> after;
    std::size_t refusals = 0;
    for (std::size_t n = 0; n < before.size(); ++n) {
      after.push_back(Tracked::live()[n]->read());
      if (!after[n].has_value && after[n].error != before[n].error) ++refusals;
    }
    CHECK_MESSAGE(refusals > 0, refused_kind, " was not refused on ", backend,
                  ": it runs now, take it out of dist_refused_kinds");
    for (std::size_t n = 0; refusals > 0 && n < before.size(); ++n) {
      CAPTURE(n);
      if (!after[n].has_value && after[n].error != before[n].error) {
        INFO("error: ", after[n].error);
        CHECK(after[n].error.find(refused_kind) != std::string::npos);
      } else {
        CHECK_MESSAGE(after[n] == before[n], "a tensor the refused statement does not write changed");
      }
    }
    if (refusals > 0) throw Refused{};
  }
#endif
};

/// The default backend for the sets made in its lifetime; automatic again afterwards.
class BackendScope {
 public:
  explicit BackendScope(BackendKind kind) { tenex::set_default_backend(kind); }
  explicit BackendScope(const std::string& name) { tenex::set_default_backend(std::string_view(name)); }
  ~BackendScope() { tenex::set_default_backend(BackendKind::automatic); }
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;
};

// ---- one case per kind ---------------------------------------------------------------------

template <class P>
struct Conformance {
  static_assert(!std::is_same_v<P, P>,
                "test_conformance.cpp: a kind of TENEX_FOR_EACH_OP has no Conformance case; add one");
};

template <>
struct Conformance<tenex::InputParams> {
  template <class T>
  static void run(Context& ctx) {
    auto a = random_tensor<T>(Shape{3, 4}, 11);
    CaseTensor<T> b, c;
    ctx.run({"input", "output"}, [&] { b("i,j") = a("i,j"); });
    check_exact(b, array(a, "i,j"));
    // A value the set produces, read by a later statement of the same set.
    ctx.run({"input", "output"}, [&] {
      auto twice = 2.0 * a("i,j");
      b("i,j") = twice;
      c("i,j") = b("i,j") + a("i,j");
    });
    check_exact(b, ref::scaled(array(a, "i,j"), 2.0));
    const auto expected = ref::scaled(array(a, "i,j"), 3.0);
    CHECK_MATCHES(c, expected, ref::absolute(expected));
  }
};

template <>
struct Conformance<tenex::OutputParams> {
  template <class T>
  static void run(Context& ctx) {
    auto a = random_tensor<T>(Shape{2, 3, 4}, 12);
    CaseTensor<T> p;
    ctx.run({"output"}, [&] { p("k,i,j") = a("i,j,k"); });  // written in another order
    check_exact(p, ref::permuted(array(a, "i,j,k"), labels("k,i,j")));
    // Accumulation into an existing target.
    auto c = random_tensor<T>(Shape{2, 3, 4}, 13);
    const auto before = array(c, "i,j,k");
    ctx.run({"output"}, [&] { c("i,j,k") += a("i,j,k"); });
    const auto expected = ref::elementwise(ref::Op::add, before, array(a, "i,j,k"), labels("i,j,k"));
    CHECK_MATCHES(
        c, expected,
        ref::elementwise(ref::Op::add, ref::absolute(before), ref::absolute(array(a, "i,j,k")), labels("i,j,k")));
  }
};

template <>
struct Conformance<tenex::ReduceParams> {
  template <class T>
  static void run(Context& ctx) {
    auto a = random_tensor<T>(Shape{4, 4}, 21);
    auto x = random_tensor<T>(Shape{3, 5}, 22);
    auto m = random_tensor<T>(Shape{2, 3, 4}, 23);
    CaseTensor<T> d, t, s, p;
    ctx.run({"reduce"}, [&] { d("i") = a("i,i"); });  // diagonal
    check_exact(d, ref::einsum({array(a, "i,i")}, labels("i")));
    ctx.run({"reduce"}, [&] { t("") = a("i,i"); });  // trace
    const auto trace = ref::einsum({array(a, "i,i")}, labels(""));
    CHECK_MATCHES(t, trace, ref::einsum({ref::absolute(array(a, "i,i"))}, labels("")));
    ctx.run({"reduce"}, [&] { s("i") = x("i,j"); });  // sum over j
    const auto sum = ref::einsum({array(x, "i,j")}, labels("i"));
    CHECK_MATCHES(s, sum, ref::einsum({ref::absolute(array(x, "i,j"))}, labels("i")));
    ctx.run({"reduce"}, [&] { p("j,k,i") = m("i,j,k"); });  // permutation
    check_exact(p, ref::permuted(array(m, "i,j,k"), labels("j,k,i")));
    // A permuted value feeding an addition (the addition may write in the target's order).
    CaseTensor<T> r;
    ctx.run({"add"}, [&] { r("j,k,i") = m("i,j,k") + m("i,j,k"); });
    const auto twice = ref::scaled(ref::permuted(array(m, "i,j,k"), labels("j,k,i")), 2.0);
    CHECK_MATCHES(r, twice, ref::absolute(twice));
    // The diagonal of two modes of a rank-3 operand.
    auto c3 = random_tensor<T>(Shape{3, 3, 2}, 24);
    CaseTensor<T> q;
    ctx.run({"reduce"}, [&] { q("i,j") = c3("i,i,j"); });
    check_exact(q, ref::einsum({array(c3, "i,i,j")}, labels("i,j")));
  }
};

template <>
struct Conformance<tenex::ContractParams> {
  template <class T>
  static void run(Context& ctx) {
    auto a = random_tensor<T>(Shape{4, 5}, 31), b = random_tensor<T>(Shape{5, 3}, 32);
    CaseTensor<T> c;
    ctx.run({"contract"}, [&] { c("i,j") = a("i,k") * b("k,j"); });
    const auto ops = std::vector<ref::BasicArray<ref::ValueOf<T>>>{array(a, "i,k"), array(b, "k,j")};
    CHECK_MATCHES(c, ref::einsum(ops, labels("i,j")),
                  ref::einsum({ref::absolute(ops[0]), ref::absolute(ops[1])}, labels("i,j")));
    if constexpr (tenex::is_complex_v<T>) {
      // conj on either factor or both, read in place or permuted (the contraction still
      // holds it: the passes fold it into the product).
      auto bt = random_tensor<T>(Shape{3, 5}, 37);
      const auto abt = array(bt, "j,k");
      const auto mag = ref::einsum({ref::absolute(ops[0]), ref::absolute(ops[1])}, labels("i,j"));
      CaseTensor<T> c1, c2, c3, c4;
      ctx.run({"contract"}, [&] { c1("i,j") = tenex::conj(a("i,k")) * b("k,j"); });
      CHECK_MATCHES(c1, ref::einsum({ref::conjugated(ops[0]), ops[1]}, labels("i,j")), mag);
      ctx.run({"contract"}, [&] { c2("i,j") = a("i,k") * tenex::conj(b("k,j")); });
      CHECK_MATCHES(c2, ref::einsum({ops[0], ref::conjugated(ops[1])}, labels("i,j")), mag);
      ctx.run({"contract"}, [&] { c3("j,i") = tenex::conj(a("i,k")) * tenex::conj(bt("j,k")); });
      CHECK_MATCHES(c3, ref::einsum({ref::conjugated(ops[0]), ref::conjugated(abt)}, labels("j,i")),
                    ref::einsum({ref::absolute(ops[0]), ref::absolute(abt)}, labels("j,i")));
      ctx.run({"contract"}, [&] { c4("i,j") = tenex::conj(a("i,k") * bt("j,k")); });
      CHECK_MATCHES(c4, ref::conjugated(ref::einsum({ops[0], abt}, labels("i,j"))),
                    ref::einsum({ref::absolute(ops[0]), ref::absolute(abt)}, labels("i,j")));
    }
    // Two summed labels, a batch label, and a scalar result.
    auto x = random_tensor<T>(Shape{2, 3, 4}, 33), y = random_tensor<T>(Shape{4, 3, 5}, 34);
    CaseTensor<T> z;
    ctx.run({"contract"}, [&] { z("i,l") = x("i,j,k") * y("k,j,l"); });
    const auto zx = array(x, "i,j,k"), zy = array(y, "k,j,l");
    CHECK_MATCHES(z, ref::einsum({zx, zy}, labels("i,l")),
                  ref::einsum({ref::absolute(zx), ref::absolute(zy)}, labels("i,l")));
    auto u = random_tensor<T>(Shape{3, 2, 4}, 35), v = random_tensor<T>(Shape{3, 4, 5}, 36);
    CaseTensor<T> w;
    ctx.run({"contract"}, [&] { w("b,i,j") = u("b,i,k") * v("b,k,j"); });
    const auto wu = array(u, "b,i,k"), wv = array(v, "b,k,j");
    CHECK_MATCHES(w, ref::einsum({wu, wv}, labels("b,i,j")),
                  ref::einsum({ref::absolute(wu), ref::absolute(wv)}, labels("b,i,j")));
    CaseTensor<T> s;
    // A dot product is memory-bound: the fusion pass reduces a real one in one fused pass; a
    // complex one stays a contraction.
    ctx.run({tenex::is_complex_v<T> ? "contract" : "fused"}, [&] { s("") = a("i,k") * a("i,k"); });
    const auto aa = array(a, "i,k");
    CHECK_MATCHES(s, ref::einsum({aa, aa}, labels("")),
                  ref::einsum({ref::absolute(aa), ref::absolute(aa)}, labels("")));
  }
};

/// add, subtract and divide: broadcasting by label both ways, and a transposed operand.
template <class P, ref::Op op>
struct ElementwiseConformance {
  template <class T>
  static void run(Context& ctx) {
    const std::string kind(tenex::op_kind_name(tenex::op_kind_of<P>));
    // Divisors in [1, 2]: no cancellation to speak of.
    const double lo = op == ref::Op::divide ? 1.0 : -1.0;
    const double hi = op == ref::Op::divide ? 2.0 : 1.0;
    auto a = random_tensor<T>(Shape{3, 4}, 41);
    auto v = random_tensor<T>(Shape{4}, 42, lo, hi);
    auto e = random_tensor<T>(Shape{3}, 43);
    auto bt = random_tensor<T>(Shape{4, 3}, 44, lo, hi);
    auto apply = [](const auto& x, const auto& y) {
      if constexpr (op == ref::Op::add) {
        return x + y;
      } else if constexpr (op == ref::Op::subtract) {
        return x - y;
      } else {
        return x / y;
      }
    };
    auto magnitude = [&](const auto& x, const auto& y, const ref::Labels& out) {
      if constexpr (op == ref::Op::divide) {
        return ref::absolute(ref::elementwise(op, x, y, out));
      } else {
        return ref::elementwise(ref::Op::add, ref::absolute(x), ref::absolute(y), out);
      }
    };
    CaseTensor<T> c, d, f;
    ctx.run({kind}, [&] { c("i,j") = apply(a("i,j"), v("j")); });  // v broadcast along i
    const auto ca = array(a, "i,j"), cv = array(v, "j");
    CHECK_MATCHES(c, ref::elementwise(op, ca, cv, labels("i,j")), magnitude(ca, cv, labels("i,j")));
    ctx.run({kind}, [&] { d("i,a") = apply(e("i"), v("a")); });  // an outer difference
    const auto de = array(e, "i"), dv = array(v, "a");
    CHECK_MATCHES(d, ref::elementwise(op, de, dv, labels("i,a")), magnitude(de, dv, labels("i,a")));
    ctx.run({kind}, [&] { f("i,j") = apply(a("i,j"), bt("j,i")); });  // matched by label
    const auto fb = array(bt, "j,i");
    CHECK_MATCHES(f, ref::elementwise(op, ca, fb, labels("i,j")), magnitude(ca, fb, labels("i,j")));
  }
};
template <>
struct Conformance<tenex::AddParams> : ElementwiseConformance<tenex::AddParams, ref::Op::add> {};
template <>
struct Conformance<tenex::SubtractParams> : ElementwiseConformance<tenex::SubtractParams, ref::Op::subtract> {};
template <>
struct Conformance<tenex::DivideParams> : ElementwiseConformance<tenex::DivideParams, ref::Op::divide> {};

template <>
struct Conformance<tenex::ScaleParams> {
  template <class T>
  static void run(Context& ctx) {
    auto a = random_tensor<T>(Shape{3, 5}, 51);
    CaseTensor<T> c, n;
    const auto graphs = ctx.run({"scale"}, [&] { c("i,j") = 2.5 * a("i,j"); });
    REQUIRE(graphs.size() == 1);
    CHECK_MESSAGE(graphs[0].find("scale alpha=2.5") != std::string::npos, graphs[0]);
    const auto expected = ref::scaled(array(a, "i,j"), 2.5);
    CHECK_MATCHES(c, expected, ref::absolute(expected));
    // Scaled and transposed: the fusion pass makes a real one one fused pass (scale and
    // permutation); a complex one stays a permutation and a scale.
    ctx.run({tenex::is_complex_v<T> ? "scale" : "fused"}, [&] { n("j,i") = -a("i,j"); });
    check_exact(n, ref::scaled(ref::permuted(array(a, "i,j"), labels("j,i")), -1.0));
    if constexpr (tenex::is_complex_v<T>) {  // a complex factor on either side, and a divisor
      CaseTensor<T> l, r, q;
      ctx.run({"scale"}, [&] { l("i,j") = Complex(0.5, -1.5) * a("i,j"); });
      ctx.run({"scale"}, [&] { r("i,j") = a("i,j") * Complex(0, 1); });
      ctx.run({"scale"}, [&] { q("i,j") = a("i,j") / Complex(2, 1); });
      for (const auto& [got, factor] : {std::pair<const CaseTensor<T>*, Complex>{&l, Complex(0.5, -1.5)},
                                        {&r, Complex(0, 1)},
                                        {&q, 1.0 / Complex(2, 1)}}) {
        const auto want = ref::scaled(array(a, "i,j"), factor);
        CHECK_MATCHES(*got, want, ref::absolute(want));
      }
    }
  }
};

template <>
struct Conformance<tenex::CholeskyParams> {
  template <class T>
  static void run(Context& ctx) {
    const std::size_t n = 5;
    auto a = positive_definite<T>(n, 61);
    const auto ad = dense(a);
    CaseTensor<T> l, lt;
    ctx.run({"cholesky"}, [&] { l("i,j") = tenex::cholesky(a("i,j")); });
    const auto ld = dense(l);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) CHECK(ld(i, j) == 0.0);  // lower triangular
    }
    CHECK_IDENTITY(product(ld, adjoint(ld)), ad, residual_bound<T>(n, norm(ad)));
    // The factor stored transposed: Lt = L^T, upper triangular, Lt^T conj(Lt) = A.
    ctx.run({"cholesky"}, [&] { lt("j,i") = tenex::cholesky(a("i,j")); });
    const auto ltd = dense(lt);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < i; ++j) CHECK(ltd(i, j) == 0.0);
    }
    CHECK_IDENTITY(product(transpose(ltd), conjugated(ltd)), ad, residual_bound<T>(n, norm(ad)));
  }
};

template <class T>
void check_ascending(const std::vector<double>& w) {
  for (std::size_t i = 1; i < w.size(); ++i) CHECK(w[i - 1] <= w[i]);
}

template <>
struct Conformance<tenex::EigenSolveParams> {
  template <class T>
  static void run(Context& ctx) {
    const std::size_t n = 5;
    auto a = symmetric<T>(n, 71);
    const auto ad = dense(a);
    CaseTensor<T> v;
    EigenValuesTensor<T> w;
    ctx.run({"eigen_solve", "factor"}, [&] { std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j")); });
    const auto vd = dense(v);
    const std::vector<double> wd = dense_vector(w);
    check_ascending<T>(wd);
    CHECK_IDENTITY(product(ad, vd), scale_columns(vd, wd), residual_bound<T>(n, norm(ad)));
    CHECK_IDENTITY(product(adjoint(vd), vd), identity(n), residual_bound<T>(n, 1.0));

    // The generalized problem a v = w b v, b positive definite.
    auto b = positive_definite<T>(n, 72);
    const auto bd = dense(b);
    CaseTensor<T> gv;
    EigenValuesTensor<T> gw;
    ctx.run({"eigen_solve", "factor"}, [&] {
      auto [vectors, values] = tenex::eigen_solve(a("i,j"), b("i,j"));
      gv("i,j") = vectors;
      gw("j") = values;
    });
    const auto gvd = dense(gv);
    const std::vector<double> gwd = dense_vector(gw);
    check_ascending<T>(gwd);
    CHECK_IDENTITY(product(ad, gvd), scale_columns(product(bd, gvd), gwd),
                   residual_bound<T>(n, norm(ad) + norm(bd)) * std::max(1.0, norm(gvd)));
  }
};

template <>
struct Conformance<tenex::QrParams> {
  template <class T>
  static void run(Context& ctx) {
    for (const auto& [m, n] : {std::pair<std::size_t, std::size_t>{6, 4}, {3, 5}}) {
      CAPTURE(m);
      CAPTURE(n);
      const std::size_t k = std::min(m, n);
      auto a = random_tensor<T>(Shape{m, n}, 80 + m);
      const auto ad = dense(a);
      CaseTensor<T> q, r;
      ctx.run({"qr", "factor"}, [&] { tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a("i,j")); });
      REQUIRE(q.shape() == Shape{m, k});
      REQUIRE(r.shape() == Shape{k, n});
      const auto qd = dense(q), rd = dense(r);
      for (std::size_t i = 0; i < k; ++i) {
        for (std::size_t j = 0; j < i; ++j) CHECK(rd(i, j) == 0.0);  // upper triangular
      }
      CHECK_IDENTITY(product(qd, rd), ad, residual_bound<T>(std::max(m, n), norm(ad)));
      CHECK_IDENTITY(product(adjoint(qd), qd), identity(k), residual_bound<T>(m, 1.0));
    }
  }
};

template <>
struct Conformance<tenex::SvdParams> {
  template <class T>
  static void run(Context& ctx) {
    for (const auto& [m, n] : {std::pair<std::size_t, std::size_t>{4, 6}, {5, 3}}) {
      CAPTURE(m);
      CAPTURE(n);
      const std::size_t k = std::min(m, n);
      auto a = random_tensor<T>(Shape{m, n}, 90 + m);
      const auto ad = dense(a);
      CaseTensor<T> u, vt;
      SingularValuesTensor<T> s;
      ctx.run({"svd", "factor"}, [&] {
        auto [uf, sf, vtf] = tenex::svd(a("i,j"));
        u("i,k") = uf;
        s("k") = sf;
        vt("k,j") = vtf;
      });
      REQUIRE(u.shape() == Shape{m, k});
      REQUIRE(s.shape() == Shape{k});
      REQUIRE(vt.shape() == Shape{k, n});
      const auto ud = dense(u), vtd = dense(vt);
      const std::vector<double> sd = dense_vector(s);
      for (std::size_t i = 0; i < k; ++i) {
        CHECK(sd[i] >= 0.0);
        if (i > 0) CHECK(sd[i - 1] >= sd[i]);  // descending
      }
      CHECK_IDENTITY(product(scale_columns(ud, sd), vtd), ad, residual_bound<T>(std::max(m, n), norm(ad)));
      CHECK_IDENTITY(product(adjoint(ud), ud), identity(k), residual_bound<T>(m, 1.0));
      CHECK_IDENTITY(product(vtd, adjoint(vtd)), identity(k), residual_bound<T>(n, 1.0));
    }
  }
};

/// One factor alone: the eigenvalues without their vectors, checked by the invariants
/// sum w = trace a and sum w^2 = ||a||_F^2.
template <>
struct Conformance<tenex::FactorParams> {
  template <class T>
  static void run(Context& ctx) {
    const std::size_t n = 6;
    auto a = symmetric<T>(n, 101);
    const auto ad = dense(a);
    EigenValuesTensor<T> w;
    const auto graphs = ctx.run({"factor", "eigen_solve"}, [&] {
      auto [vectors, values] = tenex::eigen_solve(a("i,j"));
      w("j") = values;
    });
    // Complex: the decomposition's set, and the real values' own set that reads its real part.
    REQUIRE(graphs.size() == (tenex::is_complex_v<T> ? 2U : 1U));
    CHECK_MESSAGE(std::any_of(graphs.begin(), graphs.end(),
                              [](const std::string& g) { return g.find("factor 1 [values]") != std::string::npos; }),
                  graphs[0]);
    const std::vector<double> wd = dense_vector(w);
    REQUIRE(wd.size() == n);
    check_ascending<T>(wd);
    double trace = 0, sum = 0, squares = 0;
    for (std::size_t i = 0; i < n; ++i) {
      trace += std::real(ad(i, i));
      sum += wd[i];
      squares += wd[i] * wd[i];
    }
    CHECK(std::abs(sum - trace) <= residual_bound<T>(n, norm(ad)));
    CHECK(std::abs(squares - norm(ad) * norm(ad)) <= residual_bound<T>(n, norm(ad) * norm(ad)));
  }
};

template <>
struct Conformance<tenex::SliceParams> {
  template <class T>
  static void run(Context& ctx) {
    auto a = random_tensor<T>(Shape{4, 6}, 111);
    CaseTensor<T> s, t;
    const auto graphs = ctx.run({"slice"}, [&] { s("i,j") = tenex::slice(a("i,j"), {1, 2}, {3, 5}); });
    REQUIRE(graphs.size() == 1);
    CHECK_MESSAGE(graphs[0].find("slice lo={1, 2} hi={3, 5}") != std::string::npos, graphs[0]);
    REQUIRE(s.shape() == Shape{2, 3});
    for (std::size_t i = 0; i < 2; ++i) {
      for (std::size_t j = 0; j < 3; ++j) CHECK(s.at(i, j) == a.at(i + 1, j + 2));
    }
    // A rank-3 block, stored permuted.
    auto x = random_tensor<T>(Shape{3, 4, 5}, 112);
    ctx.run({"slice"}, [&] { t("k,i,j") = tenex::slice(x("i,j,k"), {0, 1, 2}, {2, 4, 5}); });
    REQUIRE(t.shape() == Shape{3, 2, 3});
    for (std::size_t i = 0; i < 2; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        for (std::size_t k = 0; k < 3; ++k) CHECK(t.at(k, i, j) == x.at(i, j + 1, k + 2));
      }
    }
  }
};

template <>
struct Conformance<tenex::ChipParams> {
  template <class T>
  static void run(Context& ctx) {
    auto a = random_tensor<T>(Shape{3, 4}, 121);
    CaseTensor<T> row, mid;
    const auto graphs = ctx.run({"chip"}, [&] { row("j") = tenex::chip(a("i,j"), "i", 1); });
    REQUIRE(graphs.size() == 1);
    CHECK_MESSAGE(graphs[0].find("chip mode=0 index=1") != std::string::npos, graphs[0]);
    REQUIRE(row.shape() == Shape{4});
    for (std::size_t j = 0; j < 4; ++j) CHECK(row.at(j) == a.at(1, j));
    auto x = random_tensor<T>(Shape{2, 3, 4}, 122);
    ctx.run({"chip"}, [&] { mid("k,i") = tenex::chip(x("i,j,k"), "j", 2); });
    REQUIRE(mid.shape() == Shape{4, 2});
    for (std::size_t i = 0; i < 2; ++i) {
      for (std::size_t k = 0; k < 4; ++k) CHECK(mid.at(k, i) == x.at(i, 2, k));
    }
  }
};

template <>
struct Conformance<tenex::PowParams> {
  template <class T>
  static void run(Context& ctx) {
    const std::size_t n = 4;
    auto a = random_tensor<T>(Shape{n, n}, 131);
    const auto ad = dense(a);
    CaseTensor<T> p3, p1, p0;
    const auto graphs = ctx.run({"pow"}, [&] { p3("i,j") = tenex::pow(a("i,j"), 3); });
    REQUIRE(graphs.size() == 1);
    CHECK_MESSAGE(graphs[0].find("pow n=3") != std::string::npos, graphs[0]);
    const auto cube = product(product(ad, ad), ad);
    CHECK_IDENTITY(dense(p3), cube, residual_bound<T>(n, norm(ad) * norm(ad) * norm(ad)));
    ctx.run({}, [&] { p1("i,j") = tenex::pow(a("i,j"), 1); });
    CHECK_IDENTITY(dense(p1), ad, residual_bound<T>(n, norm(ad)));
    ctx.run({}, [&] { p0("i,j") = tenex::pow(a("i,j"), 0); });
    CHECK_IDENTITY(dense(p0), identity(n), 0.0);
  }
};

template <>
struct Conformance<tenex::MaskParams> {
  template <class T>
  static void run(Context& ctx) {
    auto a = random_tensor<T>(Shape{3, 4}, 141), b = random_tensor<T>(Shape{4, 4}, 142);
    tenex::SparseMap map;
    map.insert({0}, {{0}, {1}});
    map.insert({1}, {{1}, {2}});
    map.insert({2}, {{3}});
    ref::SparsePattern pattern{{"i"}, {"j"}, {}};
    pattern.allowed[{0}] = {{0}, {1}};
    pattern.allowed[{1}] = {{1}, {2}};
    pattern.allowed[{2}] = {{3}};
    CaseTensor<T> c, d;
    ctx.run({"mask"}, [&] {
      auto x = a("i,j");
      x.set_sparse_map("i", "j", map);
      c("i,j") = x * 1.0;
    });
    REQUIRE(c.shape() == Shape{3, 4});
    std::size_t kept = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 4; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        if (map.allows({i}, {j})) {
          ++kept;
          CHECK(c.at(i, j) == a.at(i, j));
        } else {
          CHECK(c.at(i, j) == T(0));
        }
      }
    }
    CHECK(kept == map.pair_count());
    // On a product: the dense product with the excluded elements zeroed. Run dense and masked
    // (without the "sparse" pass, which folds the mask into a sparse product on backends
    // that evaluate maps sparsely; tests/sparse checks that path).
    struct DenseMasked {
      DenseMasked() { ::setenv("TENEX_PASSES", "cse,order,fold_scales,gemm_beta,collapse,fuse", 1); }
      ~DenseMasked() { ::unsetenv("TENEX_PASSES"); }
    } dense_masked;
    ctx.run({"mask", "contract"}, [&] {
      auto y = a("i,k") * b("k,j");
      y.set_sparse_map("i", "j", map);
      d("i,j") = y;
    });
    const auto ops = std::vector<ref::BasicArray<ref::ValueOf<T>>>{array(a, "i,k"), array(b, "k,j")};
    CHECK_MATCHES(d, ref::masked(ref::einsum(ops, labels("i,j")), pattern),
                  ref::einsum({ref::absolute(ops[0]), ref::absolute(ops[1])}, labels("i,j")));
  }
};

template <>
struct Conformance<tenex::FusedParams> {
  template <class T>
  static void run(Context& ctx) {
    if constexpr (tenex::is_complex_v<T>) {
      run_complex<T>(ctx);
    } else {
      run_real<T>(ctx);
    }
  }

  /// The functions defined for complex numbers (not those that compare, nor erf), their real
  /// parts, the reductions that do not compare, and regions of several nodes.
  template <class T>
  static void run_complex(Context& ctx) {
    using R = Real<T>;
    auto x = random_tensor<T>(Shape{3, 5}, 151), p = random_tensor<T>(Shape{3, 5}, 152, 0.5, 2.0);
    auto y = random_tensor<T>(Shape{5}, 153, 0.5, 2.0), z = random_tensor<T>(Shape{5, 3}, 154);
    const auto ax = array(x, "i,j"), ap = array(p, "i,j");
    using F = std::function<Complex(Complex)>;
    const std::vector<std::tuple<std::string, std::function<tenex::Unary<Tensor<T>>()>, const ref::ComplexArray*, F>>
        unary = {
            {"exp", [&] { return tenex::exp(x("i,j")); }, &ax, [](Complex v) { return std::exp(v); }},
            {"log", [&] { return tenex::log(p("i,j")); }, &ap, [](Complex v) { return std::log(v); }},
            {"sqrt", [&] { return tenex::sqrt(p("i,j")); }, &ap, [](Complex v) { return std::sqrt(v); }},
            {"square", [&] { return tenex::square(x("i,j")); }, &ax, [](Complex v) { return v * v; }},
            {"sin", [&] { return tenex::sin(x("i,j")); }, &ax, [](Complex v) { return std::sin(v); }},
            {"cos", [&] { return tenex::cos(x("i,j")); }, &ax, [](Complex v) { return std::cos(v); }},
            {"tanh", [&] { return tenex::tanh(x("i,j")); }, &ax, [](Complex v) { return std::tanh(v); }},
            {"conj", [&] { return tenex::conj(x("i,j")); }, &ax, [](Complex v) { return std::conj(v); }},
            {"reciprocal", [&] { return tenex::reciprocal(p("i,j")); }, &ap, [](Complex v) { return 1.0 / v; }},
            {"power", [&] { return tenex::power(p("i,j"), 1.5); }, &ap, [](Complex v) { return std::pow(v, 1.5); }},
            {"e + 3", [&] { return x("i,j") + 3.0; }, &ax, [](Complex v) { return v + 3.0; }},
            {"3 - e", [&] { return 3.0 - x("i,j"); }, &ax, [](Complex v) { return 3.0 - v; }},
            {"1 / e", [&] { return 1.0 / p("i,j"); }, &ap, [](Complex v) { return 1.0 / v; }},
            {"map", [&] { return tenex::map(x("i,j"), "cube", [](T v) { return v * v * v; }); }, &ax,
             [](Complex v) { return v * v * v; }},
        };
    for (const auto& [name, make, operand, f] : unary) {
      INFO("function ", name);
      CaseTensor<T> r;
      ctx.run({"fused"}, [&] { r("i,j") = make(); });
      const auto want = ref::mapped(*operand, f);
      CHECK_MATCHES(r, want, ref::absolute(want));
    }
    // The real values of complex elements, and a real value made complex again.
    CaseTensor<R> re, im, mod, ang;
    CaseTensor<T> back;
    ctx.run({}, [&] { re("i,j") = tenex::real(x("i,j")); });
    ctx.run({}, [&] { im("j,i") = tenex::imag(x("i,j")); });
    ctx.run({}, [&] { mod("i,j") = tenex::abs(x("i,j")); });
    ctx.run({}, [&] { ang("i,j") = tenex::arg(x("i,j")); });
    ctx.run({}, [&] { back("i,j") = tenex::cast<T>(tenex::abs(x("i,j"))) * x("i,j"); });
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 5; ++j) {
        const Complex v = x.at(i, j);
        CHECK(re.at(i, j) == static_cast<R>(v.real()));
        CHECK(im.at(j, i) == static_cast<R>(v.imag()));
        CHECK(std::abs(mod.at(i, j) - std::abs(v)) <= 64 * eps<T>() * std::abs(v));
        CHECK(std::abs(ang.at(i, j) - std::arg(v)) <= 64 * eps<T>() * 4);
        CHECK(std::abs(Complex(back.at(i, j)) - std::abs(v) * v) <= 64 * eps<T>() * std::norm(v));
      }
    }
    // Reductions by label: a sum, and the norm (real).
    CaseTensor<T> rs;
    CaseTensor<R> rn;
    ctx.run({}, [&] { rs("i") = tenex::sum(x("i,j"), "j"); });
    ctx.run({}, [&] { rn("") = tenex::norm2(x("i,j")); });
    CHECK_MATCHES(rs, ref::einsum({ax}, labels("i")), ref::einsum({ref::absolute(ax)}, labels("i")));
    double frob = 0;
    for (const Complex v : ax.values) frob += std::norm(v);
    CHECK(std::abs(double(rn.at()) - std::sqrt(frob)) <= 64 * eps<T>() * std::sqrt(frob));
    // Several element-wise nodes, a transposed conjugated operand and a broadcast.
    CaseTensor<T> chain;
    const auto graphs = ctx.run(
        {"fused"}, [&] { chain("i,j") = x("i,j") + Complex(0, 2) * tenex::conj(z("j,i")) - p("i,j") / y("j"); });
    REQUIRE(graphs.size() == 1);
    ref::ComplexArray echain = ax, mchain = ax;
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 5; ++j) {
        const Complex a = x.at(i, j), b = Complex(0, 2) * std::conj(Complex(z.at(j, i))),
                      c = Complex(p.at(i, j)) / Complex(y.at(j));
        echain.values[i * 5 + j] = a + b - c;
        mchain.values[i * 5 + j] = std::abs(a) + std::abs(b) + std::abs(c);
      }
    }
    CHECK_MATCHES(chain, echain, mchain);
    // A dot product over an element-wise operand with conj (folded into the contraction).
    auto t4 = random_tensor<T>(Shape{3, 4, 3, 4}, 155), v4 = random_tensor<T>(Shape{3, 4, 3, 4}, 156);
    CaseTensor<T> e;
    const auto mp2 =
        ctx.run({"contract"}, [&] { e("") = tenex::conj(t4("i,a,j,b")) * (2.0 * v4("i,a,j,b") - v4("i,b,j,a")); });
    REQUIRE(mp2.size() == 1);
    CHECK_MESSAGE(mp2[0].find("contract conj_a") != std::string::npos, mp2[0]);
    const auto at4 = array(t4, "i,a,j,b");
    const auto inner = ref::elementwise(ref::Op::subtract, ref::scaled(array(v4, "i,a,j,b"), 2.0), array(v4, "i,b,j,a"),
                                        labels("i,a,j,b"));
    const auto mag = ref::elementwise(ref::Op::add, ref::scaled(ref::absolute(array(v4, "i,a,j,b")), 2.0),
                                      ref::absolute(array(v4, "i,b,j,a")), labels("i,a,j,b"));
    CHECK_MATCHES(e, ref::einsum({ref::conjugated(at4), inner}, labels("")),
                  ref::einsum({ref::absolute(at4), mag}, labels("")));
  }

  template <class T>
  static void run_real(Context& ctx) {
    auto x = random_tensor<T>(Shape{3, 5}, 151), p = random_tensor<T>(Shape{3, 5}, 152, 0.5, 2.0);
    auto y = random_tensor<T>(Shape{5}, 153), z = random_tensor<T>(Shape{5, 3}, 154);
    const auto ax = array(x, "i,j"), ap = array(p, "i,j");
    // Relative to the value itself: every function here is well conditioned on its inputs.
    auto check = [&](const CaseTensor<T>& got, const ref::Array& expected) {
      CHECK_MATCHES(got, expected, ref::absolute(expected));
    };
    using F = std::function<double(double)>;
    const std::vector<std::tuple<std::string, std::function<tenex::Unary<Tensor<T>>()>, const ref::Array*, F>> unary = {
        {"exp", [&] { return tenex::exp(x("i,j")); }, &ax, [](double v) { return std::exp(v); }},
        {"log", [&] { return tenex::log(p("i,j")); }, &ap, [](double v) { return std::log(v); }},
        {"sqrt", [&] { return tenex::sqrt(p("i,j")); }, &ap, [](double v) { return std::sqrt(v); }},
        {"abs", [&] { return tenex::abs(x("i,j")); }, &ax, [](double v) { return std::abs(v); }},
        {"square", [&] { return tenex::square(x("i,j")); }, &ax, [](double v) { return v * v; }},
        {"sin", [&] { return tenex::sin(x("i,j")); }, &ax, [](double v) { return std::sin(v); }},
        {"cos", [&] { return tenex::cos(x("i,j")); }, &ax, [](double v) { return std::cos(v); }},
        {"tanh", [&] { return tenex::tanh(x("i,j")); }, &ax, [](double v) { return std::tanh(v); }},
        {"sign", [&] { return tenex::sign(x("i,j")); }, &ax, [](double v) { return double((0 < v) - (v < 0)); }},
        {"erf", [&] { return tenex::erf(x("i,j")); }, &ax, [](double v) { return std::erf(v); }},
        {"reciprocal", [&] { return tenex::reciprocal(p("i,j")); }, &ap, [](double v) { return 1 / v; }},
        {"power", [&] { return tenex::power(p("i,j"), 1.5); }, &ap, [](double v) { return std::pow(v, 1.5); }},
        {"clamp", [&] { return tenex::clamp(x("i,j"), -0.25, 0.5); }, &ax,
         [](double v) { return std::min(0.5, std::max(-0.25, v)); }},
        {"e + 3", [&] { return x("i,j") + 3.0; }, &ax, [](double v) { return v + 3; }},
        {"3 + e", [&] { return 3.0 + x("i,j"); }, &ax, [](double v) { return 3 + v; }},
        {"e - 3", [&] { return x("i,j") - 3.0; }, &ax, [](double v) { return v - 3; }},
        {"3 - e", [&] { return 3.0 - x("i,j"); }, &ax, [](double v) { return 3 - v; }},
        {"1 / e", [&] { return 1.0 / p("i,j"); }, &ap, [](double v) { return 1 / v; }},
        {"map", [&] { return tenex::map(x("i,j"), "cube", [](T v) { return v * v * v; }); }, &ax,
         [](double v) { return v * v * v; }},
    };
    for (const auto& [name, make, operand, f] : unary) {
      INFO("function ", name);
      CaseTensor<T> r;
      ctx.run({"fused"}, [&] { r("i,j") = make(); });
      check(r, ref::mapped(*operand, f));
    }
    // max and min broadcast by label.
    CaseTensor<T> mx, mn;
    ctx.run({"fused"}, [&] { mx("i,j") = tenex::max(x("i,j"), y("j")); });
    ctx.run({"fused"}, [&] { mn("j,i") = tenex::min(y("j"), x("i,j")); });
    ref::Array emx = ax, emn = ref::permuted(ax, labels("j,i"));
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 5; ++j) {
        const double xv = x.at(i, j), yv = y.at(j);
        emx.values[i * 5 + j] = std::max(xv, yv);
        emn.values[j * 3 + i] = std::min(xv, yv);
      }
    }
    check_exact(mx, emx);
    check_exact(mn, emn);
    // Reductions by label.
    CaseTensor<T> rs, rmax, rmin, rn;
    ctx.run({}, [&] { rs("i") = tenex::sum(x("i,j"), "j"); });
    ctx.run({"fused"}, [&] { rmax("i") = tenex::max_over(x("i,j"), "j"); });
    ctx.run({"fused"}, [&] { rmin("j") = tenex::min_over(x("i,j"), "i"); });
    ctx.run({"fused"}, [&] { rn("") = tenex::norm2(x("i,j")); });
    const auto esum = ref::einsum({ax}, labels("i"));
    CHECK_MATCHES(rs, esum, ref::einsum({ref::absolute(ax)}, labels("i")));
    double frob = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      double m = -1e300;
      for (std::size_t j = 0; j < 5; ++j) {
        m = std::max(m, double(x.at(i, j)));
        frob += double(x.at(i, j)) * double(x.at(i, j));
      }
      CHECK(rmax.at(i) == static_cast<T>(m));
    }
    for (std::size_t j = 0; j < 5; ++j) {
      double m = 1e300;
      for (std::size_t i = 0; i < 3; ++i) m = std::min(m, double(x.at(i, j)));
      CHECK(rmin.at(j) == static_cast<T>(m));
    }
    CHECK(std::abs(double(rn.at()) - std::sqrt(frob)) <= 64 * eps<T>() * std::sqrt(frob));
    // A region: several element-wise nodes, a transposed operand and a broadcast, one node.
    CaseTensor<T> chain;
    const auto graphs = ctx.run({"fused"}, [&] { chain("i,j") = x("i,j") + 2.0 * z("j,i") - p("i,j") / y("j"); });
    REQUIRE(graphs.size() == 1);
    CHECK_MESSAGE((kinds_in(graphs[0]) == std::set<std::string>{"input", "fused", "output"}), graphs[0]);
    ref::Array echain = ax, mchain = ax;
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 5; ++j) {
        const double a = x.at(i, j), b = 2.0 * double(z.at(j, i)), c = double(p.at(i, j)) / double(y.at(j));
        echain.values[i * 5 + j] = a + b - c;
        mchain.values[i * 5 + j] = std::abs(a) + std::abs(b) + std::abs(c);
      }
    }
    CHECK_MATCHES(chain, echain, mchain);
    // A dot product over an element-wise operand: one fused node reducing to a scalar.
    auto t4 = random_tensor<T>(Shape{3, 4, 3, 4}, 155), v4 = random_tensor<T>(Shape{3, 4, 3, 4}, 156);
    CaseTensor<T> e;
    const auto mp2 = ctx.run({"fused"}, [&] { e("") = t4("i,a,j,b") * (2.0 * v4("i,a,j,b") - v4("i,b,j,a")); });
    REQUIRE(mp2.size() == 1);
    CHECK_MESSAGE((kinds_in(mp2[0]) == std::set<std::string>{"input", "fused", "output"}), mp2[0]);
    const auto at4 = array(t4, "i,a,j,b");
    const auto inner = ref::elementwise(ref::Op::subtract, ref::scaled(array(v4, "i,a,j,b"), 2.0), array(v4, "i,b,j,a"),
                                        labels("i,a,j,b"));
    const auto mag = ref::elementwise(ref::Op::add, ref::scaled(ref::absolute(array(v4, "i,a,j,b")), 2.0),
                                      ref::absolute(array(v4, "i,b,j,a")), labels("i,a,j,b"));
    CHECK_MATCHES(e, ref::einsum({at4, inner}, labels("")), ref::einsum({ref::absolute(at4), mag}, labels("")));
  }
};

// Matrix functions: checked through their defining identities.

/// A random matrix made well conditioned: M + n I.
template <class T>
CaseTensor<T> shifted_random(std::size_t n, std::uint64_t seed) {
  auto m = dense(random_values<T>(Shape{n, n}, seed));
  for (std::size_t i = 0; i < n; ++i) m(i, i) += static_cast<double>(n);
  return tensor<T>(m);
}

template <>
struct Conformance<tenex::InverseParams> {
  template <class T>
  static void run(Context& ctx) {
    const std::size_t n = 5;
    auto a = shifted_random<T>(n, 141);
    const auto ad = dense(a);
    CaseTensor<T> ai;
    ctx.run({"inverse"}, [&] { ai("i,j") = tenex::inverse(a("i,j")); });
    const auto aid = dense(ai);
    CHECK_IDENTITY(product(ad, aid), identity(n), residual_bound<T>(n, norm(ad) * norm(aid)));
    CHECK_IDENTITY(product(aid, ad), identity(n), residual_bound<T>(n, norm(ad) * norm(aid)));
  }
};

template <>
struct Conformance<tenex::SolveParams> {
  template <class T>
  static void run(Context& ctx) {
    const std::size_t n = 5;
    auto a = shifted_random<T>(n, 151);     // general: LU
    auto s = positive_definite<T>(n, 152);  // symmetric positive definite: Cholesky
    auto b = random_tensor<T>(Shape{n}, 153);
    auto bm = random_tensor<T>(Shape{n, 3}, 154);
    const auto ad = dense(a), sd = dense(s), bmd = dense(bm);
    Matrix<ref::ValueOf<T>> bd(n, 1);
    for (std::size_t i = 0; i < n; ++i) bd(i, 0) = static_cast<ref::ValueOf<T>>(b.at(i));
    CaseTensor<T> x, xm;
    const auto graphs = ctx.run({"solve"}, [&] { x("j") = tenex::solve(a("i,j"), b("i")); });
    REQUIRE(graphs.size() == 1);
    CHECK_MESSAGE(graphs[0].find("solve mode=0") != std::string::npos, graphs[0]);
    Matrix<ref::ValueOf<T>> xd(n, 1);
    for (std::size_t i = 0; i < n; ++i) xd(i, 0) = static_cast<ref::ValueOf<T>>(x.at(i));
    CHECK_IDENTITY(product(ad, xd), bd, residual_bound<T>(n, norm(ad) * norm(xd)));
    ctx.run({"solve"}, [&] { xm("j,k") = tenex::solve(s("i,j"), bm("i,k")); });
    const auto xmd = dense(xm);
    CHECK_IDENTITY(product(sd, xmd), bmd, residual_bound<T>(n, norm(sd) * norm(xmd)));
  }
};

template <>
struct Conformance<tenex::SpdPowParams> {
  template <class T>
  static void run(Context& ctx) {
    const std::size_t n = 5;
    auto s = positive_definite<T>(n, 161);
    const auto sd = dense(s);
    CaseTensor<T> root, inverse_root;
    const auto graphs = ctx.run({"spd_pow"}, [&] { root("i,j") = tenex::pow(s("i,j"), 0.5); });
    REQUIRE(graphs.size() == 1);
    CHECK_MESSAGE(graphs[0].find("spd_pow p=0.5") != std::string::npos, graphs[0]);
    const auto rd = dense(root);
    CHECK_IDENTITY(product(rd, rd), sd, residual_bound<T>(n, norm(sd)));
    ctx.run({"spd_pow"}, [&] { inverse_root("i,j") = tenex::pow(s("i,j"), -0.5); });
    const auto ird = dense(inverse_root);
    CHECK_IDENTITY(product(product(ird, sd), ird), identity(n), residual_bound<T>(n, norm(sd) * norm(ird) * norm(ird)));
  }
};

std::string backend_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::automatic: return "automatic";
    case BackendKind::cpu: return "cpu";
    case BackendKind::cuda: return "cuda";
    case BackendKind::distributed: return "distributed";  // under mpirun: tenex_dist_conformance
  }
  return "unknown";
}

#if TENEX_CONFORMANCE_DISTRIBUTED
/// The kinds the distributed backend refuses (docs/distributed.md): a statement of each must
/// fail with a tenex::Error naming it, on every rank, leaving the other tensors as they were.
/// Take a kind out when the backend runs it; its case then runs like the others.
/// None today: mask, inverse, solve and spd_pow were the last (docs/distributed.md).
const std::set<std::string> dist_refused_kinds = {};
#endif

/// Whether `backend` must refuse the kind `name`.
bool refused([[maybe_unused]] const std::string& backend, [[maybe_unused]] const std::string& name) {
#if TENEX_CONFORMANCE_DISTRIBUTED
  return backend == "distributed" && dist_refused_kinds.count(name) == 1;
#else
  return false;
#endif
}

/// Every kind of the op table on `backend` (the default backend while it runs): its case, or
/// for a kind the backend refuses, the check that it refuses the case's first statement.
template <class T>
void run_every_kind(const std::string& backend, const std::string& description) {
  Context ctx{description, {}, {}};
  std::set<std::string> covered;
  {
    const BackendScope scope(backend);
    REQUIRE(tenex::default_backend_name() == backend);
#define TENEX_TEST_CONFORMANCE(name, arity, Params)                                      \
  {                                                                                      \
    INFO("kind " #name " on ", ctx.backend);                                             \
    if (refused(backend, #name)) {                                                       \
      ctx.refused_kind = #name;                                                          \
      CHECK_THROWS_AS(Conformance<tenex::Params>::template run<T>(ctx), const Refused&); \
      ctx.refused_kind.clear();                                                          \
    } else {                                                                             \
      Conformance<tenex::Params>::template run<T>(ctx);                                  \
    }                                                                                    \
    covered.insert(#name);                                                               \
  }
    TENEX_FOR_EACH_OP(TENEX_TEST_CONFORMANCE)
#undef TENEX_TEST_CONFORMANCE
  }
  CHECK(tenex::default_backend() == BackendKind::automatic);
  INFO("backend ", ctx.backend);
  const std::set<std::string> table(table_names.begin(), table_names.end());
  CHECK(covered == table);
  // Every kind of the op table the backend runs ran in some evaluated graph of it.
  std::string missing;
  for (const std::string& kind : table) {
    if (!ctx.seen.count(kind) && !refused(backend, kind)) missing += " " + kind;
  }
  CHECK_MESSAGE(missing.empty(), "kinds never seen in an evaluated graph:", missing);
}

template <class T>
std::string type_name() {
  return std::is_same_v<T, float>                 ? "float"
         : std::is_same_v<T, double>              ? "double"
         : std::is_same_v<T, std::complex<float>> ? "complex<float>"
                                                  : "complex<double>";
}

#if TENEX_CONFORMANCE_DISTRIBUTED
/// The grids for this many ranks, square and not, with blocks of 2 or 3: the cases' extents
/// (3, 4, 5, 6) leave partial edge blocks, and 3 ranks uneven shares (some ranks hold no
/// element of the smallest tensors).
std::vector<tenex::dist::ContextOptions> conformance_grids() {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  switch (ranks) {
    case 1: return {{1, 1, 2}};
    case 2: return {{1, 2, 2}, {2, 1, 3}};
    case 3: return {{3, 1, 2}, {1, 3, 2}};
    case 4: return {{2, 2, 2}, {1, 4, 3}};
    default: return {{0, 0, 2}};
  }
}
#endif

}  // namespace

#if TENEX_CONFORMANCE_DISTRIBUTED
TEST_CASE_TEMPLATE_DEFINE("conformance: every op kind on the distributed backend against the reference", T,
                          conformance) {
  const EnvironmentScope passes("TENEX_PASSES", "all");
  for (const auto& options : conformance_grids()) {
    tenex::dist::Context grid(MPI_COMM_WORLD, options);
    current_grid = &grid;
    const std::string description = backend_name(BackendKind::distributed) + " (" + std::to_string(grid.grid_rows()) +
                                    " x " + std::to_string(grid.grid_cols()) + " ranks, blocks of " +
                                    std::to_string(grid.block_size()) + ")";
    MESSAGE("conformance for ", type_name<T>(), " on: ", description);
    run_every_kind<T>("distributed", description);
    current_grid = nullptr;
  }
}
#else
TEST_CASE_TEMPLATE_DEFINE("conformance: every op kind on every backend against the reference", T, conformance) {
  // Every kind must occur in some graph, the passes' kinds (fused, ...) too: the passes run
  // whatever the suite runs under (the values are checked under every pass list elsewhere).
  const EnvironmentScope passes("TENEX_PASSES", "all");
  std::vector<std::string> backends = {"cpu"};
  std::string skipped;
  if (tenex::cuda_available()) {
    backends.emplace_back("cuda");
  } else {
    skipped = TENEX_HAS_CUDA ? " (cuda: built, but no device)" : " (cuda: not built)";
  }
  // A backend plugin under test (tests/consumer: examples/backend_plugin, found on
  // TENEX_PLUGIN_PATH): the suite fails when it cannot be chosen.
  if (const char* plugin = std::getenv("TENEX_CONFORMANCE_BACKEND"); plugin && *plugin) {
    REQUIRE_NOTHROW(tenex::set_default_backend(std::string_view(plugin)));
    tenex::set_default_backend(BackendKind::automatic);
    backends.emplace_back(plugin);
  }
  std::string ran;
  for (const std::string& b : backends) ran += (ran.empty() ? "" : ", ") + b;
  MESSAGE(
      "conformance for ", type_name<T>(), " on: ", ran, skipped,
      std::string(tenex::is_complex_v<T> && tenex::cuda_available() ? " (complex sets asking for cuda run on the cpu)"
                                                                    : ""));
  for (const std::string& backend : backends) run_every_kind<T>(backend, backend);
}
#endif
TEST_CASE_TEMPLATE_APPLY(conformance, tenex_test::AllScalars);

#if !TENEX_CONFORMANCE_DISTRIBUTED

// The CUDA backend has no complex kernels: a complex set that asks for it runs on the CPU and
// gets the CPU's result, bit for bit. Without a device, asking for it is the same error for a
// complex set as for a real one.
TEST_CASE_TEMPLATE_DEFINE("conformance: a complex set asking for the CUDA backend gets the CPU's result", T,
                          conformance_complex_fallback) {
  auto a = random_tensor<T>(Shape{6, 5}, 171), b = random_tensor<T>(Shape{5, 7}, 172);
  auto statements = [&](std::vector<Tensor<T>>& r) {
    r.resize(4);
    r[0]("i,j") = tenex::conj(a("i,k")) * b("k,j");
    r[1]("j,i") = a("i,k") * tenex::conj(b("k,j")) + Complex(0, 1) * a("i,k") * b("k,j");
    r[2]("i") = tenex::exp(a("i,k")) * tenex::conj(a("i,k"));
    r[3]("k,i") = a("i,k") / (2.0 + tenex::conj(a("i,k")));
    for (auto& t : r) t.wait();
  };
  std::vector<Tensor<T>> cpu_results;
  {
    const BackendScope scope(BackendKind::cpu);
    statements(cpu_results);
  }
  if (tenex::cuda_available()) {
    std::vector<Tensor<T>> cuda_results;
    {
      const BackendScope scope(BackendKind::cuda);
      statements(cuda_results);
    }
    for (std::size_t n = 0; n < cpu_results.size(); ++n) {
      CAPTURE(n);
      CHECK(cuda_results[n].to_vector() == cpu_results[n].to_vector());
    }
  } else {
    CHECK_THROWS_AS(tenex::set_default_backend(BackendKind::cuda), tenex::BackendError);
    Tensor<T> c;
    {
      const EnvironmentScope cuda("TENEX_BACKEND", "cuda");
      c("i,j") = tenex::conj(a("i,k")) * b("k,j");
    }
    CHECK_THROWS_WITH_AS(c.wait(), doctest::Contains("asks for the CUDA backend"), tenex::BackendError);
    Tensor<Real<T>> real_a(Shape{2}), real_c;
    {
      const EnvironmentScope cuda("TENEX_BACKEND", "cuda");
      real_c("i") = 2.0 * real_a("i");
    }
    CHECK_THROWS_WITH_AS(real_c.wait(), doctest::Contains("asks for the CUDA backend"), tenex::BackendError);
  }
  // Whatever the backend, the CPU's results are right.
  std::vector<Complex> want(6 * 7, 0.0);
  for (std::size_t i = 0; i < 6; ++i) {
    for (std::size_t j = 0; j < 7; ++j) {
      for (std::size_t k = 0; k < 5; ++k) want[i * 7 + j] += std::conj(Complex(a.at(i, k))) * Complex(b.at(k, j));
    }
  }
  const auto got = ref::widened(cpu_results[0].to_vector());
  for (std::size_t n = 0; n < want.size(); ++n) CHECK(std::abs(got[n] - want[n]) <= 64 * eps<T>() * 5 * 2);
}
TEST_CASE_TEMPLATE_APPLY(conformance_complex_fallback, ComplexScalars);

// ---- NaN and Inf -------------------------------------------------------------------------------

namespace {

/// numpy's rules, written out here rather than taken from the library's function table: NaN
/// propagates through maximum, minimum, sign and clip; the rest is IEEE arithmetic.
double numpy_maximum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? b : a); }
double numpy_minimum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (b < a ? b : a); }
double numpy_sign(double a) { return std::isnan(a) ? NAN : a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0; }
double numpy_clip(double a, double lo, double hi) { return std::isnan(a) ? NAN : a < lo ? lo : hi < a ? hi : a; }

/// Element (i, j) of a matrix with NaN, +-Inf, +-0 and finite values; `variant` moves them.
double special_value(std::size_t i, std::size_t j, int variant) {
  const std::size_t period = variant == 0 ? 5 : 4;
  if (j % period == 1 && i % (variant == 0 ? 2 : 3) == 0) return NAN;
  if (j % 7 == (variant == 0 ? 2u : 3u)) return INFINITY;
  if (j % 7 == (variant == 0 ? 4u : 5u)) return -INFINITY;
  if (j % 6 == 3) return 0.0;
  if (j % 6 == 5) return -0.0;
  return std::sin(static_cast<double>(i * 31 + j * 7 + static_cast<std::size_t>(variant))) * 3.0;
}

template <class T>
Tensor<T> special_tensor(std::size_t m, std::size_t n, int variant) {
  std::vector<T> v(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) v[i * n + j] = static_cast<T>(special_value(i, j, variant));
  }
  return Tensor<T>(Shape{m, n}, std::move(v));
}

/// "" when `got` equals `want` element by element: both NaN, the same infinity, or finite
/// and within 64 eps(T) relative (the functions' rounding in T).
template <class T>
std::string nan_mismatch(const Tensor<T>& got, const std::vector<double>& want) {
  const auto values = got.to_vector();
  if (values.size() != want.size())
    return "size " + std::to_string(values.size()) + " != " + std::to_string(want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    const double g = static_cast<double>(values[k]), w = static_cast<double>(static_cast<T>(want[k]));
    const bool same = std::isnan(w) ? std::isnan(g)
                      : std::isinf(w)
                          ? g == w
                          : std::isfinite(g) && std::abs(g - w) <= 64 * eps<T>() * std::max(1.0, std::abs(w));
    if (!same) {
      std::ostringstream text;
      text << "element " << k << ": got " << g << ", expected " << w;
      return text.str();
    }
  }
  return "";
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("conformance: NaN and Inf follow numpy's rules on every backend", T, conformance_ieee) {
  std::vector<BackendKind> backends = {BackendKind::cpu};
  if (tenex::cuda_available()) backends.push_back(BackendKind::cuda);
  // Small, and past the CPU kernel's parallel threshold (every strip and thread path).
  for (const auto& [m, n] : {std::pair<std::size_t, std::size_t>{3, 7}, {150, 250}}) {
    Tensor<T> x = special_tensor<T>(m, n, 0), y = special_tensor<T>(m, n, 1);
    const std::vector<T> xv = x.to_vector(), yv = y.to_vector();
    // name, statement writing r("i,j"), the reference at element k.
    using Unary = std::function<void(Tensor<T>&)>;
    using Reference = std::function<double(double, double)>;
    const std::vector<std::tuple<std::string, Unary, Reference>> cases = {
        {"max(x, y)", [&](Tensor<T>& r) { r("i,j") = tenex::max(x("i,j"), y("i,j")); }, numpy_maximum},
        {"max(y, x)", [&](Tensor<T>& r) { r("i,j") = tenex::max(y("i,j"), x("i,j")); },
         [](double a, double b) { return numpy_maximum(b, a); }},
        {"min(x, y)", [&](Tensor<T>& r) { r("i,j") = tenex::min(x("i,j"), y("i,j")); }, numpy_minimum},
        {"min(y, x)", [&](Tensor<T>& r) { r("i,j") = tenex::min(y("i,j"), x("i,j")); },
         [](double a, double b) { return numpy_minimum(b, a); }},
        {"sign(x)", [&](Tensor<T>& r) { r("i,j") = tenex::sign(x("i,j")); },
         [](double a, double) { return numpy_sign(a); }},
        {"exp(x)", [&](Tensor<T>& r) { r("i,j") = tenex::exp(x("i,j")); },
         [](double a, double) { return std::exp(a); }},
        {"log(x)", [&](Tensor<T>& r) { r("i,j") = tenex::log(x("i,j")); },
         [](double a, double) { return std::log(a); }},
        {"sqrt(x)", [&](Tensor<T>& r) { r("i,j") = tenex::sqrt(x("i,j")); },
         [](double a, double) { return std::sqrt(a); }},
        {"1 / x", [&](Tensor<T>& r) { r("i,j") = 1.0 / x("i,j"); }, [](double a, double) { return 1.0 / a; }},
        {"reciprocal(x)", [&](Tensor<T>& r) { r("i,j") = tenex::reciprocal(x("i,j")); },
         [](double a, double) { return 1.0 / a; }},
        {"x / y", [&](Tensor<T>& r) { r("i,j") = x("i,j") / y("i,j"); }, [](double a, double b) { return a / b; }},
        {"clamp(x, -1, 1)", [&](Tensor<T>& r) { r("i,j") = tenex::clamp(x("i,j"), -1.0, 1.0); },
         [](double a, double) { return numpy_clip(a, -1.0, 1.0); }},
        {"tanh(x)", [&](Tensor<T>& r) { r("i,j") = tenex::tanh(x("i,j")); },
         [](double a, double) { return std::tanh(a); }},
        {"erf(x)", [&](Tensor<T>& r) { r("i,j") = tenex::erf(x("i,j")); },
         [](double a, double) { return std::erf(a); }},
        {"abs(x)", [&](Tensor<T>& r) { r("i,j") = tenex::abs(x("i,j")); },
         [](double a, double) { return std::abs(a); }},
        {"x * y", [&](Tensor<T>& r) { r("i,j") = x("i,j") * y("i,j"); }, [](double a, double b) { return a * b; }},
        {"x - y", [&](Tensor<T>& r) { r("i,j") = x("i,j") - y("i,j"); }, [](double a, double b) { return a - b; }},
    };
    for (const BackendKind backend : backends) {
      for (const char* passes : {static_cast<const char*>(nullptr), "none"}) {
        if (passes) {
          ::setenv("TENEX_PASSES", passes, 1);
        } else {
          ::unsetenv("TENEX_PASSES");
        }
        const BackendScope scope(backend);
        INFO("backend ", backend_name(backend), ", TENEX_PASSES=", passes ? passes : "(unset)", ", ", m, " x ", n);
        for (const auto& [name, statement, reference] : cases) {
          INFO(name);
          Tensor<T> r;
          statement(r);
          std::vector<double> want(m * n);
          for (std::size_t k = 0; k < want.size(); ++k) {
            want[k] = reference(static_cast<double>(xv[k]), static_cast<double>(yv[k]));
          }
          const std::string mismatch_ = nan_mismatch(r, want);
          CHECK_MESSAGE(mismatch_.empty(), mismatch_);
        }
        // Reductions: a NaN anywhere reduced gives NaN, on either side of the comparison.
        Tensor<T> row_max, row_min, col_max, col_min;
        row_max("i") = tenex::max_over(x("i,j"), "j");
        row_min("i") = tenex::min_over(x("i,j"), "j");
        col_max("j") = tenex::max_over(y("i,j"), "i");
        col_min("j") = tenex::min_over(y("i,j"), "i");
        std::vector<double> want_row_max(m, -INFINITY), want_row_min(m, INFINITY), want_col_max(n, -INFINITY),
            want_col_min(n, INFINITY);
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t j = 0; j < n; ++j) {
            const double a = static_cast<double>(xv[i * n + j]), b = static_cast<double>(yv[i * n + j]);
            want_row_max[i] = numpy_maximum(want_row_max[i], a);
            want_row_min[i] = numpy_minimum(want_row_min[i], a);
            want_col_max[j] = numpy_maximum(want_col_max[j], b);
            want_col_min[j] = numpy_minimum(want_col_min[j], b);
          }
        }
        std::size_t nan_rows = 0;
        for (double v : want_row_max) nan_rows += std::isnan(v) ? 1 : 0;
        CHECK(nan_rows > 0);
        CHECK(nan_rows < m);  // rows with and without a NaN
        CHECK_MESSAGE(nan_mismatch(row_max, want_row_max).empty(), "max_over j: ", nan_mismatch(row_max, want_row_max));
        CHECK_MESSAGE(nan_mismatch(row_min, want_row_min).empty(), "min_over j: ", nan_mismatch(row_min, want_row_min));
        CHECK_MESSAGE(nan_mismatch(col_max, want_col_max).empty(), "max_over i: ", nan_mismatch(col_max, want_col_max));
        CHECK_MESSAGE(nan_mismatch(col_min, want_col_min).empty(), "min_over i: ", nan_mismatch(col_min, want_col_min));
      }
      ::unsetenv("TENEX_PASSES");
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(conformance_ieee, Scalars);
#endif  // !TENEX_CONFORMANCE_DISTRIBUTED
