// Two-site DMRG for the spin-1/2 Heisenberg chain H = sum_i S_i . S_{i+1} (open ends), written
// as a tensor-network physicist writes it: an MPO, left and right environments, the effective
// Hamiltonian as one contraction, tenex::eigsh for its ground state and tenex::svd over the label
// groups (a,s | t,b) with a Truncation for the new bond. Then a time step: exp(-tau H_eff) by
// tenex::expm_multiply from a random two-site state, which must reach the same energy.
//
//   dmrg [--sites N] [--bond D] [--sweeps S] [--quiet]
//
// Up to 14 sites the energy is checked against exact diagonalisation (the Sz = 0 sector built
// by hand, dense tenex::eigen_solve); the program exits 1 when they differ by more than 1e-9.
#include <tenex/tenex.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using tenex::Shape;
using tenex::Tensor;

struct Options {
  std::size_t sites = 12, bond = 64, sweeps = 4;
  bool quiet = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&] { return i + 1 < argc ? std::stoul(argv[++i]) : 0UL; };
    if (arg == "--sites") o.sites = next();
    else if (arg == "--bond") o.bond = next();
    else if (arg == "--sweeps") o.sweeps = next();
    else if (arg == "--quiet") o.quiet = true;
    else {
      std::fprintf(stderr, "usage: dmrg [--sites N] [--bond D] [--sweeps S] [--quiet]\n");
      std::exit(2);
    }
  }
  if (o.sites < 2 || o.bond < 1) {
    std::fprintf(stderr, "dmrg: at least 2 sites and bond 1\n");
    std::exit(2);
  }
  return o;
}

/// The Heisenberg MPO tensor W(w, v, s, u): w the left and v the right MPO bond, s the output and
/// u the input spin. Row 4 starts a term, column 0 ends one.
Tensor<double> heisenberg_mpo() {
  Tensor<double> w(Shape({5, 5, 2, 2}));
  const double sp[2][2] = {{0, 1}, {0, 0}}, sm[2][2] = {{0, 0}, {1, 0}}, sz[2][2] = {{0.5, 0}, {0, -0.5}};
  const double id[2][2] = {{1, 0}, {0, 1}};
  auto put = [&](std::size_t a, std::size_t b, const double(&op)[2][2], double factor) {
    for (std::size_t s = 0; s < 2; ++s)
      for (std::size_t u = 0; u < 2; ++u) w.at(a, b, s, u) = factor * op[s][u];
  };
  put(0, 0, id, 1);
  put(1, 0, sp, 1);
  put(2, 0, sm, 1);
  put(3, 0, sz, 1);
  put(4, 1, sm, 0.5);
  put(4, 2, sp, 0.5);
  put(4, 3, sz, 1);
  put(4, 4, id, 1);
  return w;
}

struct Chain {
  std::vector<Tensor<double>> mps;    // A_i(a, s, b)
  std::vector<Tensor<double>> left;   // left[i](a, w, c): sites < i contracted
  std::vector<Tensor<double>> right;  // right[i](b, w, d): sites > i contracted
  Tensor<double> w = heisenberg_mpo();
  mutable std::size_t products = 0;  // of the effective Hamiltonian with a vector
};

/// A random MPS with bonds min(2^i, 2^(N-i), D), made right-canonical by grouped QRs from the right.
Chain initial_chain(const Options& o) {
  Chain c;
  const std::size_t n = o.sites;
  std::vector<std::size_t> bonds(n + 1, 1);
  for (std::size_t i = 1; i < n; ++i) {
    const std::size_t from_left = i < 30 ? (std::size_t{1} << i) : o.bond;
    const std::size_t from_right = n - i < 30 ? (std::size_t{1} << (n - i)) : o.bond;
    bonds[i] = std::min({from_left, from_right, o.bond});
  }
  for (std::size_t i = 0; i < n; ++i) {
    c.mps.emplace_back(Shape({bonds[i], 2, bonds[i + 1]}));
    tenex::fill_random(c.mps.back(), 100 + i);
  }
  for (std::size_t i = n - 1; i > 0; --i) {
    Tensor<double> q, r, previous;
    tenex::tie(q("s,b,k"), r("k,a")) = tenex::qr(c.mps[i]("a,s,b"), "s,b");
    c.mps[i]("k,s,b") = q("s,b,k");
    previous("x,t,k") = c.mps[i - 1]("x,t,a") * r("k,a");
    c.mps[i - 1] = previous;
  }
  c.left.resize(n);
  c.right.resize(n);
  c.left[0] = Tensor<double>(Shape({1, 5, 1}));
  c.left[0].at(0, 4, 0) = 1.0;
  c.right[n - 1] = Tensor<double>(Shape({1, 5, 1}));
  c.right[n - 1].at(0, 0, 0) = 1.0;
  for (std::size_t i = n - 1; i > 0; --i) {
    c.right[i - 1]("a,w,c") = c.mps[i]("a,s,b") * c.w("w,v,s,u") * c.right[i]("b,v,d") * c.mps[i]("c,u,d");
  }
  return c;
}

/// y = H_eff x on the two sites (i, i + 1).
struct TwoSite {
  const Chain& c;
  std::size_t i;
  void operator()(const Tensor<double>& x, Tensor<double>& y) const {
    ++c.products;
    y("a,s,t,b") = c.left[i]("a,w,c") * c.w("w,v,s,u") * c.w("v,z,t,r") * x("c,u,r,d") * c.right[i + 1]("b,z,d");
  }
};

