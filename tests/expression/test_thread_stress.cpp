// Sets built and evaluated on different threads never interfere (docs/reliability.md, "Thread
// safety"): 8 threads each build and evaluate kSetsPerThread random sets (random small shapes;
// contractions, additions, subtractions, scaling, permutations, compound assignments, sets of
// several statements kept open by a handle, early reads) while all of them also read, use as
// operands and copy a few tensors they share. Each thread also reads tensors of its own through
// the non-const accessors while they are shared with a copy. Every result is compared with a naive reference
// computed on the thread itself.
//
// What it touches that is shared between threads: the plan cache (identical sets on several
// threads hit the same plan), the host block cache, the backend registry, the default backend and
// memory limit (read by every set), and the shared tensors (read through at() and data(), copied
// and used as operands by every thread at once).
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::Tensor;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kSetsPerThread = 150;  // the sanitizers make each set 5-20x slower
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kSetsPerThread = 150;
#else
constexpr int kSetsPerThread = 500;
#endif
#else
constexpr int kSetsPerThread = 500;
#endif
constexpr int kThreads = 8;
constexpr std::size_t kShared = 6;  // the shared tensors are kShared x kShared

// A row-major matrix, the reference's value type.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<double> v;
  double operator()(std::size_t i, std::size_t j) const { return v[i * cols + j]; }
  double& operator()(std::size_t i, std::size_t j) { return v[i * cols + j]; }
};

Matrix zeros(std::size_t r, std::size_t c) { return Matrix{r, c, std::vector<double>(r * c, 0.0)}; }

Matrix product(const Matrix& a, const Matrix& b) {
  Matrix c = zeros(a.rows, b.cols);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < b.cols; ++j)
      for (std::size_t k = 0; k < a.cols; ++k) c(i, j) += a(i, k) * b(k, j);
  return c;
}

Matrix transposed(const Matrix& a) {
  Matrix t = zeros(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  return t;
}

Matrix combine(const Matrix& a, double x, const Matrix& b, double y) {
  Matrix c = a;
  for (std::size_t i = 0; i < c.v.size(); ++i) c.v[i] = x * a.v[i] + y * b.v[i];
  return c;
}

template <class T>
Tensor<T> tensor_of(const Matrix& m) {
  return Tensor<T>(Shape{m.rows, m.cols}, std::vector<T>(m.v.begin(), m.v.end()));
}

template <class T>
bool close(const Tensor<T>& got, const Matrix& want) {
  if (got.rank() != 2 || got.shape().extent(0) != want.rows || got.shape().extent(1) != want.cols) return false;
  const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-11;
  const std::vector<T> values = got.to_vector();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::abs(static_cast<double>(values[i]) - want.v[i]) > tol * (1.0 + std::abs(want.v[i]))) return false;
  }
  return true;
}

struct Shared {
  std::vector<Tensor<double>> d;  // evaluated tensors every thread reads
  std::vector<Tensor<float>> f;
  std::vector<Matrix> value;  // their values
};

