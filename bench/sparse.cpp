// Benchmark: a product whose cost the sparse maps should set (docs/performance.md, "Sparse maps").
//
//   bench_sparse [--n 2000] [--repeat 3] [--densities 1,2,5,10,25,50] [--maps random,banded] [--tsv FILE]
//
// C("i,j") = A("i,k") * B("k,j") with maps i->k (on A) and i->j (on the product) of density
// d, of two kinds: "random", each i keeping a random, scattered d% of the k and of the j;
// "banded", blocks of 20 consecutive i (the orbitals of one atom) sharing a contiguous range
// of d% of the k and of the j, centred on the block. Three ways, alternating within each
// repetition so that load on the machine hits them alike, best of --repeat:
//   dense    the product without maps (what the maps should save)
//   masked   the same set with the maps, evaluated dense and masked (TENEX_PASSES without
//            "sparse": what tenex did before the maps paid)
//   sparse   the same set, evaluated on the allowed elements (per-key gathered GEMMs, or one
//            dense GEMM where the cost model estimates it faster: the "path" column)
// Each row gives the seconds, the peak bytes of intermediates (RunStats::peak_bytes), the
// allowed (i,k,j) triples, and the largest difference between sparse and masked results.
// Then, per kind, a least-squares line of the sparse time against the triples over the rows
// that ran the per-key products, with its R^2. --tsv writes the rows for bench/sparse_plot.gp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::SparseMap;
using tenex::Tensor;
using Clock = std::chrono::steady_clock;

SparseMap random_map(std::size_t n, double density, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto count = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(density * static_cast<double>(n))));
  SparseMap m;
  std::vector<std::size_t> all(n);
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t t = 0; t < n; ++t) all[t] = t;
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<SparseMap::Index> chosen;
    for (std::size_t t = 0; t < count; ++t) chosen.push_back({all[t]});
    m.insert({s}, chosen);
  }
  return m;
}

SparseMap banded_map(std::size_t n, double density) {
  constexpr std::size_t block = 20;
  const auto count = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(density * static_cast<double>(n))));
  SparseMap m;
  for (std::size_t s = 0; s < n; ++s) {
    const std::size_t centre = s / block * block + block / 2;
    const std::size_t first = std::min(n - count, centre >= count / 2 ? centre - count / 2 : 0);
    std::vector<SparseMap::Index> chosen;
    for (std::size_t t = 0; t < count; ++t) chosen.push_back({first + t});
    m.insert({s}, chosen);
  }
  return m;
}

struct Timing {
  double seconds = std::numeric_limits<double>::infinity();
  std::size_t peak = 0;
};

