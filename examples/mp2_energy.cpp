// The MP2 correlation energy of a synthetic closed-shell molecule, from the
// orbitals to the energy, the way a quantum chemist writes it:
//
//   1. Roothaan equations  F C = S C e   (S symmetric positive definite):
//        (C, e) = eigen_solve(F, S); occupied orbitals are the nocc lowest.
//   2. Orbital blocks      Co = C[:, :nocc], Cv = C[:, nocc:]   (slice)
//   3. Transformation      B(Q,i,a) = sum_mn Bao(Q,m,n) Co(m,i) Cv(n,a)
//   4. MP2 (density fitting, spin-adapted):
//        V(i,a,j,b) = sum_Q B(Q,i,a) B(Q,j,b)
//        T(i,a,j,b) = V(i,a,j,b) / (e_i - e_a + e_j - e_b)
//        E          = sum T(i,a,j,b) (2 V(i,a,j,b) - V(i,b,j,a))
//
// The Fock and overlap matrices and the atomic-orbital factors Bao are random
// but shaped like real ones: S = I plus a small positive semidefinite part, F
// = diagonal orbital-like energies (occupied in [-1, -0.5), virtual in [0.5,
// 2)) plus a small symmetric coupling, Bao small and symmetric in (m, n).
//
//   mp2_energy [--nocc 20] [--nvirt 120] [--naux 400] [--dot mp2.dot] [--check] [--distributed]
//   mpirun -n 4 mp2_energy --distributed        (builds with TENEX_HAS_DIST)
//
// Prints each stage's time, the energy and the GFLOP/s tenex counted; writes
// the optimized graph of the MP2 stage as Graphviz DOT (and SVG when `dot` is
// installed). --check verifies F C = S C e and C^T S C = I, recomputes the
// energy with plain loops from the transformed factors, and exits with 1 when
// anything differs by more than 1e-10 (relative).
#include <tenex/tenex.hpp>

#if TENEX_HAS_DIST
#include <mpi.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Options {
  std::size_t nocc = 20;
  std::size_t nvirt = 120;
  std::size_t naux = 400;
  std::string dot = "mp2.dot";
  bool check = false;
  bool distributed = false;  // every set on the distributed backend (ScaLAPACK over MPI)
  std::size_t block = 64;    // its block size
};

void usage(std::FILE* to) {
  std::fprintf(
      to,
      "usage: mp2_energy [--nocc N] [--nvirt N] [--naux N] [--dot PATH] [--check] [--distributed [--block N]]\n"
      "  --nocc N    occupied orbitals (default 20)\n"
      "  --nvirt N   virtual orbitals (default 120)\n"
      "  --naux N    auxiliary functions (default 400)\n"
      "  --dot PATH  where to write the graph (default mp2.dot; an SVG next to it when\n"
      "              Graphviz's `dot` is installed)\n"
      "  --check     recompute the energy with plain loops; exit 1 if they differ\n"
      "  --distributed  run every set on the distributed backend, under mpirun (every rank\n"
      "              runs the same program; rank 0 prints)\n"
      "  --block N   block size of the distributed backend's block-cyclic layout (default 64)\n");
}

// Returns false (after saying why) on bad arguments.
bool parse(int argc, char** argv, Options& options) {
  for (int arg = 1; arg < argc; ++arg) {
    const std::string_view name = argv[arg];
    if (name == "--check") {
      options.check = true;
      continue;
    }
    if (name == "--distributed") {
      options.distributed = true;
      continue;
    }
    if (name == "-h" || name == "--help") {
      usage(stdout);
      std::exit(0);
    }
    if (arg + 1 >= argc) {
      std::fprintf(stderr, "mp2_energy: %s needs a value\n", argv[arg]);
      return false;
    }
    const char* value = argv[++arg];
    if (name == "--dot") {
      options.dot = value;
      continue;
    }
    std::size_t* size = name == "--nocc"    ? &options.nocc
                        : name == "--nvirt" ? &options.nvirt
                        : name == "--naux"  ? &options.naux
                        : name == "--block" ? &options.block
                                            : nullptr;
    if (size == nullptr) {
      std::fprintf(stderr, "mp2_energy: unknown option %s\n", argv[arg - 1]);
      return false;
    }
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(value, &end, 10);
    if (*value < '0' || *value > '9' || *end != '\0' || parsed == 0) {
      std::fprintf(stderr, "mp2_energy: %s takes a positive integer, not '%s'\n", argv[arg - 1], value);
      return false;
    }
    *size = static_cast<std::size_t>(parsed);
  }
  return true;
}

