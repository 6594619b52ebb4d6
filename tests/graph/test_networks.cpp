// Tensor networks as their users write them, factor by factor in loops: MPS norms and
// overlaps, PEPS norms and circuit amplitudes. Each value is checked against a reference of
// plain loops (transfer matrices, a state vector), with and without a memory limit; an
// order whose intermediate would overflow std::size_t is never the one that runs, and the
// order as written is never beaten by a worse one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using TD = tenex::Tensor<double>;

std::string label(const char* kind, std::size_t i) { return kind + std::to_string(i); }

TD random_tensor(const Shape& shape, std::uint64_t seed, double scale) {
  TD t(shape);
  tenex::fill_random(t, seed);
  std::vector<double> v = t.to_vector();
  for (double& x : v) x *= scale;
  return TD(shape, std::move(v));
}

/// An open MPS: site i has labels (b{i-1}, s{i}, b{i}) (no left bond on the first, no right on
/// the last), entries scaled so the norm stays near one over hundreds of sites.
std::vector<TD> mps(std::size_t sites, std::size_t bond, std::uint64_t seed) {
  std::vector<TD> a;
  for (std::size_t i = 0; i < sites; ++i) {
    const std::size_t l = i == 0 ? 1 : bond, r = i + 1 == sites ? 1 : bond;
    a.push_back(random_tensor(Shape{l, 2, r}, seed + i, 1.0 / std::sqrt(static_cast<double>(2 * l))));
  }
  return a;
}

/// <psi|psi> by left environments: E'(r, r') = sum E(l, l') A(l, s, r) A(l', s, r').
double mps_norm_reference(const std::vector<TD>& a) {
  std::vector<double> e{1.0};
  std::size_t n = 1;
  for (const TD& t : a) {
    const std::size_t l = t.shape().extent(0), r = t.shape().extent(2);
    std::vector<double> next(r * r, 0.0);
    for (std::size_t x = 0; x < l; ++x)
      for (std::size_t y = 0; y < l; ++y)
        for (std::size_t s = 0; s < 2; ++s)
          for (std::size_t u = 0; u < r; ++u)
            for (std::size_t w = 0; w < r; ++w) next[u * r + w] += e[x * n + y] * t.at(x, s, u) * t.at(y, s, w);
    e = std::move(next);
    n = r;
  }
  return e[0];
}

/// The factors' labels: ket "k" bonds, bra "q" bonds, shared physical "s".
std::string ket_labels(std::size_t i, std::size_t sites) {
  return (i == 0 ? std::string("kl") : label("k", i - 1)) + "," + label("s", i) + "," +
         (i + 1 == sites ? std::string("kr") : label("k", i));
}
std::string bra_labels(std::size_t i, std::size_t sites) {
  return (i == 0 ? std::string("ql") : label("q", i - 1)) + "," + label("s", i) + "," +
         (i + 1 == sites ? std::string("qr") : label("q", i));
}

double value_of(const TD& r) { return r.to_vector().at(0); }

}  // namespace

TEST_CASE("networks: an MPS norm of 100 sites, bond 16, written site by site") {
  const std::size_t sites = 100, bond = 16;
  std::vector<TD> a = mps(sites, bond, 7);
  const double expected = mps_norm_reference(a);
  SUBCASE("ket and bra of each site in turn") {
    TD r;
    {
      tenex::Multiplication<TD> p = a[0](ket_labels(0, sites)) * a[0](bra_labels(0, sites));
      for (std::size_t i = 1; i < sites; ++i) p = p * a[i](ket_labels(i, sites)) * a[i](bra_labels(i, sites));
      r("kl,kr,ql,qr") = p;
    }
    CHECK(value_of(r) == doctest::Approx(expected).epsilon(1e-9));
  }
  SUBCASE("the whole ket layer first: its written intermediate has 2^100 elements") {
    TD r;
    const std::string text = [&] {
      tenex::Multiplication<TD> ket = a[0](ket_labels(0, sites)) * a[1](ket_labels(1, sites));
      for (std::size_t i = 2; i < sites; ++i) ket = ket * a[i](ket_labels(i, sites));
      tenex::Multiplication<TD> bra = a[0](bra_labels(0, sites)) * a[1](bra_labels(1, sites));
      for (std::size_t i = 2; i < sites; ++i) bra = bra * a[i](bra_labels(i, sites));
      auto norm = ket * bra;
      std::string plan = tenex::explain(norm);
      r("kl,kr,ql,qr") = norm;
      return plan;
    }();
    CHECK(value_of(r) == doctest::Approx(expected).epsilon(1e-9));
    CHECK(text.find("tree of 200 factors") != std::string::npos);
    // Far fewer flops than the written order's 2^100-element intermediate.
    CHECK(text.find("contraction steps") != std::string::npos);  // folded: 199 steps are not listed
  }
}

