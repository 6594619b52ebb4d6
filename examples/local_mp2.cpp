// Local MP2 with sparse maps: pair domains on a synthetic chain molecule, a cost that grows
// linearly with the chain's length (docs/sparse.md).
//
// A chain of `atoms` atoms one unit apart; each carries --occ occupied orbitals, --virt
// virtual orbitals and --aux auxiliary (fitting) functions. Locality is stated with maps:
//   i -> a       the virtuals within --radius atoms of occupied i (its orbital domain)
//   i -> Q       the fitting functions within --radius atoms of i
//   (i,j) -> (a,b)  the pairs within --pairs atoms of each other, each with the domain
//                   D_ij x D_ij, D_ij = the union of the domains of i and j
// and the density-fitted MP2 energy is written as in examples/mp2_energy.cpp:
//   V(i,a,j,b) = sum_Q B(Q,i,a) B(Q,j,b),  T = V / (e_i + e_j - e_a - e_b)
//   E = sum T(i,a,j,b) (2 V(i,a,j,b) - V(i,b,j,a))
// tenex evaluates it on the allowed elements only. The check compares it with the dense MP2
// restricted to the same domains, by plain loops (and, up to --dense-up-to atoms, with tenex
// evaluating the same set dense and masked): equal to 1e-10.
//
//   local_mp2 [--atoms 8,16,32,64] [--occ 1] [--virt 4] [--aux 8] [--radius 2] [--pairs 3]
//             [--dense-up-to 16] [--repeat 3]
//
// Prints per chain length the allowed elements, the sparse time (best of --repeat), the
// dense-masked time where run, and a least-squares line of time against length.
#include <tenex/tenex.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace {

using tenex::SparseMap;
using tenex::Tensor;

struct Options {
  std::vector<std::size_t> atoms{8, 16, 32, 64};
  std::size_t occ = 1, virt = 4, aux = 8;
  long radius = 2, pairs = 3;
  std::size_t dense_up_to = 16;
  int repeat = 3;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view name = argv[i];
    const char* value = argv[i + 1];
    if (name == "--atoms") {
      o.atoms.clear();
      for (const char* p = value; *p;) {
        char* end = nullptr;
        o.atoms.push_back(std::strtoul(p, &end, 10));
        if (end == p || o.atoms.back() == 0) return false;
        p = *end == ',' ? end + 1 : end;
      }
    } else if (name == "--occ") {
      o.occ = std::strtoul(value, nullptr, 10);
    } else if (name == "--virt") {
      o.virt = std::strtoul(value, nullptr, 10);
    } else if (name == "--aux") {
      o.aux = std::strtoul(value, nullptr, 10);
    } else if (name == "--radius") {
      o.radius = std::strtol(value, nullptr, 10);
    } else if (name == "--pairs") {
      o.pairs = std::strtol(value, nullptr, 10);
    } else if (name == "--dense-up-to") {
      o.dense_up_to = std::strtoul(value, nullptr, 10);
    } else if (name == "--repeat") {
      o.repeat = std::atoi(value);
    } else {
      return false;
    }
  }
  return (argc % 2) == 1 && o.occ && o.virt && o.aux && o.repeat > 0;
}

/// The chain: orbital and fitting counts, which atom each belongs to, and the maps.
struct Chain {
  std::size_t n_occ, n_virt, n_aux;
  std::vector<long> occ_atom, virt_atom, aux_atom;
  SparseMap domain, fitting, pairs;                   // i -> a, i -> Q, (i,j) -> (a,b)
  std::vector<std::vector<std::size_t>> pair_domain;  // by i * n_occ + j: D_ij (empty: no pair)
};