// Orbital energies uniform in [lo, hi), reproducibly for a seed.
tenex::Tensor<double> orbital_energies(std::size_t count, double lo, double hi, std::uint64_t seed) {
  tenex::Tensor<double> energies({count});
  tenex::fill_random(energies, seed);  // uniform in [-1, 1)
  double* e = energies.data();
  for (std::size_t p = 0; p < count; ++p) e[p] = lo + (hi - lo) * (e[p] + 1.0) / 2.0;
  return energies;
}

// The same energy with plain loops, straight from the formulas above.
double reference_energy(const tenex::Tensor<double>& B, const tenex::Tensor<double>& eo,
                        const tenex::Tensor<double>& ev, const Options& o) {
  const double* b = B.data();
  const std::size_t ov = o.nocc * o.nvirt;
  std::vector<double> V(ov * ov, 0.0);  // V[(i*nvirt + a)*ov + j*nvirt + b]
  for (std::size_t q = 0; q < o.naux; ++q) {
    const double* bq = b + q * ov;
    for (std::size_t ia = 0; ia < ov; ++ia) {
      for (std::size_t jb = 0; jb < ov; ++jb) V[ia * ov + jb] += bq[ia] * bq[jb];
    }
  }
  double energy = 0.0;
  for (std::size_t i = 0; i < o.nocc; ++i) {
    for (std::size_t a = 0; a < o.nvirt; ++a) {
      for (std::size_t j = 0; j < o.nocc; ++j) {
        for (std::size_t bb = 0; bb < o.nvirt; ++bb) {
          const double v = V[(i * o.nvirt + a) * ov + j * o.nvirt + bb];
          const double v_exchange = V[(i * o.nvirt + bb) * ov + j * o.nvirt + a];
          const double denominator = eo.at(i) - ev.at(a) + eo.at(j) - ev.at(bb);
          energy += v / denominator * (2.0 * v - v_exchange);
        }
      }
    }
  }
  return energy;
}

// Catches the graph of the sets evaluated while it lives: TENEX_DUMP_GRAPH=DIR
// makes tenex write each evaluated set's optimized graph to DIR/set-N.dot, so
// this points it at a scratch directory (and restores it afterwards).
class GraphCapture {
 public:
  GraphCapture() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tenex-mp2-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
    if (const char* old = std::getenv("TENEX_DUMP_GRAPH")) previous_ = old;
    if (!dir_.empty()) setenv("TENEX_DUMP_GRAPH", dir_.c_str(), 1);
  }
  ~GraphCapture() {
    stop();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

  void stop() {
    if (previous_) {
      setenv("TENEX_DUMP_GRAPH", previous_->c_str(), 1);
    } else {
      unsetenv("TENEX_DUMP_GRAPH");
    }
  }
  /// Copies the graph of the last set evaluated to `path`; false if there is none.
  bool save_last(const std::filesystem::path& path) const {
    std::filesystem::path last;
    long newest = -1;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
      const std::string name = entry.path().filename().string();  // set-N.dot
      if (name.rfind("set-", 0) != 0) continue;
      const long number = std::strtol(name.c_str() + 4, nullptr, 10);
      if (number > newest) newest = number, last = entry.path();
    }
    if (newest < 0) return false;
    std::filesystem::copy_file(last, path, std::filesystem::copy_options::overwrite_existing, error);
    return !error;
  }

 private:
  std::filesystem::path dir_;
  std::optional<std::string> previous_;
};

