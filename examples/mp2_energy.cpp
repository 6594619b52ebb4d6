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
// 2)) plus a small symmetric coupling, Bao small and symmetric in (m, n), each
// element a function of its index (so that each rank can make its own part).
//
//   mp2_energy [--nocc 20] [--nvirt 120] [--naux 400] [--dot mp2.dot] [--check] [--report-memory]
//   mpirun -n 4 mp2_energy --distributed        (builds with TENEX_HAS_DIST)
//
// Prints each stage's time, the energy and the GFLOP/s tenex counted; writes
// the optimized graph of the MP2 stage as Graphviz DOT (and SVG when `dot` is
// installed). --check verifies F C = S C e and C^T S C = I, recomputes the
// energy with plain loops from the transformed factors, and exits with 1 when
// anything differs by more than 1e-10 (relative).
//
// --distributed holds every tensor of O(N^3) or O(N^4) elements (Bao, B, V, D,
// T) as a tenex::dist::DistributedTensor: each rank makes its blocks of Bao
// from the function of the index and keeps its blocks of the others; only
// the O(N^2) orbitals and the scalar energy are whole on every rank. There
// --check compares the energy with the one-process run's (made on rank 0).
// --report-memory prints each rank's peak resident memory (VmHWM).
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
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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
  bool report_memory = false;
};

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: mp2_energy [--nocc N] [--nvirt N] [--naux N] [--dot PATH] [--check] [--report-memory]\n"
               "                  [--distributed [--block N]]\n"
               "  --nocc N    occupied orbitals (default 20)\n"
               "  --nvirt N   virtual orbitals (default 120)\n"
               "  --naux N    auxiliary functions (default 400)\n"
               "  --dot PATH  where to write the graph (default mp2.dot; an SVG next to it when\n"
               "              Graphviz's `dot` is installed)\n"
               "  --check     recompute the energy with plain loops (--distributed: with one process);\n"
               "              exit 1 if they differ\n"
               "  --report-memory  print the peak resident memory (VmHWM) of the process (of each rank)\n"
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
    if (name == "--report-memory") {
      options.report_memory = true;
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

// The number fill_random(t, seed) puts at row-major offset k of a real tensor (splitmix64
// of seed + (k + 2) * golden ratio), uniform in [-1, 1): a function of the index alone.
double uniform_at(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = seed + (k + 2) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return 2.0 * (static_cast<double>(z >> 11) * 0x1.0p-53) - 1.0;
}

// Bao(Q,m,n): small, symmetric in (m, n), and a function of its index, so that each rank
// of a distributed run makes its own blocks and the one-process run the whole tensor.
double bao_element(const Options& o, std::size_t q, std::size_t m, std::size_t n) {
  const std::size_t nbf = o.nocc + o.nvirt;
  const double scale = 0.075 / std::sqrt(double(o.naux));
  return scale * (uniform_at(2024, (q * nbf + m) * nbf + n) + uniform_at(2024, (q * nbf + n) * nbf + m));
}

// The peak resident memory of this process so far (VmHWM), in bytes; 0 where unknown.
double peak_resident_bytes() {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0.0;
  char line[256];
  double kib = 0.0;
  while (std::fgets(line, sizeof line, status) != nullptr) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) kib = std::strtod(line + 6, nullptr);
  }
  std::fclose(status);
  return kib * 1024.0;
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

// Writes the DOT file, and an SVG next to it when Graphviz is installed; returns what to
// print about them.
std::string save_graph(const GraphCapture& capture, const std::string& dot_path) {
  if (!capture.save_last(dot_path)) return "could not write " + dot_path;
  std::string written = dot_path;
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    const bool has_dot_suffix = dot_path.size() > 4 && dot_path.compare(dot_path.size() - 4, 4, ".dot") == 0;
    const std::string svg_path = (has_dot_suffix ? dot_path.substr(0, dot_path.size() - 4) : dot_path) + ".svg";
    const std::string command = "dot -Tsvg " + shell_quote(dot_path) + " -o " + shell_quote(svg_path);
    if (std::system(command.c_str()) == 0) written += ", " + svg_path;
  }
  return written;
}

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

// The tensors of O(N^3) and O(N^4) elements (Bao, B, V, D, T): plain Tensors in one
// process, DistributedTensors under --distributed (each rank holds its blocks only).
struct OneProcess {
  using Big = tenex::Tensor<double>;
  Big empty() const { return Big(); }
  Big bao(const Options& o) const {
    const std::size_t nbf = o.nocc + o.nvirt;
    Big b({o.naux, nbf, nbf});
    double* p = b.data();
    for (std::size_t q = 0; q < o.naux; ++q) {
      for (std::size_t m = 0; m < nbf; ++m) {
        for (std::size_t n = 0; n < nbf; ++n) *p++ = bao_element(o, q, m, n);
      }
    }
    return b;
  }
};