Chain make_chain(std::size_t atoms, const Options& o) {
  Chain c;
  c.n_occ = atoms * o.occ;
  c.n_virt = atoms * o.virt;
  c.n_aux = atoms * o.aux;
  for (std::size_t p = 0; p < c.n_occ; ++p) c.occ_atom.push_back(static_cast<long>(p / o.occ));
  for (std::size_t p = 0; p < c.n_virt; ++p) c.virt_atom.push_back(static_cast<long>(p / o.virt));
  for (std::size_t p = 0; p < c.n_aux; ++p) c.aux_atom.push_back(static_cast<long>(p / o.aux));
  std::vector<std::vector<std::size_t>> near(c.n_occ);
  for (std::size_t i = 0; i < c.n_occ; ++i) {
    std::vector<SparseMap::Index> a_list, q_list;
    for (std::size_t a = 0; a < c.n_virt; ++a) {
      if (std::labs(c.virt_atom[a] - c.occ_atom[i]) <= o.radius) {
        a_list.push_back({a});
        near[i].push_back(a);
      }
    }
    for (std::size_t q = 0; q < c.n_aux; ++q) {
      if (std::labs(c.aux_atom[q] - c.occ_atom[i]) <= o.radius) q_list.push_back({q});
    }
    c.domain.insert({i}, a_list);
    c.fitting.insert({i}, q_list);
  }
  c.pair_domain.resize(c.n_occ * c.n_occ);
  for (std::size_t i = 0; i < c.n_occ; ++i) {
    for (std::size_t j = 0; j < c.n_occ; ++j) {
      if (std::labs(c.occ_atom[i] - c.occ_atom[j]) > o.pairs) continue;
      std::vector<std::size_t> d;
      std::set_union(near[i].begin(), near[i].end(), near[j].begin(), near[j].end(), std::back_inserter(d));
      std::vector<SparseMap::Index> ab;
      for (std::size_t a : d) {
        for (std::size_t b : d) ab.push_back({a, b});
      }
      c.pairs.insert({i, j}, ab);
      c.pair_domain[i * c.n_occ + j] = std::move(d);
    }
  }
  return c;
}

/// Fitting factors that decay with distance, and orbital energies.
void make_integrals(const Chain& c, Tensor<double>& B, Tensor<double>& eo, Tensor<double>& ev) {
  B = Tensor<double>(tenex::Shape{c.n_aux, c.n_occ, c.n_virt});
  tenex::fill_random(B, 7);
  double* b = B.data();
  for (std::size_t q = 0; q < c.n_aux; ++q) {
    for (std::size_t i = 0; i < c.n_occ; ++i) {
      for (std::size_t a = 0; a < c.n_virt; ++a) {
        const double r = std::labs(c.aux_atom[q] - c.occ_atom[i]) + std::labs(c.occ_atom[i] - c.virt_atom[a]);
        b[(q * c.n_occ + i) * c.n_virt + a] *= 0.1 * std::exp(-0.5 * r);
      }
    }
  }
  eo = Tensor<double>(tenex::Shape{c.n_occ});
  ev = Tensor<double>(tenex::Shape{c.n_virt});
  tenex::fill_random(eo, 8);
  tenex::fill_random(ev, 9);
  for (std::size_t i = 0; i < c.n_occ; ++i) eo.at(i) = -1.0 + 0.25 * eo.at(i);
  for (std::size_t a = 0; a < c.n_virt; ++a) ev.at(a) = 1.0 + 0.5 * ev.at(a);
}

/// The local MP2 energy in tenex: one set, the maps registered on its expressions.
double local_energy(Tensor<double>& B, Tensor<double>& eo, Tensor<double>& ev, const Chain& c) {
  Tensor<double> E;
  {
    // A summed label shared by both factors of the energy's product would be summed there
    // (docs/einstein.md): each use of V sums its own fitting label (Q, P; R for the exchange).
    auto v = [&](const char* left, const char* right, const char* q) {
      auto x = B(std::string(q) + "," + left);
      auto y = B(std::string(q) + "," + right);
      x.set_sparse_map(std::string_view(left, 1), q, c.fitting);
      y.set_sparse_map(std::string_view(right, 1), q, c.fitting);
      return x * y;
    };
    auto direct = v("i,a", "j,b", "Q");  // V(i,a,j,b)
    direct.set_sparse_map("i", "a", c.domain);
    direct.set_sparse_map("j", "b", c.domain);
    direct.set_sparse_map("i,j", "a,b", c.pairs);
    auto denominator = (eo("i") + eo("j")) - (ev("a") + ev("b"));
    E("") = (direct / denominator) * (2.0 * v("i,a", "j,b", "P") - v("i,b", "j,a", "R"));
  }
  return E.at();
}