// Single-quotes `text` for the shell.
std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Writes the DOT file, and an SVG next to it when Graphviz is installed.
void save_graph(const GraphCapture& capture, const std::string& dot_path) {
  if (!capture.save_last(dot_path)) {
    std::printf("  graph        could not write %s\n", dot_path.c_str());
    return;
  }
  std::printf("  graph        %s", dot_path.c_str());
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    const bool has_dot_suffix = dot_path.size() > 4 && dot_path.compare(dot_path.size() - 4, 4, ".dot") == 0;
    const std::string svg_path = (has_dot_suffix ? dot_path.substr(0, dot_path.size() - 4) : dot_path) + ".svg";
    const std::string command = "dot -Tsvg " + shell_quote(dot_path) + " -o " + shell_quote(svg_path);
    if (std::system(command.c_str()) == 0) std::printf(", %s", svg_path.c_str());
  }
  std::printf("\n");
}

}  // namespace

// Seconds since `start`.
double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Largest |x| of a tensor.
double max_abs(const tenex::Tensor<double>& t) {
  double m = 0.0;
  const double* p = t.data();
  for (std::size_t k = 0; k < t.size(); ++k) m = std::max(m, std::abs(p[k]));
  return m;
}

int run(const Options& o);
// Under --distributed only rank 0 writes the graph files.
bool writes_graph = true;

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    usage(stderr);
    return 2;
  }
  if (!o.distributed) return run(o);
#if TENEX_HAS_DIST
  // SPMD: every rank runs the same sets; the distributed backend splits each one over the
  // ranks (plain Tensor results come back whole on every rank). Rank 0 prints.
  MPI_Init(&argc, &argv);
  int status = 1;
  {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    writes_graph = rank == 0;
    if (rank != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;
    try {
      tenex::dist::Context context(MPI_COMM_WORLD, {.grid_rows = 0, .grid_cols = 0, .block_size = o.block});
      tenex::set_default_backend(tenex::BackendKind::distributed);
      std::printf("distributed: %d ranks, %s\n", context.size(), context.describe().c_str());
      status = run(o);
      tenex::set_default_backend(tenex::BackendKind::cpu);
    } catch (const tenex::Error& e) {
      std::fprintf(stderr, "mp2_energy: %s\n", e.what());
    }
  }
  MPI_Finalize();
  return status;
#else
  std::fprintf(stderr,
               "mp2_energy: --distributed needs a tenex built with the distributed backend (TENEX_HAS_DIST 0)\n");
  return 2;
#endif
}