#if TENEX_HAS_DIST
struct Distributed {
  const tenex::dist::Context& context;
  using Big = tenex::dist::DistributedTensor<double>;
  Big empty() const { return Big(context); }
  Big bao(const Options& o) const {  // each rank makes its own blocks
    const std::size_t nbf = o.nocc + o.nvirt;
    return Big(context, {o.naux, nbf, nbf}, [&o](const Big::Index& i) { return bao_element(o, i[0], i[1], i[2]); });
  }
};
#endif

struct Result {
  double energy = 0.0, flops = 0.0;
  double t_inputs = 0.0, t_roothaan = 0.0, t_transform = 0.0, t_mp2 = 0.0, seconds = 0.0;
  double eigen_error = 0.0;  // --check: max |FC - SCe|, |C^T S C - I|
  double reference = 0.0;    // --check, one process: the energy from plain loops
  std::string graph;         // the files the MP2 set's graph was written to
};

// The whole computation, the same statements for both kinds of tensors.
template <class Kind>
Result mp2(const Options& o, const Kind& kind, bool save_dot) {
  using tenex::Tensor;
  using Big = typename Kind::Big;
  const std::size_t nbf = o.nocc + o.nvirt;
  Result result;
  auto stage = std::chrono::steady_clock::now();

  // Synthetic inputs. S: identity plus a small positive semidefinite part.
  Tensor<double> X({nbf, nbf}), Y({nbf, nbf}), S, F;
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
  Big Bao = kind.bao(o);
  Bao.wait();
  result.t_inputs = since(stage);

  const auto start = std::chrono::steady_clock::now();
  // 1. Roothaan equations: one generalized eigenproblem, both factors from one sygvd.
  Tensor<double> C, e;
  std::make_pair(C("m,n"), e("n")) = tenex::eigen_solve(F("m,n"), S("m,n"));  // vectors are columns
  result.flops += tenex::last_run_stats().flops;
  C.wait();
  result.t_roothaan = since(start);

  // 2 + 3. Occupied and virtual blocks, and the transformation of the factors: one set,
  // the three-factor product ordered by flop count.
  stage = std::chrono::steady_clock::now();
  Big B = kind.empty();
  Tensor<double> eo, ev;
  {
    // Labels are names: the same C read as (m,i) and as (n,a) gives the two blocks.
    auto Co = tenex::slice(C("m,i"), {0, 0}, {nbf, o.nocc});
    auto Cv = tenex::slice(C("n,a"), {0, o.nocc}, {nbf, nbf});
    eo("i") = tenex::slice(e("i"), {0}, {o.nocc});
    ev("a") = tenex::slice(e("a"), {o.nocc}, {nbf});
    B("Q,i,a") = Bao("Q,m,n") * Co * Cv;
  }
  result.flops += tenex::last_run_stats().flops;
  B.wait();
  result.t_transform = since(stage);

  // 4. MP2.
  GraphCapture capture;  // keeps the graph of the MP2 set for --dot
  stage = std::chrono::steady_clock::now();
  Big V = kind.empty(), D = kind.empty(), T = kind.empty();
  Tensor<double> E;
  D("i,a,j,b") = eo("i") - ev("a") + eo("j") - ev("b");  // one statement, one set: runs at the ';'
  result.flops += tenex::last_run_stats().flops;
  {
    // A named handle keeps the set open: the statements below are linked through it and
    // through their pending results, and run as one optimized graph when the scope closes.
    auto integrals = B("Q,i,a") * B("Q,j,b");
    V("i,a,j,b") = integrals;
    T("i,a,j,b") = V("i,a,j,b") / D("i,a,j,b");
    E("") = T("i,a,j,b") * (2.0 * V("i,a,j,b") - V("i,b,j,a"));
  }  // <- evaluated here
  capture.stop();
  result.flops += tenex::last_run_stats().flops;
  result.energy = E.at();
  result.t_mp2 = since(stage);
  result.seconds = since(start);
  if (save_dot) result.graph = save_graph(capture, o.dot);

  if (o.check) {
    // The defining identities of the eigenproblem, written in tenex.
    Tensor<double> residual, metric;
    residual("m,p") = F("m,n") * C("n,p") - S("m,n") * C("n,p") * e("p");
    metric("p,q") = C("m,p") * S("m,n") * C("n,q") - identity("p,q");
    result.eigen_error = std::max(max_abs(residual), max_abs(metric));
    if constexpr (std::is_same_v<Big, Tensor<double>>) result.reference = reference_energy(B, eo, ev, o);
  }
  return result;
}