TEST_CASE("networks: an overflowing intermediate is refused only in the order that runs") {
  const std::size_t sites = 70;
  std::vector<TD> a = mps(sites, 2, 11);
  auto write = [&](TD& r) {
    tenex::Multiplication<TD> ket = a[0](ket_labels(0, sites)) * a[1](ket_labels(1, sites));
    for (std::size_t i = 2; i < sites; ++i) ket = ket * a[i](ket_labels(i, sites));
    tenex::Multiplication<TD> bra = a[0](bra_labels(0, sites)) * a[1](bra_labels(1, sites));
    for (std::size_t i = 2; i < sites; ++i) bra = bra * a[i](bra_labels(i, sites));
    r("kl,kr,ql,qr") = ket * bra;
  };
  TD r;
  write(r);
  CHECK(value_of(r) == doctest::Approx(mps_norm_reference(a)).epsilon(1e-9));
  // Without the order pass the written order runs, and its 2^70-element ket is refused.
  ::setenv("TENEX_PASSES", "none", 1);
  TD s;
  CHECK_THROWS_AS((write(s), s.to_vector()), tenex::ShapeError);
  ::unsetenv("TENEX_PASSES");
}

namespace {

/// A factor of a network: its tensor and labels.
struct Factor {
  TD tensor;
  std::vector<std::string> labels;
};

std::string joined(const std::vector<std::string>& labels) {
  std::string s;
  for (const std::string& l : labels) s += (s.empty() ? "" : ",") + l;
  return s;
}

/// The product of every factor, summed over each label not in `output`, by one loop over every
/// assignment of every label: the reference, for networks of a few million assignments.
std::vector<double> naive_contract(const std::vector<Factor>& factors, const std::vector<std::string>& output) {
  std::vector<std::string> all = output;
  std::vector<std::size_t> extent;
  for (const Factor& f : factors) {
    for (std::size_t m = 0; m < f.labels.size(); ++m) {
      if (std::find(all.begin(), all.end(), f.labels[m]) == all.end()) all.push_back(f.labels[m]);
    }
  }
  extent.assign(all.size(), 0);
  for (const Factor& f : factors) {
    for (std::size_t m = 0; m < f.labels.size(); ++m) {
      extent[static_cast<std::size_t>(std::find(all.begin(), all.end(), f.labels[m]) - all.begin())] =
          f.tensor.shape().extent(m);
    }
  }
  std::vector<std::vector<std::size_t>> where(factors.size());  // each factor's modes as label numbers
  for (std::size_t i = 0; i < factors.size(); ++i) {
    for (const std::string& l : factors[i].labels) {
      where[i].push_back(static_cast<std::size_t>(std::find(all.begin(), all.end(), l) - all.begin()));
    }
  }
  std::size_t out_size = 1;
  for (std::size_t m = 0; m < output.size(); ++m) out_size *= extent[m];
  std::vector<double> out(out_size, 0.0);
  std::vector<std::size_t> at(all.size(), 0);
  std::vector<std::vector<double>> values;
  for (const Factor& f : factors) values.push_back(f.tensor.to_vector());
  for (;;) {
    double p = 1;
    for (std::size_t i = 0; i < factors.size() && p != 0; ++i) {
      std::size_t offset = 0;
      for (std::size_t m = 0; m < where[i].size(); ++m)
        offset = offset * factors[i].tensor.shape().extent(m) + at[where[i][m]];
      p *= values[i][offset];
    }
    std::size_t o = 0;
    for (std::size_t m = 0; m < output.size(); ++m) o = o * extent[m] + at[m];
    out[o] += p;
    std::size_t m = 0;
    for (; m < all.size(); ++m) {
      if (++at[m] < extent[m]) break;
      at[m] = 0;
    }
    if (m == all.size()) return out;
  }
}

/// The product of the factors written left to right, evaluated by tenex into `output`.
std::vector<double> tenex_contract(std::vector<Factor> factors, const std::vector<std::string>& output) {
  TD r;
  {
    tenex::Multiplication<TD> p =
        factors[0].tensor(joined(factors[0].labels)) * factors[1].tensor(joined(factors[1].labels));
    for (std::size_t i = 2; i < factors.size(); ++i) p = p * factors[i].tensor(joined(factors[i].labels));
    r(joined(output)) = p;
  }
  return r.to_vector();
}

/// One layer of an L x L PEPS (physical extent 2, bond D), bonds named with `prefix`.
std::vector<Factor> peps_layer(std::size_t n, std::size_t bond, const std::string& prefix, std::uint64_t seed) {
  std::vector<Factor> layer;
  for (std::size_t x = 0; x < n; ++x) {
    for (std::size_t y = 0; y < n; ++y) {
      std::vector<std::string> labels{"p" + std::to_string(x) + "_" + std::to_string(y)};
      std::vector<std::size_t> shape{2};
      auto bond_to = [&](std::size_t x0, std::size_t y0, char dir) {
        labels.push_back(prefix + dir + std::to_string(x0) + "_" + std::to_string(y0));
        shape.push_back(bond);
      };
      if (x > 0) bond_to(x - 1, y, 'v');
      if (x + 1 < n) bond_to(x, y, 'v');
      if (y > 0) bond_to(x, y - 1, 'h');
      if (y + 1 < n) bond_to(x, y, 'h');
      layer.push_back({random_tensor(Shape(shape), seed + x * n + y, 0.7), labels});
    }
  }
  return layer;
}

std::vector<Factor> peps_norm(std::size_t n, std::size_t bond, std::uint64_t seed) {
  std::vector<Factor> ket = peps_layer(n, bond, "k", seed), bra = peps_layer(n, bond, "b", seed);
  // The bra as the same tensors: <psi|psi>, written row by row (a site's ket, then its bra).
  std::vector<Factor> all;
  for (std::size_t i = 0; i < ket.size(); ++i) {
    all.push_back(ket[i]);
    all.push_back(bra[i]);
  }
  return all;
}

struct LimitGuard {
  ~LimitGuard() { tenex::set_memory_limit(0); }
};

}  // namespace

