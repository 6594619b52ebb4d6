// Sparse evaluation: results equal the dense result masked by the maps (random maps of 1% to
// 50% density, multi-mode maps, empty domains, ranges and scattered domains), maps propagate
// through the graph (explain() shows each node's allowed fraction), intermediates take less
// memory than dense, and bad maps are errors at the line that sets them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/environment_scope.hpp"

namespace {

using tenex::SparseMap;
using tenex::Tensor;

struct PassesScope {
  explicit PassesScope(const std::string& value) { ::setenv("TENEX_PASSES", value.c_str(), 1); }
  ~PassesScope() { ::unsetenv("TENEX_PASSES"); }
  PassesScope(const PassesScope&) = delete;
  PassesScope& operator=(const PassesScope&) = delete;
};

// Every pass but the sparse evaluation: the same set, evaluated dense and masked.
const char* const kDenseMasked = "cse,order,fold_scales,gemm_beta,collapse,fuse";

Tensor<double> random_tensor(const tenex::Shape& shape, std::uint64_t seed) {
  Tensor<double> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

/// One mode to one mode: each source keeps a `density` share of the targets, scattered;
/// `empty_every` > 0 gives every such source an empty domain.
SparseMap random_map(std::size_t sources, std::size_t targets, double density, std::uint64_t seed,
                     std::size_t empty_every = 0) {
  std::mt19937_64 rng(seed);
  SparseMap m;
  const auto count = std::max<std::size_t>(1, static_cast<std::size_t>(density * static_cast<double>(targets)));
  for (std::size_t s = 0; s < sources; ++s) {
    if (empty_every && s % empty_every == 0) continue;
    std::vector<std::size_t> all(targets);
    for (std::size_t t = 0; t < targets; ++t) all[t] = t;
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<SparseMap::Index> chosen;
    for (std::size_t t = 0; t < count; ++t) chosen.push_back({all[t]});
    m.insert({s}, chosen);
  }
  return m;
}

/// One mode to one mode: source s keeps the contiguous range around s * targets / sources.
SparseMap band_map(std::size_t sources, std::size_t targets, std::size_t width) {
  SparseMap m;
  for (std::size_t s = 0; s < sources; ++s) {
    const std::size_t centre = s * targets / sources;
    std::vector<SparseMap::Index> chosen;
    for (std::size_t t = centre >= width ? centre - width : 0; t < std::min(targets, centre + width + 1); ++t) {
      chosen.push_back({t});
    }
    m.insert({s}, chosen);
  }
  return m;
}

/// A rank-2 tensor with the elements `m` excludes set to zero (m: mode 0 -> mode 1).
Tensor<double> masked(const Tensor<double>& t, const SparseMap& m) {
  Tensor<double> out = t;
  for (std::size_t i = 0; i < t.shape().extent(0); ++i) {
    for (std::size_t j = 0; j < t.shape().extent(1); ++j) {
      if (!m.allows({i}, {j})) out.at(i, j) = 0.0;
    }
  }
  return out;
}

void check_equal(const Tensor<double>& got, const Tensor<double>& want) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> g = got.to_vector(), w = want.to_vector();
  std::size_t bad = 0;
  for (std::size_t x = 0; x < g.size(); ++x) {
    if (!(std::abs(g[x] - w[x]) <= 1e-11 * (1.0 + std::abs(w[x])))) {
      if (bad++ == 0) {
        CAPTURE(x);
        CHECK(g[x] == doctest::Approx(w[x]));
      }
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("sparse evaluation: a product with maps i->k and i->j equals the dense product masked") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  const std::size_t n = 60;
  for (double density : {0.01, 0.02, 0.05, 0.1, 0.25, 0.5}) {
    CAPTURE(density);
    auto a = random_tensor({n, n}, 1), b = random_tensor({n, n}, 2);
    const SparseMap ik = random_map(n, n, density, 3, 7);  // every 7th i has no k
    const SparseMap ij = random_map(n, n, density, 4, 5);
    Tensor<double> c;
    {
      auto aik = a("i,k");
      aik.set_sparse_map("i", "k", ik);
      auto x = aik * b("k,j");
      x.set_sparse_map("i", "j", ij);
      c("i,j") = x;
    }
    const tenex::RunStats stats = tenex::last_run_stats();
    const std::string plan = tenex::explain();
    Tensor<double> dense;
    dense("i,j") = masked(a, ik)("i,k") * b("k,j");
    check_equal(c, masked(dense, ij));
    CHECK_MESSAGE(plan.find("evaluated on their allowed elements only") != std::string::npos, plan);
    // The counted flops follow the allowed (i, k, j) triples, not n^3.
    double triples = 0;
    for (std::size_t i = 0; i < n; ++i) {
      auto k = ik.entries().find({i}), j = ij.entries().find({i});
      if (k != ik.entries().end() && j != ij.entries().end()) {
        triples += static_cast<double>(k->second.size() * j->second.size());
      }
    }
    CHECK(stats.flops == doctest::Approx(2 * triples));
    CHECK(stats.flops < 2.0 * n * n * n);
  }
}

TEST_CASE("sparse evaluation: contiguous-range (banded) and scattered domains, dense-masked agrees") {
  const std::size_t n = 48, m = 40;
  auto a = random_tensor({n, m}, 11), b = random_tensor({m, n}, 12), d = random_tensor({n, n}, 13);
  for (int scattered = 0; scattered < 2; ++scattered) {
    CAPTURE(scattered);
    const SparseMap ik = scattered ? random_map(n, m, 0.15, 21) : band_map(n, m, 3);
    const SparseMap ij = scattered ? random_map(n, n, 0.2, 22, 4) : band_map(n, n, 4);
    auto run = [&] {
      Tensor<double> c;
      {
        auto aik = a("i,k");
        aik.set_sparse_map("i", "k", ik);
        auto x = aik * b("k,j");
        x.set_sparse_map("i", "j", ij);
        c("i,j") = 2.0 * x + x;  // element-wise work over the allowed elements of the product
      }
      return c;
    };
    const Tensor<double> sparse = run();
    Tensor<double> dense_masked;
    {
      const PassesScope scope(kDenseMasked);
      dense_masked = run();
      dense_masked.wait();
      CHECK(tenex::explain().find("per-key blocks") == std::string::npos);
    }
    check_equal(sparse, dense_masked);
    Tensor<double> reference;
    reference("i,j") = 3.0 * masked(a, ik)("i,k") * b("k,j");
    check_equal(sparse, masked(reference, ij));
    (void)d;
  }
}

TEST_CASE("sparse evaluation: pair domains (i,j) -> (a,b), with empty pairs, element-wise and a full contraction") {
  const std::size_t o = 6, v = 10;
  auto k = random_tensor({o, o, v, v}, 31), e = random_tensor({o, o, v, v}, 32);
  for (int product = 0; product < 2; ++product) {
    CAPTURE(product);
    std::mt19937_64 rng(33 + static_cast<std::uint64_t>(product));
    SparseMap pairs;
    for (std::size_t i = 0; i < o; ++i) {
      for (std::size_t j = 0; j < o; ++j) {
        if ((i + 2 * j) % 5 == 0) continue;  // an empty pair domain
        std::vector<SparseMap::Index> ab;
        std::vector<std::size_t> dom;
        for (std::size_t a = 0; a < v; ++a) {
          if (rng() % 3 == 0) dom.push_back(a);
        }
        for (std::size_t a : dom) {
          for (std::size_t b : dom) {
            if (product || rng() % 2 == 0) ab.push_back({a, b});
          }
        }
        if (!ab.empty()) pairs.insert({i, j}, ab);
      }
    }
    auto run = [&] {
      Tensor<double> t, energy;
      {
        auto kijab = k("i,j,a,b");
        kijab.set_sparse_map("i,j", "a,b", pairs);
        auto tijab = kijab / e("i,j,a,b");
        t("i,j,a,b") = tijab;
        energy("") = tijab * (2.0 * kijab - k("i,j,b,a"));
      }
      return std::make_pair(t, energy);
    };
    const auto [t, energy] = run();
    t.wait();
    Tensor<double> rt, re;
    {
      const PassesScope scope(kDenseMasked);
      std::tie(rt, re) = run();
      rt.wait();
    }
    check_equal(t, rt);
    CHECK(energy.at() == doctest::Approx(re.at()).epsilon(1e-12));
    // The reference by loops over the allowed elements.
    double want = 0;
    std::size_t allowed = 0;
    for (std::size_t i = 0; i < o; ++i) {
      for (std::size_t j = 0; j < o; ++j) {
        for (std::size_t a = 0; a < v; ++a) {
          for (std::size_t b = 0; b < v; ++b) {
            const bool in = pairs.allows({i, j}, {a, b});
            allowed += in;
            const double tv = in ? k.at(i, j, a, b) / e.at(i, j, a, b) : 0.0;
            CHECK(t.at(i, j, a, b) == doctest::Approx(tv).epsilon(1e-13));
            const double kb = pairs.allows({i, j}, {b, a}) ? k.at(i, j, b, a) : k.at(i, j, b, a);
            want += tv * (2.0 * k.at(i, j, a, b) - kb);
          }
        }
      }
    }
    CHECK(allowed == pairs.pair_count());
    CHECK(energy.at() == doctest::Approx(want).epsilon(1e-12));
  }
}

TEST_CASE("sparse evaluation: maps propagate and compose; explain and DOT show the allowed fraction") {
  const std::size_t n = 30;
  auto a = random_tensor({n, n}, 41), b = random_tensor({n, n}, 42);
  const SparseMap ia = band_map(n, n, 1);  // i -> a: 3 values
  const SparseMap aq = band_map(n, n, 2);  // a -> Q: 5 values
  Tensor<double> c;
  {
    auto x = a("i,a");
    x.set_sparse_map("i", "a", ia);
    auto y = b("a,Q");
    y.set_sparse_map("a", "Q", aq);
    c("i,Q") = x * y;
  }
  // (i, Q) can be non-zero only where some a pairs with both: i -> Q, |i - Q| <= 3.
  std::size_t composed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t q = 0; q < n; ++q) {
      bool reachable = false;
      for (std::size_t m = 0; m < n; ++m) reachable = reachable || (ia.allows({i}, {m}) && aq.allows({m}, {q}));
      composed += reachable;
      if (!reachable) CHECK(c.at(i, q) == 0.0);
    }
  }
  const std::string plan = tenex::explain();
  char expected[32];
  std::snprintf(expected, sizeof expected, "%.1f%% allowed (blocks)", 100.0 * static_cast<double>(composed) / (n * n));
  CHECK_MESSAGE(plan.find(expected) != std::string::npos, plan);  // the product's composed map i -> Q
  Tensor<double> dense;
  dense("i,Q") = masked(a, ia)("i,a") * masked(b, aq)("a,Q");
  check_equal(c, dense);

  // Through a permutation, a slice and a sum over a label.
  Tensor<double> p, s, r;
  {
    auto x = a("i,j");
    x.set_sparse_map("i", "j", ia);
    p("j,i") = 2.0 * x;
    s("i,j") = tenex::slice(x, {2, 3}, {20, 25});
    r("i") = x * b("i,j");
  }
  for (std::size_t i = 0; i < n; ++i) {
    double row = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const bool in = ia.allows({i}, {j});
      CHECK(p.at(j, i) == doctest::Approx(in ? 2.0 * a.at(i, j) : 0.0));
      row += in ? a.at(i, j) * b.at(i, j) : 0.0;
    }
    CHECK(r.at(i) == doctest::Approx(row));
  }
  for (std::size_t i = 0; i < 18; ++i) {
    for (std::size_t j = 0; j < 22; ++j) {
      // The slice reads x masked, and its own (i, j) carry the map too.
      const bool in = ia.allows({i + 2}, {j + 3}) && ia.allows({i}, {j});
      CHECK(s.at(i, j) == (in ? a.at(i + 2, j + 3) : 0.0));
    }
  }