/// Optimizes the bond (i, i + 1) and moves the center right (or left): the energy.
double update_bond(Chain& c, std::size_t i, bool rightwards, const Options& o) {
  Tensor<double> theta;
  theta("a,s,t,b") = c.mps[i]("a,s,c") * c.mps[i + 1]("c,t,b");
  const auto [energies, states] = tenex::eigsh(TwoSite{c, i}, theta, {.k = 1, .tol = 1e-12});
  Tensor<double> u, s, vt;
  tenex::tie(u("a,s,k"), s("k"), vt("k,t,b")) =
      tenex::svd(states[0]("a,s,t,b"), "a,s", tenex::Truncation{.max_rank = o.bond, .cutoff = 1e-14});
  if (rightwards) {
    c.mps[i] = u;
    c.mps[i + 1]("k,t,b") = s("k") * vt("k,t,b");
    c.left[i + 1]("b,w,d") = c.left[i]("a,v,c") * c.mps[i]("a,s,b") * c.w("v,w,s,u") * c.mps[i]("c,u,d");
  } else {
    c.mps[i + 1] = vt;
    c.mps[i]("a,s,k") = u("a,s,k") * s("k");
    c.right[i]("a,w,c") = c.mps[i + 1]("a,s,b") * c.w("w,v,s,u") * c.right[i + 1]("b,v,d") * c.mps[i + 1]("c,u,d");
  }
  return energies[0];
}

/// The ground-state energy by exact diagonalisation in the Sz = 0 sector (dense eigen_solve).
double exact_energy(std::size_t n) {
  std::vector<unsigned> states;
  for (unsigned b = 0; b < (1u << n); ++b) {
    if (static_cast<std::size_t>(__builtin_popcount(b)) * 2 == n) states.push_back(b);
  }
  std::vector<std::size_t> index(1u << n, 0);
  for (std::size_t k = 0; k < states.size(); ++k) index[states[k]] = k;
  const std::size_t dim = states.size();
  Tensor<double> h(Shape({dim, dim}));
  for (std::size_t k = 0; k < dim; ++k) {
    const unsigned b = states[k];
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const bool up_i = (b >> i) & 1u, up_j = (b >> (i + 1)) & 1u;
      h.at(k, k) += up_i == up_j ? 0.25 : -0.25;
      if (up_i != up_j) h.at(index[b ^ (3u << i)], k) += 0.5;  // S+S- + S-S+ flips the pair
    }
  }
  Tensor<double> v, e;
  std::make_pair(v("i,k"), e("k")) = tenex::eigen_solve(h("i,j"));
  return e.at(0);
}

/// exp(-tau H_eff) by Krylov steps of tau = 5 from a random state at the bond (i, i + 1), until
/// the energy settles: the energy it reaches.
double imaginary_time_energy(const Chain& c, std::size_t i) {
  Tensor<double> phi(Shape({c.mps[i].shape().extent(0), 2, 2, c.mps[i + 1].shape().extent(2)})), hphi, norm, energy;
  tenex::fill_random(phi, 7);
  const TwoSite h{c, i};
  double previous = 0;
  for (int step = 0; step < 200; ++step) {
    phi = tenex::expm_multiply(h, phi, -5.0, 1e-12);
    norm("") = tenex::norm2(phi("a,s,t,b"));
    phi("a,s,t,b") = (1.0 / norm.at()) * phi("a,s,t,b");
    h(phi, hphi);
    energy("") = phi("a,s,t,b") * hphi("a,s,t,b");
    if (step > 0 && std::abs(energy.at() - previous) < 1e-13) break;
    previous = energy.at();
  }
  return energy.at();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Chain chain = initial_chain(o);
  double energy = 0;
  for (std::size_t sweep = 0; sweep < o.sweeps; ++sweep) {
    const auto start = std::chrono::steady_clock::now();
    chain.products = 0;
    for (std::size_t i = 0; i + 1 < o.sites; ++i) energy = update_bond(chain, i, true, o);
    for (std::size_t i = o.sites - 1; i-- > 0;) energy = update_bond(chain, i, false, o);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!o.quiet) {
      std::printf("sweep %zu: E = %.12f  (%.3f s, %zu products with H_eff)\n", sweep + 1, energy, seconds,
                  chain.products);
    }
  }
  std::printf("DMRG: %zu sites, bond %zu: E0 = %.12f\n", o.sites, o.bond, energy);
  if (!o.quiet) {
    std::printf("bond dimensions:");
    for (std::size_t i = 0; i + 1 < o.sites; ++i) std::printf(" %zu", chain.mps[i].shape().extent(2));
    std::printf("\n");
  }
  int status = 0;
  const std::size_t center = o.sites / 2 - 1;
  const double relaxed = imaginary_time_energy(chain, center);
  std::printf("exp(-tau H_eff) at bond %zu reaches E = %.12f (|dE| = %.1e)\n", center, relaxed,
              std::abs(relaxed - energy));
  if (std::abs(relaxed - energy) > 1e-8) status = 1;
  if (o.sites <= 14 && o.sites % 2 == 0) {
    const double exact = exact_energy(o.sites);
    std::printf("exact diagonalisation: E0 = %.12f (|dE| = %.1e)\n", exact, std::abs(exact - energy));
    if (std::abs(exact - energy) > 1e-9) status = 1;
  }
  return status;
}