// One thread's work: kSetsPerThread random sets. Returns the number of wrong results.
template <class T>
int run_sets(Shared& shared, std::vector<Tensor<T>>& sh, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::size_t lo, std::size_t hi) { return std::uniform_int_distribution<std::size_t>(lo, hi)(rng); };
  auto random_matrix = [&](std::size_t r, std::size_t c) {
    Matrix m = zeros(r, c);
    for (double& x : m.v) x = static_cast<double>(static_cast<int>(pick(0, 16)) - 8) / 4.0;  // exact in float
    return m;
  };
  int bad = 0;
  for (int n = 0; n < kSetsPerThread; ++n) {
    const std::size_t m = pick(1, 5), k = pick(1, 5), c = pick(1, 5);
    const Matrix am = random_matrix(m, k), bm = random_matrix(k, c), cm = random_matrix(m, c);
    Tensor<T> a = tensor_of<T>(am), b = tensor_of<T>(bm), cc = tensor_of<T>(cm);
    const double x = static_cast<double>(pick(1, 8)) / 2.0;
    const std::size_t s = pick(0, sh.size() - 1);
    switch (pick(0, 6)) {
      case 0: {  // a contraction
        Tensor<T> r;
        r("i,j") = a("i,k") * b("k,j");
        bad += !close(r, product(am, bm));
        break;
      }
      case 1: {  // scaled contraction plus an addend, written transposed
        Tensor<T> r;
        r("j,i") = x * (a("i,k") * b("k,j")) + cc("i,j");
        bad += !close(r, transposed(combine(product(am, bm), x, cm, 1.0)));
        break;
      }
      case 2: {  // two statements in one set, kept open by a handle; the second reads the first
        Tensor<T> r1, r2;
        {
          auto held = a("i,k");
          r1("i,j") = held * b("k,j");
          r2("i,j") = r1("i,j") - x * cc("i,j");
          if (!r1.pending() || !r2.pending()) ++bad;
        }
        const Matrix p = product(am, bm);
        bad += !close(r2, combine(p, 1.0, cm, -x));
        bad += !close(r1, p);
        break;
      }
      case 3: {  // compound assignments, one early read in the middle
        Tensor<T> r = tensor_of<T>(cm);
        r("i,j") += a("i,k") * b("k,j");
        const Matrix p = combine(cm, 1.0, product(am, bm), 1.0);
        bad += !close(r, p);
        r("i,j") *= x;
        r("i,j") -= cc("i,j");
        bad += !close(r, combine(p, x, cm, -1.0));
        break;
      }
      case 4: {  // the shared tensors as operands, with this thread's own
        const Matrix& sm = shared.value[s];
        Tensor<T> r;
        r("i,j") = sh[s]("i,k") * sh[(s + 1) % sh.size()]("k,j") + x * sh[s]("j,i");
        bad += !close(r, combine(product(sm, shared.value[(s + 1) % sh.size()]), 1.0, transposed(sm), x));
        break;
      }
      case 5: {  // read the shared tensors (const: other threads copy and capture them meanwhile)
        const Tensor<T>& t = sh[s];
        const Matrix& sm = shared.value[s];
        for (std::size_t i = 0; i < kShared; ++i) {
          for (std::size_t j = 0; j < kShared; ++j) {
            if (static_cast<double>(t.at(i, j)) != static_cast<double>(static_cast<T>(sm(i, j)))) ++bad;
          }
        }
        Tensor<T> copy = t;
        bad += !close(copy, sm);
        // This thread's own copy, shared with `copy2`: the non-const at() copies it first.
        Tensor<T> copy2 = copy;
        copy.at(0, 0) = static_cast<T>(sm(0, 0) + 1.0);
        if (static_cast<double>(copy2.at(0, 0)) != static_cast<double>(static_cast<T>(sm(0, 0)))) ++bad;
        if (static_cast<double>(t.data()[kShared + 1]) != static_cast<double>(static_cast<T>(sm(1, 1)))) ++bad;
        break;
      }
      default: {  // a vector result and a scalar (a full contraction)
        Tensor<T> v, total;
        v("i") = a("i,k") * b("k,j") * cc("i,j");  // sum over k and j
        total("") = cc("i,j") * cc("i,j");
        const Matrix p = product(am, bm);
        double want_total = 0;
        for (double e : cm.v) want_total += e * e;
        const std::vector<T> got = v.to_vector();
        for (std::size_t i = 0; i < m; ++i) {
          double want = 0;
          for (std::size_t j = 0; j < c; ++j) want += p(i, j) * cm(i, j);
          if (std::abs(static_cast<double>(got[i]) - want) > 1e-4 * (1.0 + std::abs(want))) ++bad;
        }
        if (std::abs(static_cast<double>(total.at()) - want_total) > 1e-4 * (1.0 + want_total)) ++bad;
        break;
      }
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("threads: 8 threads build and evaluate random sets and share tensors, without interfering") {
  Shared shared;
  std::mt19937_64 rng(12);
  for (std::size_t s = 0; s < 3; ++s) {
    Matrix m = zeros(kShared, kShared);
    for (double& x : m.v) x = static_cast<double>(static_cast<int>(rng() % 17) - 8) / 4.0;
    shared.value.push_back(m);
    // Evaluated results (not given values), so that they went through the pipeline once.
    Tensor<double> given = tensor_of<double>(m);
    Tensor<double> d;
    d("i,j") = given("i,j");
    shared.d.push_back(d);
    Tensor<float> f;
    f("i,j") = tenex::cast<float>(given("i,j"));
    shared.f.push_back(f);
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto seed = static_cast<std::uint64_t>(1000 + t);
      // Half the threads run double sets and read the shared double tensors, half float.
      bad += t % 2 == 0 ? run_sets<double>(shared, shared.d, seed) : run_sets<float>(shared, shared.f, seed);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  // The shared tensors kept their values.
  for (std::size_t s = 0; s < shared.value.size(); ++s) {
    CHECK(close(shared.d[s], shared.value[s]));
    CHECK(close(shared.f[s], shared.value[s]));
  }
}