  // The DOT text of an optimized set names the allowed fraction of its nodes.
  tenex::OpGraph g;
  auto x = a("i,a");
  x.set_sparse_map("i", "a", ia);
  (void)(2.0 * x).add_to_graph(g);
  CHECK(g.to_dot().find("sparse i -> a") != std::string::npos);
  CHECK_MESSAGE(tenex::explain(2.0 * x).find("% allowed") != std::string::npos, tenex::explain(2.0 * x));
}

TEST_CASE("sparse evaluation: a sparse intermediate takes less memory than dense") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  const std::size_t n = 200;
  auto a = random_tensor({n, n}, 51), b = random_tensor({n, n}, 52), d = random_tensor({n, n}, 53);
  const SparseMap ik = random_map(n, n, 0.05, 54), ij = random_map(n, n, 0.05, 55);
  auto run = [&] {
    Tensor<double> c;
    {
      auto aik = a("i,k");
      aik.set_sparse_map("i", "k", ik);
      auto x = aik * b("k,j");
      x.set_sparse_map("i", "j", ij);
      c("i,j") = tenex::sum(x * d("j,l") + x, "l");  // x is an intermediate read twice
    }
    c.wait();
    return std::make_pair(c, tenex::last_run_stats().peak_bytes);
  };
  const auto [sparse, sparse_peak] = run();
  Tensor<double> reference;
  std::size_t dense_peak = 0;
  {
    const PassesScope scope(kDenseMasked);
    std::tie(reference, dense_peak) = run();
  }
  check_equal(sparse, reference);
  MESSAGE("peak bytes: sparse ", sparse_peak, ", dense and masked ", dense_peak);
  CHECK(sparse_peak > 0);
  CHECK(sparse_peak * 2 < dense_peak);
}

