// Products built factor by factor in a loop, as long as a user's program makes them: a
// Hadamard product of fifty thousand vectors (left and right associated; the ordering pass
// once recursed per factor and overflowed the stack from 35,000) is ordered, evaluated and
// destroyed without recursion, and a chain of a thousand matrices is written, ordered and
// evaluated exactly. Each is checked against plain loops.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using TD = tenex::Tensor<double>;

/// Factors near one, so that a product of 10^5 of them stays finite: 1 + 1e-6 * (k mod 7).
std::vector<TD> near_one_vectors(std::size_t count, std::size_t n) {
  std::vector<TD> x;
  x.reserve(count);
  for (std::size_t k = 0; k < count; ++k) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 1.0 + 1e-6 * static_cast<double>((k + i) % 7);
    x.emplace_back(Shape{n}, std::move(v));
  }
  return x;
}

std::vector<double> hadamard_reference(const std::vector<TD>& x, std::size_t n) {
  std::vector<double> p(n, 1.0);
  for (const TD& t : x)
    for (std::size_t i = 0; i < n; ++i) p[i] *= t.at(i);
  return p;
}

void check_close(const std::vector<double>& got, const std::vector<double>& expected, double tol) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - expected[i]) <= tol * std::abs(expected[i]));
  }
}

}  // namespace

TEST_CASE("long products: a Hadamard product of 50,000 vectors built in a loop") {
  const std::size_t count = 50000, n = 3;
  std::vector<TD> x = near_one_vectors(count, n);
  const std::vector<double> expected = hadamard_reference(x, n);
  SUBCASE("left associated: p = p * x[k]") {
    TD r;
    {
      tenex::Multiplication<TD> p = x[0]("i") * x[1]("i");
      for (std::size_t k = 2; k < count; ++k) p = p * x[k]("i");
      r("i") = p;
    }
    check_close(r.to_vector(), expected, 1e-9);
  }
  SUBCASE("right associated: p = x[k] * p") {
    TD r;
    {
      tenex::Multiplication<TD> p = x[count - 2]("i") * x[count - 1]("i");
      for (std::size_t k = count - 2; k-- > 0;) p = x[k]("i") * p;
      r("i") = p;
    }
    check_close(r.to_vector(), expected, 1e-9);
  }
  SUBCASE("summed to a scalar, and dropped unevaluated") {
    TD r;
    {
      tenex::Multiplication<TD> p = x[0]("i") * x[1]("i");
      for (std::size_t k = 2; k < count; ++k) p = p * x[k]("i");
      r("") = p;
      tenex::Multiplication<TD> unused = x[0]("i") * x[1]("i");
      for (std::size_t k = 2; k < count; ++k) unused = x[k]("i") * unused;
    }
    check_close(r.to_vector(), {expected[0] + expected[1] + expected[2]}, 1e-9);
  }
}

TEST_CASE("long products: a chain of 1,000 matrices is written and ordered exactly") {
  // M_k = [[1, e_k], [0, 1]]: the product is [[1, sum e_k], [0, 1]], exact in binary for
  // e_k = k mod 4 / 4.
  const std::size_t count = 1000;
  std::vector<TD> m;
  m.reserve(count);
  double total = 0.0;
  for (std::size_t k = 0; k < count; ++k) {
    const double e = static_cast<double>(k % 4) / 4.0;
    total += e;
    m.emplace_back(Shape{2, 2}, std::vector<double>{1.0, e, 0.0, 1.0});
  }
  TD r;
  {
    tenex::Multiplication<TD> p = m[0]("l0,l1") * m[1]("l1,l2");
    for (std::size_t k = 2; k < count; ++k) {
      p = p * m[k]("l" + std::to_string(k) + ",l" + std::to_string(k + 1));
    }
    r("l0,l" + std::to_string(count)) = p;
  }
  CHECK(r.to_vector() == std::vector<double>{1.0, total, 0.0, 1.0});
}

// The store the products of a chain share (src/tenex/expression/detail/label_store.hpp): the
// label entries it has written, appended, copied or materialized. Not a public name.
namespace tenex::detail {
TENEX_API std::size_t label_entries_written();
}  // namespace tenex::detail

namespace {

/// 2x2 matrices whose rows sum to one (entries from 0.2 to 0.8): their product stays bounded.
std::vector<TD> stochastic_matrices(std::size_t count) {
  std::vector<TD> m;
  m.reserve(count);
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return 0.2 + 0.6 * static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  for (std::size_t k = 0; k < count; ++k) {
    const double a = next(), b = next();
    m.emplace_back(Shape{2, 2}, std::vector<double>{a, 1.0 - a, b, 1.0 - b});
  }
  return m;
}

std::vector<double> chain_reference(const std::vector<TD>& m) {
  std::vector<double> p = m[0].to_vector();
  for (std::size_t k = 1; k < m.size(); ++k) {
    const std::vector<double> f = m[k].to_vector();
    p = {p[0] * f[0] + p[1] * f[2], p[0] * f[1] + p[1] * f[3], p[2] * f[0] + p[3] * f[2], p[2] * f[1] + p[3] * f[3]};
  }
  return p;
}

std::string chain_labels(std::size_t k) { return "l" + std::to_string(k) + ",l" + std::to_string(k + 1); }

}  // namespace