int run(const Options& o) {
  try {
    using tenex::Tensor;
    const std::size_t nbf = o.nocc + o.nvirt;
    std::printf("MP2 correlation energy: %zu occupied, %zu virtual (%zu basis functions), %zu auxiliary\n", o.nocc,
                o.nvirt, nbf, o.naux);

    // Synthetic inputs. S: identity plus a small positive semidefinite part.
    Tensor<double> X({nbf, nbf}), Y({nbf, nbf}), S, F, Bao({o.naux, nbf, nbf});
    tenex::fill_random(X, 11);
    tenex::fill_random(Y, 12);
    Tensor<double> identity({nbf, nbf});
    for (std::size_t m = 0; m < nbf; ++m) identity.at(m, m) = 1.0;
    S("m,n") = identity("m,n") + (0.2 / double(nbf)) * X("m,k") * X("n,k");
    // F: orbital-like energies on the diagonal, a small symmetric coupling off it.
    Tensor<double> levels = orbital_energies(nbf, 0.0, 0.0, 0);
    {
      Tensor<double> occupied = orbital_energies(o.nocc, -1.0, -0.5, 1);
      Tensor<double> virtuals = orbital_energies(o.nvirt, 0.5, 2.0, 2);
      double* l = levels.data();
      for (std::size_t p = 0; p < nbf; ++p) l[p] = p < o.nocc ? occupied.at(p) : virtuals.at(p - o.nocc);
    }
    Tensor<double> diagonal({nbf, nbf});
    for (std::size_t m = 0; m < nbf; ++m) diagonal.at(m, m) = levels.at(m);
    F("m,n") = diagonal("m,n") + (0.02 / std::sqrt(double(nbf))) * (Y("m,n") + Y("n,m"));
    // Bao: small, symmetric in (m, n).
    tenex::fill_random(Bao, 2024);
    Bao("Q,m,n") = (0.075 / std::sqrt(double(o.naux))) * (Bao("Q,m,n") + Bao("Q,n,m"));
    Bao.wait();

    double flops = 0.0;
    const auto start = std::chrono::steady_clock::now();

    // 1. Roothaan equations: one generalized eigenproblem, both factors from one sygvd.
    Tensor<double> C, e;
    std::make_pair(C("m,n"), e("n")) = tenex::eigen_solve(F("m,n"), S("m,n"));  // vectors are columns
    flops += tenex::last_run_stats().flops;
    C.wait();
    const double t_roothaan = since(start);

    // 2 + 3. Occupied and virtual blocks, and the transformation of the factors: one set,
    // the three-factor product ordered by flop count.
    auto stage = std::chrono::steady_clock::now();
    Tensor<double> B, eo, ev;
    {
      // Labels are names: the same C read as (m,i) and as (n,a) gives the two blocks.
      auto Co = tenex::slice(C("m,i"), {0, 0}, {nbf, o.nocc});
      auto Cv = tenex::slice(C("n,a"), {0, o.nocc}, {nbf, nbf});
      eo("i") = tenex::slice(e("i"), {0}, {o.nocc});
      ev("a") = tenex::slice(e("a"), {o.nocc}, {nbf});
      B("Q,i,a") = Bao("Q,m,n") * Co * Cv;
    }
    flops += tenex::last_run_stats().flops;
    B.wait();
    const double t_transform = since(stage);

    // 4. MP2.
    GraphCapture capture;  // keeps the graph of the MP2 set for --dot
    stage = std::chrono::steady_clock::now();
    Tensor<double> V, D, T, E;
    D("i,a,j,b") = eo("i") - ev("a") + eo("j") - ev("b");  // one statement, one set: runs at the ';'
    flops += tenex::last_run_stats().flops;
    {
      // A named handle keeps the set open: the statements below are linked through it and
      // through their pending results, and run as one optimized graph when the scope closes.
      auto integrals = B("Q,i,a") * B("Q,j,b");
      V("i,a,j,b") = integrals;
      T("i,a,j,b") = V("i,a,j,b") / D("i,a,j,b");
      E("") = T("i,a,j,b") * (2.0 * V("i,a,j,b") - V("i,b,j,a"));
    }  // <- evaluated here
    capture.stop();
    flops += tenex::last_run_stats().flops;
    const double mp2 = E.at();
    const double t_mp2 = since(stage);
    const double seconds = since(start);

    std::printf("  roothaan     %.4f s   F C = S C e, %zu x %zu (sygvd)\n", t_roothaan, nbf, nbf);
    std::printf("  transform    %.4f s   B(Q,i,a) = Bao(Q,m,n) Co(m,i) Cv(n,a)\n", t_transform);
    std::printf("  mp2          %.4f s   V, D, T, E\n", t_mp2);
    std::printf("  E(MP2)       %.12f\n", mp2);
    std::printf("  wall time    %.4f s\n", seconds);
    std::printf("  performance  %.2f GFLOP/s (%.3f GFLOP counted by tenex)\n", flops / seconds * 1e-9, flops * 1e-9);
    if (writes_graph) save_graph(capture, o.dot);

    if (o.check) {
      // The defining identities of the eigenproblem, written in tenex.
      Tensor<double> residual, metric;
      residual("m,p") = F("m,n") * C("n,p") - S("m,n") * C("n,p") * e("p");
      metric("p,q") = C("m,p") * S("m,n") * C("n,q") - identity("p,q");
      const double eigen_error = std::max(max_abs(residual), max_abs(metric));
      const double reference = reference_energy(B, eo, ev, o);
      const double difference = std::abs(mp2 - reference) / std::abs(reference);
      const bool ok = difference <= 1e-10 && eigen_error <= 1e-10;
      std::printf(
          "  check        |FC - SCe|, |C^T S C - I| <= %.2e; plain loops give %.12f, relative "
          "difference %.2e: %s\n",
          eigen_error, reference, difference, ok ? "ok" : "FAILED (> 1e-10)");
      if (!ok) return 1;
    }
    return 0;
  } catch (const tenex::Error& e) {
    std::fprintf(stderr, "mp2_energy: %s\n", e.what());
    return 1;
  }
}