TEST_CASE("sparse evaluation: a backend that cannot evaluate sparsely runs dense and masked (explain says so)") {
  // The CPU backend accepts; the fallback is the set without the "sparse" pass, checked above.
  // Here: explain() names which way the last set ran.
  auto a = random_tensor({8, 8}, 61);
  const SparseMap m = band_map(8, 8, 1);
  Tensor<double> c;
  {
    auto x = a("i,j");
    x.set_sparse_map("i", "j", m);
    c("i,j") = 2.0 * x;
  }
  c.wait();
  CHECK(tenex::explain().find("sparse maps: ") != std::string::npos);
  {
    const PassesScope scope(kDenseMasked);
    Tensor<double> d;
    {
      auto x = a("i,j");
      x.set_sparse_map("i", "j", m);
      d("i,j") = 2.0 * x;
    }
    d.wait();
    CHECK(tenex::explain().find("evaluated dense and masked") != std::string::npos);
    check_equal(c, d);
  }
}

TEST_CASE("sparse evaluation: bad maps are errors naming the labels, at the line that sets them") {
  auto a = random_tensor({4, 5}, 71);
  auto x = a("i,j");
  SparseMap too_far;
  too_far.insert({0}, {{5}});
  CHECK_THROWS_WITH_AS(x.set_sparse_map("i", "j", too_far), doctest::Contains("\"j\" is out of range for extent 5"),
                       tenex::ShapeError);
  CHECK_THROWS_WITH_AS(x.set_sparse_map("i", "q", band_map(4, 5, 1)), doctest::Contains("label \"q\""),
                       tenex::ShapeError);
  x.set_sparse_map("i", "j", band_map(4, 5, 1));
  CHECK_NOTHROW(x.set_sparse_map("i", "j", band_map(4, 5, 1)));  // the same map again
  CHECK_THROWS_WITH_AS(x.set_sparse_map("i", "j", band_map(4, 5, 2)),
                       doctest::Contains("conflicts with the map i -> j set before"), tenex::ShapeError);
  SparseMap two;
  two.insert({0, 1}, {{0}});
  CHECK_THROWS_WITH_AS(x.set_sparse_map("i", "j", two), doctest::Contains("tuples of 2 and 1"), tenex::ShapeError);
}