TEST_CASE("long products: a chain of 20,000 matrices is written in linear time and memory") {
  // Each product's labels are the union of its factors', so the k-th product of a chain holds
  // k + 1 labels; the products share one store, which they extend, instead of a copy each.
  const std::size_t count = 20000;
  std::vector<TD> m = stochastic_matrices(count);
  const std::vector<double> expected = chain_reference(m);
  const std::size_t before = tenex::detail::label_entries_written();
  TD r;
  {
    tenex::Multiplication<TD> p = m[0](chain_labels(0)) * m[1](chain_labels(1));
    for (std::size_t k = 2; k < count; ++k) p = p * m[k](chain_labels(k));
    CHECK(p.labels().size() == count + 1);
    r("l0,l" + std::to_string(count)) = p;
  }
  check_close(r.to_vector(), expected, 1e-9);
  // Quadratic growth would write about count^2 / 2 = 2 * 10^8 entries.
  const std::size_t written = tenex::detail::label_entries_written() - before;
  CAPTURE(written);
  CHECK(written <= 4 * count);
}

TEST_CASE("long products: a chain of 10,000 matrices written from its end is linear too") {
  // p = m_k * p: the product's labels are l_k, then p's; l_k goes in front of p's in the store.
  const std::size_t count = 10000;
  std::vector<TD> m = stochastic_matrices(count);
  const std::vector<double> expected = chain_reference(m);
  const std::size_t before = tenex::detail::label_entries_written();
  TD r;
  {
    tenex::Multiplication<TD> p = m[count - 2](chain_labels(count - 2)) * m[count - 1](chain_labels(count - 1));
    for (std::size_t k = count - 2; k-- > 0;) p = m[k](chain_labels(k)) * p;
    CHECK(p.labels().size() == count + 1);
    CHECK(p.labels().front() == "l0");
    CHECK(p.labels().back() == "l" + std::to_string(count));
    r("l0,l" + std::to_string(count)) = p;
  }
  check_close(r.to_vector(), expected, 1e-9);
  const std::size_t written = tenex::detail::label_entries_written() - before;
  CAPTURE(written);
  CHECK(written <= 4 * count);
}

TEST_CASE("long products: products that share a label store branch, repeat and scale exactly") {
  std::vector<TD> m = stochastic_matrices(40);
  auto reference = [&](std::size_t from, std::size_t to) {
    return chain_reference(
        std::vector<TD>(m.begin() + static_cast<std::ptrdiff_t>(from), m.begin() + static_cast<std::ptrdiff_t>(to)));
  };
  // x = m0 ... m29, extended twice from the same x: the second extension copies x's labels.
  tenex::Multiplication<TD> x = m[0](chain_labels(0)) * m[1](chain_labels(1));
  for (std::size_t k = 2; k < 30; ++k) x = x * m[k](chain_labels(k));
  const tenex::Multiplication<TD> y = x * m[30](chain_labels(30));
  const tenex::Multiplication<TD> z = x * m[35]("l30,l99");
  const tenex::Multiplication<TD> w = (2.0 * y) * m[31](chain_labels(31));
  // s * s, s = m0 m1 m2 m3: each factor twice, every label summed: sum over l0..l4 of
  // prod_k m_k(l_k, l_k+1)^2.
  tenex::Multiplication<TD> s = m[0](chain_labels(0)) * m[1](chain_labels(1));
  for (std::size_t k = 2; k < 4; ++k) s = s * m[k](chain_labels(k));
  const tenex::Multiplication<TD> ss = s * s;
  CHECK(x.labels().size() == 31);
  CHECK(y.labels().size() == 32);
  CHECK(z.labels().size() == 32);
  CHECK(z.labels().back() == "l99");
  CHECK(ss.labels().size() == 5);
  // Both ends: m31 * (y * m32) prepends l31 to a store that y's product appended to; and a
  // factor whose labels are not the product's first (m33 over l33, l0) copies.
  const tenex::Multiplication<TD> both = m[36]("l99,l0") * (y * m[31](chain_labels(31)));
  const tenex::Multiplication<TD> ring = m[33]("l32,l0") * (y * m[31](chain_labels(31)));
  // (m37 m38) * y: y, the longer, takes the pair's labels in front of its own.
  const tenex::Multiplication<TD> pair_y = (m[37]("l97,l98") * m[38]("l98,l0")) * y;
  CHECK(pair_y.labels().size() == 34);
  CHECK(both.labels().front() == "l99");
  CHECK(ring.labels().front() == "l32");
  TD rboth, rring;
  rboth("l99,l32") = both;
  rring("") = ring;
  TD rpair;
  rpair("l97,l31") = pair_y;
  TD ry, rz, rw, rx, rss;
  ry("l0,l31") = y;
  rz("l0,l99") = z;
  rw("l0,l32") = w;
  rx("l0,l30") = x;
  rss("") = ss;
  std::vector<TD> with_35(m.begin(), m.begin() + 30);
  with_35.push_back(m[35]);
  std::vector<double> expected_w = reference(0, 32);
  for (double& v : expected_w) v *= 2.0;
  check_close(ry.to_vector(), reference(0, 31), 1e-12);
  check_close(rz.to_vector(), chain_reference(with_35), 1e-12);
  check_close(rw.to_vector(), expected_w, 1e-12);
  const std::vector<double> vx = reference(0, 30);
  check_close(rx.to_vector(), vx, 1e-12);
  std::vector<TD> squared;
  for (std::size_t k = 0; k < 4; ++k) {
    std::vector<double> v = m[k].to_vector();
    for (double& e : v) e *= e;
    squared.emplace_back(Shape{2, 2}, std::move(v));
  }
  double total = 0;
  for (double v : chain_reference(squared)) total += v;
  check_close(rss.to_vector(), {total}, 1e-12);
  std::vector<TD> with_36{m[36]};
  with_36.insert(with_36.end(), m.begin(), m.begin() + 32);
  check_close(rboth.to_vector(), chain_reference(with_36), 1e-12);
  std::vector<TD> pair_factors{m[37], m[38]};
  pair_factors.insert(pair_factors.end(), m.begin(), m.begin() + 31);
  check_close(rpair.to_vector(), chain_reference(pair_factors), 1e-12);
  // The trace of m33 m0 ... m31 (m33 closes the ring from l32 to l0).
  std::vector<TD> ring_factors{m[33]};
  ring_factors.insert(ring_factors.end(), m.begin(), m.begin() + 32);
  const std::vector<double> closed = chain_reference(ring_factors);
  check_close(rring.to_vector(), {closed[0] + closed[3]}, 1e-12);
}