/// The dense MP2 restricted to the same domains, by plain loops: V and its exchange
/// partner summed over the fitting functions both i and j reach, for the allowed (i,j,a,b).
double reference_energy(const Tensor<double>& B, const Tensor<double>& eo, const Tensor<double>& ev, const Chain& c) {
  const double* b = B.data();
  auto at = [&](std::size_t q, std::size_t i, std::size_t a) { return b[(q * c.n_occ + i) * c.n_virt + a]; };
  double energy = 0;
  for (std::size_t i = 0; i < c.n_occ; ++i) {
    for (std::size_t j = 0; j < c.n_occ; ++j) {
      const std::vector<std::size_t>& d = c.pair_domain[i * c.n_occ + j];
      std::vector<std::size_t> qs;  // i -> Q and j -> Q both allow
      for (std::size_t q = 0; q < c.n_aux; ++q) {
        if (c.fitting.allows({i}, {q}) && c.fitting.allows({j}, {q})) qs.push_back(q);
      }
      for (std::size_t a : d) {
        for (std::size_t bb : d) {
          // The maps by label: a must be in i's domain and b in j's, in V and in its exchange.
          if (!c.domain.allows({i}, {a}) || !c.domain.allows({j}, {bb})) continue;
          double v = 0, x = 0;
          for (std::size_t q : qs) {
            v += at(q, i, a) * at(q, j, bb);
            x += at(q, i, bb) * at(q, j, a);
          }
          energy += v / (eo.at(i) + eo.at(j) - ev.at(a) - ev.at(bb)) * (2.0 * v - x);
        }
      }
    }
  }
  return energy;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: local_mp2 [--atoms 8,16,32,64] [--occ 1] [--virt 4] [--aux 8] [--radius 2] [--pairs 3]\n"
                 "                 [--dense-up-to 16] [--repeat 3]\n");
    return 2;
  }
  try {
    std::printf(
        "local MP2 on a chain: %zu occupied, %zu virtual, %zu fitting functions per atom; domains within %ld "
        "atoms, pairs within %ld\n",
        o.occ, o.virt, o.aux, o.radius, o.pairs);
    std::printf("%6s %8s %8s %12s %12s %10s %10s %20s %10s\n", "atoms", "occ", "virt", "V allowed", "V dense",
                "sparse s", "masked s", "E(local MP2)", "|dE|");
    bool ok = true;
    std::vector<double> xs, ys;
    for (std::size_t atoms : o.atoms) {
      const Chain c = make_chain(atoms, o);
      Tensor<double> B, eo, ev;
      make_integrals(c, B, eo, ev);
      double best = std::numeric_limits<double>::infinity(), energy = 0;
      for (int r = 0; r < o.repeat; ++r) {
        const auto start = std::chrono::steady_clock::now();
        energy = local_energy(B, eo, ev, c);
        best = std::min(best, seconds_since(start));
      }
      const double reference = reference_energy(B, eo, ev, c);
      double difference = std::abs(energy - reference) / std::max(std::abs(reference), 1e-300);
      double masked = -1;
      if (atoms <= o.dense_up_to) {  // the same set, evaluated dense and masked
        ::setenv("TENEX_PASSES", "cse,order,fold_scales,gemm_beta,collapse,fuse", 1);
        const auto start = std::chrono::steady_clock::now();
        const double dense = local_energy(B, eo, ev, c);
        masked = seconds_since(start);
        ::unsetenv("TENEX_PASSES");
        difference = std::max(difference, std::abs(dense - reference) / std::max(std::abs(reference), 1e-300));
        if (std::getenv("LOCAL_MP2_DEBUG")) std::printf("dense-masked %.14f reference %.14f\n", dense, reference);
      }
      ok = ok && difference <= 1e-10;
      const double dense_elements = std::pow(static_cast<double>(c.n_occ * c.n_virt), 2);
      std::printf("%6zu %8zu %8zu %12zu %12.4g %10.4f %10s %20.14f %10.2g\n", atoms, c.n_occ, c.n_virt,
                  c.pairs.pair_count(), dense_elements, best,
                  masked < 0 ? "-" : std::to_string(masked).substr(0, 8).c_str(), energy, difference);
      std::fflush(stdout);
      xs.push_back(static_cast<double>(atoms));
      ys.push_back(best);
    }
    if (xs.size() >= 2) {
      const double k = static_cast<double>(xs.size());
      double sx = 0, sy = 0, sxx = 0, sxy = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        sx += xs[i];
        sy += ys[i];
        sxx += xs[i] * xs[i];
        sxy += xs[i] * ys[i];
      }
      const double slope = (k * sxy - sx * sy) / (k * sxx - sx * sx);
      const double intercept = (sy - slope * sx) / k;
      double ss_res = 0, ss_tot = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        ss_res += std::pow(ys[i] - intercept - slope * xs[i], 2);
        ss_tot += std::pow(ys[i] - sy / k, 2);
      }
      std::printf("fit: seconds = %.4g + %.4g * atoms, R^2 = %.4f\n", intercept, slope,
                  ss_tot > 0 ? 1 - ss_res / ss_tot : 1.0);
    }
    std::printf("check: local MP2 %s the dense MP2 restricted to the same domains (1e-10)\n",
                ok ? "equals" : "DIFFERS FROM");
    return ok ? 0 : 1;
  } catch (const tenex::Error& e) {
    std::fprintf(stderr, "local_mp2: %s\n", e.what());
    return 1;
  }
}