namespace {

/// Blocks of `block` consecutive sources share one domain of `width` targets: a contiguous
/// range (the band of a local method's atoms) or a scattered set.
SparseMap block_map(std::size_t sources, std::size_t targets, std::size_t block, std::size_t width, bool scattered,
                    std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  SparseMap m;
  std::vector<SparseMap::Index> chosen;
  for (std::size_t s = 0; s < sources; ++s) {
    if (s % block == 0) {
      chosen.clear();
      std::vector<std::size_t> all(targets);
      for (std::size_t t = 0; t < targets; ++t) all[t] = t;
      if (scattered) std::shuffle(all.begin(), all.end(), rng);
      const std::size_t first = scattered ? 0 : std::min(targets - width, s * targets / sources);
      for (std::size_t t = 0; t < width; ++t) chosen.push_back({all[first + t]});
    }
    m.insert({s}, chosen);
  }
  return m;
}

/// Largest difference relative to 1 + |want|.
template <class T>
double max_relative_difference(const Tensor<T>& got, const Tensor<T>& want) {
  const std::vector<T> g = got.to_vector(), w = want.to_vector();
  double worst = g.size() == w.size() ? 0.0 : 1e300;
  for (std::size_t x = 0; x < std::min(g.size(), w.size()); ++x) {
    worst = std::max(worst, std::abs(static_cast<double>(g[x]) - static_cast<double>(w[x])) /
                                (1.0 + std::abs(static_cast<double>(w[x]))));
  }
  return worst;
}

/// c(i,j) = a(i,k) b(k,j) with the maps i->k on a and i->j on the product, evaluated.
template <class T>
Tensor<T> product_with_maps(Tensor<T>& a, Tensor<T>& b, const SparseMap& ik, const SparseMap& ij) {
  Tensor<T> c;
  {
    auto aik = a("i,k");
    aik.set_sparse_map("i", "k", ik);
    auto x = aik * b("k,j");
    x.set_sparse_map("i", "j", ij);
    c("i,j") = x;
  }
  c.wait();
  return c;
}

}  // namespace