TEST_CASE("networks: a 3x3 PEPS norm against its state vector") {
  const std::vector<Factor> ket = peps_layer(3, 2, "k", 21);
  std::vector<std::string> physical;
  for (const Factor& f : ket) physical.push_back(f.labels[0]);
  const std::vector<double> psi = naive_contract(ket, physical);
  double expected = 0;
  for (double v : psi) expected += v * v;
  CHECK(tenex_contract(peps_norm(3, 2, 21), {}).at(0) == doctest::Approx(expected).epsilon(1e-10));
  // The state vector itself: a product with 9 kept labels.
  const std::vector<double> got = tenex_contract(ket, physical);
  REQUIRE(got.size() == psi.size());
  for (std::size_t i = 0; i < psi.size(); ++i) CHECK(got[i] == doctest::Approx(psi[i]).epsilon(1e-10));
}

TEST_CASE("networks: a 4x4 PEPS norm under a memory limit is sliced, and its value is the unsliced one") {
  LimitGuard guard;
  std::vector<Factor> net = peps_norm(4, 3, 5);
  const double unlimited = tenex_contract(net, {}).at(0);
  const std::string free_plan = tenex::explain();
  CHECK(free_plan.find("sliced") == std::string::npos);
  tenex::set_memory_limit(128 * 1024);
  const double limited = tenex_contract(net, {}).at(0);
  const std::string plan = tenex::explain();
  CAPTURE(plan);
  CHECK(plan.find("sliced") != std::string::npos);
  CHECK(limited == doctest::Approx(unlimited).epsilon(1e-10));
}