void print(const Result& r, const Options& o) {
  const std::size_t nbf = o.nocc + o.nvirt;
  std::printf("  inputs       %.4f s   S, F and Bao(Q,m,n)\n", r.t_inputs);
  std::printf("  roothaan     %.4f s   F C = S C e, %zu x %zu (sygvd)\n", r.t_roothaan, nbf, nbf);
  std::printf("  transform    %.4f s   B(Q,i,a) = Bao(Q,m,n) Co(m,i) Cv(n,a)\n", r.t_transform);
  std::printf("  mp2          %.4f s   V, D, T, E\n", r.t_mp2);
  std::printf("  E(MP2)       %.12f\n", r.energy);
  std::printf("  wall time    %.4f s   (roothaan to E)\n", r.seconds);
  std::printf("  performance  %.2f GFLOP/s (%.3f GFLOP counted by tenex)\n", r.flops / r.seconds * 1e-9,
              r.flops * 1e-9);
  if (!r.graph.empty()) std::printf("  graph        %s\n", r.graph.c_str());
}

// Prints the check; false when it failed.
bool report_check(const Result& r, double reference, const char* against) {
  const double difference = std::abs(r.energy - reference) / std::abs(reference);
  const bool ok = difference <= 1e-10 && r.eigen_error <= 1e-10;
  std::printf(
      "  check        |FC - SCe|, |C^T S C - I| <= %.2e; %s %.12f, relative "
      "difference %.2e: %s\n",
      r.eigen_error, against, reference, difference, ok ? "ok" : "FAILED (> 1e-10)");
  return ok;
}

void print_header(const Options& o) {
  std::printf("MP2 correlation energy: %zu occupied, %zu virtual (%zu basis functions), %zu auxiliary\n", o.nocc,
              o.nvirt, o.nocc + o.nvirt, o.naux);
}

int run(const Options& o) {
  try {
    print_header(o);
    const Result r = mp2(o, OneProcess{}, true);
    print(r, o);
    if (o.report_memory) std::printf("  memory       peak resident %.1f MB (VmHWM)\n", peak_resident_bytes() * 1e-6);
    if (o.check && !report_check(r, r.reference, "plain loops give")) return 1;
    return 0;
  } catch (const tenex::Error& e) {
    std::fprintf(stderr, "mp2_energy: %s\n", e.what());
    return 1;
  }
}

#if TENEX_HAS_DIST
// SPMD: every rank runs the same sets; the distributed backend splits each one over the
// ranks. Rank 0 prints. Every rank returns the same status (a failure on one rank is the
// same tenex::Error on all).
int run_distributed(const Options& o, const tenex::dist::Context& context) {
  try {
    print_header(o);
    tenex::dist::reset_phase_times();
    const Result r = mp2(o, Distributed{context}, context.rank() == 0);
    print(r, o);
    const tenex::dist::PhaseTimes phases = tenex::dist::phase_times();
    std::printf("  rank 0       %.4f s remapping (%.1f MB sent), %.4f s computing, %.4f s gathering\n",
                phases.remap_seconds, phases.remap_bytes_sent * 1e-6, phases.compute_seconds, phases.gather_seconds);
    if (o.report_memory) {
      std::vector<double> peaks(static_cast<std::size_t>(context.size()), 0.0);
      double mine = peak_resident_bytes();
      MPI_Gather(&mine, 1, MPI_DOUBLE, peaks.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      std::printf("  memory       peak resident (VmHWM) per rank, MB:");
      for (double peak : peaks) std::printf(" %.1f", peak * 1e-6);
      std::printf("\n");
    }
    if (!o.check) return 0;
    // The energy of the one-process run, on rank 0 (the others wait for it).
    double reference = 0.0;
    if (context.rank() == 0) {
      tenex::set_default_backend(tenex::BackendKind::cpu);
      Options one = o;
      one.check = false;
      reference = mp2(one, OneProcess{}, false).energy;
      tenex::set_default_backend(tenex::BackendKind::distributed);
    }
    MPI_Bcast(&reference, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return report_check(r, reference, "one process gives") ? 0 : 1;
  } catch (const tenex::Error& e) {
    std::fprintf(stderr, "mp2_energy: %s\n", e.what());
    return 1;
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    usage(stderr);
    return 2;
  }
  if (!o.distributed) return run(o);
#if TENEX_HAS_DIST
  MPI_Init(&argc, &argv);
  int status = 1;
  {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;
    try {
      tenex::dist::Context context(MPI_COMM_WORLD, {.grid_rows = 0, .grid_cols = 0, .block_size = o.block});
      tenex::set_default_backend(tenex::BackendKind::distributed);
      std::printf("distributed: %d ranks, %s\n", context.size(), context.describe().c_str());
      status = run_distributed(o, context);
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