TEST_CASE("sparse evaluation: keys with equal domains run as one GEMM per group, dense-masked agrees") {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  const std::size_t n = 60, m = 50;
  auto a = random_tensor({n, m}, 71), b = random_tensor({m, n}, 72);
  for (int scattered = 0; scattered < 2; ++scattered) {
    CAPTURE(scattered);
    // Blocks of 7 keys (the last one of 4) share their domains; contiguous ones are read
    // from b in place, scattered ones gathered.
    const SparseMap ik = block_map(n, m, 7, 9, scattered != 0, 73);
    const SparseMap ij = block_map(n, n, 7, 11, scattered != 0, 74);
    auto run = [&] { return product_with_maps(a, b, ik, ij); };
    const Tensor<double> sparse = run();
    const tenex::RunStats stats = tenex::last_run_stats();
    const std::string plan = tenex::explain();
    CHECK_MESSAGE(plan.find("per-key gathered products") != std::string::npos, plan);
    CHECK_MESSAGE(plan.find("grouped with equal domains") != std::string::npos, plan);
    CHECK(stats.flops == doctest::Approx(2.0 * n * 9 * 11));  // every key: 9 k times 11 j
    Tensor<double> dense_masked;
    {
      const PassesScope scope(kDenseMasked);
      dense_masked = run();
    }
    check_equal(sparse, dense_masked);
    Tensor<double> reference;
    reference("i,j") = masked(a, ik)("i,k") * b("k,j");
    check_equal(sparse, masked(reference, ij));
  }
}

TEST_CASE_TEMPLATE("sparse evaluation: where the maps allow much, the product runs as one dense GEMM, masked", T, float,
                   double) {
  // What the passes make of the statements is the subject: every pass, whatever the suite runs under.
  EnvironmentScope all_passes("TENEX_PASSES", "all");
  // n = 200: at 50% the per-key products are estimated slower than one dense GEMM and the
  // dense one is chosen; at 2% (and at any density of a small product) the per-key ones.
  const std::size_t n = 200;
  Tensor<T> a(tenex::Shape{n, n}), b(tenex::Shape{n, n});
  tenex::fill_random(a, 81);
  tenex::fill_random(b, 82);
  for (double density : {0.5, 0.02}) {
    CAPTURE(density);
    const SparseMap ik = random_map(n, n, density, 83, 9), ij = random_map(n, n, density, 84);
    auto run = [&] { return product_with_maps(a, b, ik, ij); };
    const Tensor<T> chosen = run();
    const std::string plan = tenex::explain();
    const bool dense = density > 0.1;
    CHECK_MESSAGE(
        plan.find(dense ? "dense GEMM on the expanded operands" : "per-key gathered products") != std::string::npos,
        plan);
    CHECK_MESSAGE(plan.find("evaluated on their allowed elements only") != std::string::npos, plan);
    Tensor<T> dense_masked;
    {
      const PassesScope scope(kDenseMasked);
      dense_masked = run();
    }
    const double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-11;
    CHECK(max_relative_difference(chosen, dense_masked) <= tolerance);
    // Zeros where the map i->j excludes.
    const std::vector<T> values = chosen.to_vector();
    std::size_t outside = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) outside += !ij.allows({i}, {j}) && values[i * n + j] != T(0) ? 1 : 0;
    }
    CHECK(outside == 0);
  }
}