template <class F>
void measure(Timing& best, F&& run) {
  const auto start = Clock::now();
  Tensor<double> c = run();
  c.wait();
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  if (s < best.seconds) best.seconds = s;
  best.peak = tenex::last_run_stats().peak_bytes;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 2000;
  int repeat = 3;
  std::vector<double> densities{1, 2, 5, 10, 25, 50};
  std::string tsv;
  bool sparse_only = false;  // --sparse-only 1: for profiling the sparse path
  std::vector<std::string> kinds{"random", "banded"};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view arg = argv[i];
    if (arg == "--n") {
      n = static_cast<std::size_t>(std::strtoul(argv[i + 1], nullptr, 10));
    } else if (arg == "--repeat") {
      repeat = std::atoi(argv[i + 1]);
    } else if (arg == "--sparse-only") {
      sparse_only = std::atoi(argv[i + 1]) != 0;
    } else if (arg == "--maps") {
      kinds.clear();
      const std::string list = argv[i + 1];
      for (std::size_t at = 0; at <= list.size();) {
        std::size_t end = list.find(',', at);
        if (end == std::string::npos) end = list.size();
        kinds.push_back(list.substr(at, end - at));
        at = end + 1;
      }
    } else if (arg == "--tsv") {
      tsv = argv[i + 1];
    } else if (arg == "--densities") {
      densities.clear();
      std::string list = argv[i + 1];
      for (std::size_t at = 0; at <= list.size();) {
        std::size_t end = list.find(',', at);
        if (end == std::string::npos) end = list.size();
        densities.push_back(std::atof(list.substr(at, end - at).c_str()));
        at = end + 1;
      }
    } else {
      std::fprintf(
          stderr, "usage: bench_sparse [--n N] [--repeat R] [--densities 1,2,5] [--maps random,banded] [--tsv FILE]\n");
      return 2;
    }
  }
  Tensor<double> a(tenex::Shape{n, n}), b(tenex::Shape{n, n});
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  const std::string dense_passes = "cse,order,fold_scales,gemm_beta,collapse,fuse";

  std::printf("C(i,j) = A(i,k) B(k,j), n = %zu, maps i->k and i->j of density d, best of %d\n", n, repeat);
  std::ofstream out;
  if (!tsv.empty()) {
    out.open(tsv);
    out << "# density_percent\ttriples\tdense_s\tmasked_s\tsparse_s\tdense_peak\tmasked_peak\tsparse_peak\tpath("
           "0 per-key, 1 dense GEMM)\tmaps(0 random, 1 banded)\n";
  }
  for (std::size_t kind = 0; kind < kinds.size(); ++kind) {
    const bool banded = kinds[kind] == "banded";
    std::printf("\n%s maps\n", banded ? "banded" : "random");
    std::printf("%6s %12s %10s %10s %10s %9s %9s %12s %12s %12s %9s %10s %8s\n", "d%", "triples", "dense s", "masked s",
                "sparse s", "dense/sp", "mask/sp", "dense peak", "masked peak", "sparse peak", "mem d/sp", "max diff",
                "path");
    std::vector<double> xs, ys;
    for (double d : densities) {
      const SparseMap ik = banded ? banded_map(n, d / 100.0) : random_map(n, d / 100.0, 3);
      const SparseMap ij = banded ? banded_map(n, d / 100.0) : random_map(n, d / 100.0, 4);
      double triples = 0;
      for (std::size_t i = 0; i < n; ++i) {
        triples += static_cast<double>(ik.entries().at({i}).size() * ij.entries().at({i}).size());
      }
      auto with_maps = [&] {
        Tensor<double> c;
        auto aik = a("i,k");
        aik.set_sparse_map("i", "k", ik);
        auto x = aik * b("k,j");
        x.set_sparse_map("i", "j", ij);
        c("i,j") = x;
        return c;
      };
      auto plain = [&] {
        Tensor<double> c;
        c("i,j") = a("i,k") * b("k,j");
        return c;
      };
      Timing dense, masked, sparse;
      Tensor<double> masked_result, sparse_result;
      bool per_key = true;
      for (int r = 0; r < repeat; ++r) {
        if (!sparse_only || r == 0) {
          measure(dense, plain);
          ::setenv("TENEX_PASSES", dense_passes.c_str(), 1);
          measure(masked, [&] { return masked_result = with_maps(); });
          ::unsetenv("TENEX_PASSES");
        }
        measure(sparse, [&] { return sparse_result = with_maps(); });
        per_key = tenex::explain().find("per-key gathered products") != std::string::npos;
      }
      double diff = 0;
      const double* s = sparse_result.data();
      const double* m = masked_result.data();
      for (std::size_t x = 0; x < n * n; ++x) diff = std::max(diff, std::abs(s[x] - m[x]));
      std::printf("%6.0f %12.4g %10.4f %10.4f %10.4f %9.1f %9.1f %12zu %12zu %12zu %9.1f %10.2g %8s\n", d, triples,
                  dense.seconds, masked.seconds, sparse.seconds, dense.seconds / sparse.seconds,
                  masked.seconds / sparse.seconds, dense.peak, masked.peak, sparse.peak,
                  static_cast<double>(dense.peak) / static_cast<double>(std::max<std::size_t>(sparse.peak, 1)), diff,
                  per_key ? "per-key" : "dense");
      std::fflush(stdout);
      if (out) {
        out << d << '\t' << triples << '\t' << dense.seconds << '\t' << masked.seconds << '\t' << sparse.seconds << '\t'
            << dense.peak << '\t' << masked.peak << '\t' << sparse.peak << '\t' << (per_key ? 0 : 1) << '\t'
            << (banded ? 1 : 0) << '\n';
      }
      if (per_key) {
        xs.push_back(triples);
        ys.push_back(sparse.seconds);
      }
    }
    // Least squares over the per-key rows: sparse seconds = a + b * triples.
    const double k = static_cast<double>(xs.size());
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      sx += xs[i];
      sy += ys[i];
      sxx += xs[i] * xs[i];
      sxy += xs[i] * ys[i];
    }
    const double slope = xs.size() > 1 ? (k * sxy - sx * sy) / (k * sxx - sx * sx) : 0.0;
    const double intercept = k > 0 ? (sy - slope * sx) / k : 0.0;
    double ss_res = 0, ss_tot = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double fit = intercept + slope * xs[i];
      ss_res += (ys[i] - fit) * (ys[i] - fit);
      ss_tot += (ys[i] - sy / k) * (ys[i] - sy / k);
    }
    const double r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
    std::printf(
        "fit over the %zu per-key rows: sparse seconds = %.4g + %.4g * triples (%.3g ns per triple), R^2 = %.5f\n",
        xs.size(), intercept, slope, slope * 1e9, r2);
    if (out) out << "# fit" << (banded ? "_banded" : "") << '\t' << intercept << '\t' << slope << '\t' << r2 << '\n';
  }
  return 0;
}