TEST_CASE("networks: a circuit amplitude <0|U|0> against a state vector") {
  const std::size_t qubits = 8, depth = 6;
  std::vector<double> state(std::size_t{1} << qubits, 0.0);
  state[0] = 1;
  std::vector<Factor> net;
  std::vector<std::string> wire(qubits);
  for (std::size_t q = 0; q < qubits; ++q) {
    wire[q] = "w" + std::to_string(q) + "_0";
    net.push_back({TD(Shape{2}, std::vector<double>{1, 0}), {wire[q]}});
  }
  std::uint64_t seed = 100;
  for (std::size_t layer = 0; layer < depth; ++layer) {
    for (std::size_t q = layer % 2; q + 1 < qubits; q += 2) {
      const TD g = random_tensor(Shape{2, 2, 2, 2}, ++seed, 0.6);  // g(out q, out q+1, in q, in q+1)
      const std::string a = "w" + std::to_string(q) + "_" + std::to_string(layer + 1);
      const std::string b = "w" + std::to_string(q + 1) + "_" + std::to_string(layer + 1);
      net.push_back({g, {a, b, wire[q], wire[q + 1]}});
      wire[q] = a;
      wire[q + 1] = b;
      // The state vector: qubit q is bit q of the index.
      std::vector<double> next(state.size(), 0.0);
      for (std::size_t i = 0; i < state.size(); ++i) {
        const std::size_t iq = i >> q & 1, iq1 = i >> (q + 1) & 1;
        for (std::size_t oq = 0; oq < 2; ++oq)
          for (std::size_t oq1 = 0; oq1 < 2; ++oq1) {
            const std::size_t j = (i & ~(std::size_t{3} << q)) | oq << q | oq1 << (q + 1);
            next[j] += g.at(oq, oq1, iq, iq1) * state[i];
          }
      }
      state = std::move(next);
    }
  }
  for (std::size_t q = 0; q < qubits; ++q) net.push_back({TD(Shape{2}, std::vector<double>{1, 0}), {wire[q]}});
  CHECK(tenex_contract(net, {}).at(0) == doctest::Approx(state[0]).epsilon(1e-10));
}

TEST_CASE("networks: the chosen tree is written to the plan file and read back") {
  const std::string path = "networks_test_plans.txt";
  std::vector<Factor> net = peps_norm(3, 2, 31);  // 18 factors: searched, not ordered exactly
  std::vector<Factor> ket = peps_layer(3, 2, "k", 31);
  std::vector<std::string> physical;
  for (const Factor& f : ket) physical.push_back(f.labels[0]);
  const std::vector<double> psi = naive_contract(ket, physical);
  double expected = 0;
  for (double v : psi) expected += v * v;
  CHECK(tenex_contract(net, {}).at(0) == doctest::Approx(expected).epsilon(1e-10));
  tenex::save_plans(path);
  std::string text;
  {
    std::FILE* f = std::fopen(path.c_str(), "r");
    REQUIRE(f != nullptr);
    char buffer[4096];
    for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, got);
    std::fclose(f);
  }
  CHECK(text.find("\ntree v1:") != std::string::npos);
  tenex::load_plans(path);
  CHECK(tenex::plan_file_status().find("contraction trees") != std::string::npos);
  std::remove(path.c_str());
}