TEST_CASE("long products: threads extending one product share its label store safely") {
  // One thread's product extends x's store in place, the others copy x's view: each result is
  // its own chain, and x's labels read meanwhile are x's.
  constexpr std::size_t threads = 4, more = 300;
  std::vector<TD> m = stochastic_matrices(30 + threads * more);
  tenex::Multiplication<TD> x = m[0](chain_labels(0)) * m[1](chain_labels(1));
  for (std::size_t k = 2; k < 30; ++k) x = x * m[k](chain_labels(k));
  std::vector<std::vector<double>> got(threads), expected(threads);
  std::vector<std::size_t> label_counts(threads);
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    std::vector<TD> factors(m.begin(), m.begin() + 30);
    for (std::size_t k = 0; k < more; ++k) factors.push_back(m[30 + t * more + k]);
    expected[t] = chain_reference(factors);
    pool.emplace_back([&, t] {
      auto name = [t](std::size_t k) {
        return k == 0 ? std::string("l30") : "t" + std::to_string(t) + "_" + std::to_string(k);
      };
      tenex::Multiplication<TD> p = x * m[30 + t * more](name(0) + "," + name(1));
      for (std::size_t k = 1; k < more; ++k) p = p * m[30 + t * more + k](name(k) + "," + name(k + 1));
      label_counts[t] = x.labels().size();
      TD r;
      r("l0," + name(more)) = p;
      got[t] = r.to_vector();
    });
  }
  for (std::thread& t : pool) t.join();
  for (std::size_t t = 0; t < threads; ++t) {
    CAPTURE(t);
    CHECK(label_counts[t] == 31);
    check_close(got[t], expected[t], 1e-12);
  }
}

TEST_CASE("long products: a chain of 2,000 sums and scales, summed with another, stays linear") {
  // Factors that are sums (their products hold a sum: the statement's check of summed labels
  // walks them) or scales, and a sum and a scale over the whole chain.
  const std::size_t count = 2000;
  std::vector<TD> m = stochastic_matrices(count);
  TD zero(Shape{2, 2}, std::vector<double>(4, 0.0));
  const std::vector<double> expected = chain_reference(m);
  const std::size_t before = tenex::detail::label_entries_written();
  TD r;
  {
    tenex::Multiplication<TD> p = m[0](chain_labels(0)) * (m[1](chain_labels(1)) + zero(chain_labels(1)));
    for (std::size_t k = 2; k < count; ++k) {
      if (k % 2 == 0) {
        p = p * (0.5 * m[k](chain_labels(k)));
      } else {
        p = p * (2.0 * m[k](chain_labels(k)) + zero(chain_labels(k)));
      }
    }
    const std::string ends = "l0,l" + std::to_string(count);
    r(ends) = 0.5 * (p + 1.0 * p) + zero(ends);
  }
  check_close(r.to_vector(), expected, 1e-9);
  const std::size_t written = tenex::detail::label_entries_written() - before;
  CAPTURE(written);
  CHECK(written <= 4 * count);
}
