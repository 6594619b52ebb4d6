// What the distributed backend sends over MPI, measured, beside the communication model of
// docs/distributed.md (communication_model.hpp). The executable carries a PMPI shim
// (mpi_counters.cpp) that counts every message and byte this rank sends, ScaLAPACK's and
// BLACS's included; for each kind of statement, at each block size, rank 0 prints the mean
// and the largest bytes and messages per rank, the model's bytes and measured / model.
//
//   for n in 1 2 3 4; do
//     export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
//     mpirun --oversubscribe --allow-run-as-root -n $n build/bench/bench_dist_comm
//   done
//   bench_dist_comm [--n 512] [--occ 10] [--virt 40,150,160] [--blocks 16,64]
//
// Kinds: a permutation (a remap only), a product (p?gemm), a p?gemr2d block copy (called
// directly, as a batched contraction cuts a batch), an operand replicated on every rank
// (MPI_Allgatherv), a plain Tensor target (the same gather), full reductions (norm2 and an
// inner product: one MPI_Allreduce; a sum to a scalar) and a Cholesky factorization (p?potrf).
#include <mpi.h>
#include <tenex/tenex.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "communication_model.hpp"
#include "mpi_counters.hpp"

extern "C" {
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc, const int* icsrc,
               const int* ictxt, const int* lld, int* info);
void pdgemr2d_(const int* m, const int* n, const double* a, const int* ia, const int* ja, const int* desca, double* b,
               const int* ib, const int* jb, const int* descb, const int* ictxt);
}

namespace {

struct Options {
  std::size_t n = 512, occ = 10;
  std::vector<std::size_t> blocks = {16, 64}, virt = {40, 150, 160};
};

bool parse(int argc, char** argv, Options& o) {
  for (int k = 1; k + 1 < argc; k += 2) {
    const std::string_view name = argv[k];
    if (name == "--blocks" || name == "--virt") {
      std::vector<std::size_t>& values = name == "--blocks" ? o.blocks : o.virt;
      values.clear();
      std::stringstream list(argv[k + 1]);
      for (std::string item; std::getline(list, item, ',');) values.push_back(std::strtoull(item.c_str(), nullptr, 10));
      continue;
    }
    std::size_t* slot = name == "--n" ? &o.n : name == "--occ" ? &o.occ : nullptr;
    if (!slot) return false;
    *slot = std::strtoull(argv[k + 1], nullptr, 10);
  }
  return argc % 2 == 1;
}

double entry(std::size_t i, std::size_t j) { return 1e-3 * static_cast<double>((i * 7 + j * 3) % 17); }

/// One row of the table: the counters of `run` over the ranks against `model`.
void report(int rank, const std::string& kind, const std::string& size, std::size_t block, double model,
            const std::function<void()>& run) {
  MPI_Barrier(MPI_COMM_WORLD);
  mpi_counters::reset();
  run();
  const mpi_counters::Counters mine = mpi_counters::counters();
  const mpi_counters::Summary s = mpi_counters::summarize(mine, MPI_COMM_WORLD);
  if (rank != 0) return;
  std::string calls;
  for (std::size_t c = 0; c < mpi_counters::call_kinds; ++c) {
    if (s.mean_bytes_by_call[c] <= 0) continue;
    char part[64];
    std::snprintf(part, sizeof part, "%s%s %.3g", calls.empty() ? "" : ", ",
                  mpi_counters::name(static_cast<mpi_counters::Call>(c)), s.mean_bytes_by_call[c] / 1e6);
    calls += part;
  }
  char ratio[16] = "-";  // no ratio to a model of 0 bytes
  if (model > 0) std::snprintf(ratio, sizeof ratio, "%.2f", s.mean_bytes / model);
  std::printf("%-10s %-14s %4zu %10.4f %10.4f %10.4f %6s %7.1f %7.0f %7.1f  %s\n", kind.c_str(), size.c_str(), block,
              s.mean_bytes / 1e6, s.max_bytes / 1e6, model / 1e6, ratio, s.mean_messages, s.max_messages,
              s.mean_control_messages, calls.c_str());
}

/// pdgemr2d_ of a rows x cols block starting at row `offset` of a (rows + offset) x cols
/// matrix into a matrix of its own, on the Context's grid and blocks.
void gemr2d_copy(const tenex::dist::Context& ctx, int rows, int cols, int offset) {
  int handle = Csys2blacs_handle(MPI_COMM_WORLD);
  int blacs = handle;
  Cblacs_gridinit(&blacs, "R", ctx.grid_rows(), ctx.grid_cols());
  Cfree_blacs_system_handle(handle);
  int pr = 0, pc = 0, myrow = 0, mycol = 0;
  Cblacs_gridinfo(blacs, &pr, &pc, &myrow, &mycol);
  const int nb = static_cast<int>(ctx.block_size()), zero = 0, one = 1, source_rows = rows + offset;
  auto make = [&](int m, int n, std::vector<double>& local, int* desc) {
    const int lr = numroc_(&m, &nb, &myrow, &zero, &pr), lc = numroc_(&n, &nb, &mycol, &zero, &pc);
    const int lld = lr > 1 ? lr : 1;
    int info = 0;
    descinit_(desc, &m, &n, &nb, &nb, &zero, &zero, &blacs, &lld, &info);
    local.assign(static_cast<std::size_t>(lld) * static_cast<std::size_t>(lc > 0 ? lc : 1), 1.0);
  };
  int source_desc[9], target_desc[9];
  std::vector<double> source, target;
  make(source_rows, cols, source, source_desc);
  make(rows, cols, target, target_desc);
  const int first_row = offset + 1;
  mpi_counters::reset();  // only the copy itself
  pdgemr2d_(&rows, &cols, source.data(), &first_row, &one, source_desc, target.data(), &one, &one, target_desc, &blacs);
  Cblacs_gridexit(blacs);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options o;
  int status = 0;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "usage: bench_dist_comm [--n N] [--occ N] [--virt V1,V2,...] [--blocks B1,B2,...]\n");
    status = 2;
  } else {
    try {
      using tenex::dist::DistributedTensor;
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      for (const std::size_t block : o.blocks) {
        tenex::dist::Context ctx(MPI_COMM_WORLD, {.grid_rows = 0, .grid_cols = 0, .block_size = block});
        struct OnDistributed {
          OnDistributed() { tenex::set_default_backend(tenex::BackendKind::distributed); }
          ~OnDistributed() { tenex::set_default_backend(tenex::BackendKind::cpu); }
        } on_distributed;
        const comm_model::Grid grid{static_cast<double>(ctx.grid_rows()), static_cast<double>(ctx.grid_cols())};
        if (rank == 0) {
          std::printf(
              "ranks %d (%s); data MB sent per rank (mean, max, model, mean / model), data messages per rank (mean, "
              "max), control messages (MPI_INT) per rank (mean)\n",
              ctx.size(), ctx.describe().c_str());
          std::printf("%-10s %-14s %4s %10s %10s %10s %6s %7s %7s %7s  %s\n", "kind", "size", "nb", "MB mean", "MB max",
                      "MB model", "ratio", "msg", "msg max", "ctl msg", "MB by call (mean)");
        }
        const std::size_t n = o.n, occ = o.occ;
        const std::string square = std::to_string(n) + "x" + std::to_string(n);
        DistributedTensor<double> a(ctx, {n, n}, [](const auto& i) { return entry(i[0], i[1]); });
        DistributedTensor<double> b(ctx, {n, n}, [](const auto& i) { return entry(i[1], i[0]); });
        for (const std::size_t modes : o.virt) {
          DistributedTensor<double> v(ctx, {occ, modes, occ, modes},
                                      [](const auto& i) { return entry(i[0] * 31 + i[1], i[2] * 17 + i[3]); });
          const double elements = static_cast<double>(occ * modes * occ * modes);
          report(rank, "remap", "ovov " + std::to_string(occ) + "," + std::to_string(modes), block,
                 comm_model::remap(grid, elements), [&] {
                   DistributedTensor<double> t(ctx);
                   t("i,b,j,a") = v("i,a,j,b");
                   t.wait();
                 });
        }
        const double dn = static_cast<double>(n);
        report(rank, "gemm", square, block, comm_model::gemm(grid, dn, dn, dn), [&] {
          DistributedTensor<double> c(ctx);
          c("i,j") = a("i,k") * b("k,j");
          c.wait();
        });
        {
          // One large operand and two small matrices: PBLAS keeps the large one in place.
          const std::size_t big = 2 * n, thin = 48;
          DistributedTensor<double> large(ctx, {big, big}, [](const auto& i) { return entry(i[0], i[1]); });
          DistributedTensor<double> narrow(ctx, {big, thin}, [](const auto& i) { return entry(i[1], i[0]); });
          const double db = static_cast<double>(big), dt = static_cast<double>(thin);
          report(rank, "gemm", std::to_string(big) + "^2x" + std::to_string(thin), block,
                 comm_model::gemm(grid, db, dt, db), [&] {
                   DistributedTensor<double> c(ctx);
                   c("i,j") = large("i,k") * narrow("k,j");
                   c.wait();
                 });
        }
        for (const std::size_t offset : {n / 3, block * static_cast<std::size_t>(ctx.grid_rows())}) {
          report(rank, "gemr2d", square + "+" + std::to_string(offset), block,
                 comm_model::gemr2d(grid, dn, dn, offset, block),
                 [&] { gemr2d_copy(ctx, static_cast<int>(n), static_cast<int>(n), static_cast<int>(offset)); });
        }
        {
          const std::size_t m = n * 4;
          DistributedTensor<double> x(ctx, {m}, [](const auto& i) { return entry(i[0], 1); });
          DistributedTensor<double> y(ctx, {m}, [](const auto& i) { return entry(i[0], 2); });
          report(rank, "replicated", std::to_string(m) + "+" + std::to_string(m), block,
                 comm_model::replicated(grid, 2.0 * static_cast<double>(m)), [&] {
                   DistributedTensor<double> r(ctx);
                   r("i,a") = x("i") - y("a");
                   r.wait();
                 });
        }
        report(rank, "gather_all", square, block, comm_model::replicated(grid, dn * dn), [&] {
          tenex::Tensor<double> whole;
          whole("i,j") = 2.0 * a("i,j");
        });
        report(rank, "reduction", square, block, comm_model::full_reduction(grid), [&] {
          tenex::Tensor<double> e;
          e("") = tenex::norm2(a("i,j"));
        });
        report(rank, "inner", square, block, comm_model::full_reduction(grid), [&] {
          tenex::Tensor<double> e;
          e("") = a("i,j") * b("i,j");
        });
        // A sum to a scalar outside a fused program: a local sum and one MPI_Allreduce, like the
        // fused full reductions.
        report(rank, "sum", square, block, comm_model::full_reduction(grid), [&] {
          tenex::Tensor<double> e;
          e("") = tenex::sum(a("i,j"), "i,j");
        });
        {
          DistributedTensor<double> spd(ctx, {n, n}, [n](const auto& i) {
            return i[0] == i[1] ? static_cast<double>(n) : 1.0 / (1.0 + static_cast<double>(i[0] + i[1]));
          });
          report(rank, "potrf", square, block, comm_model::potrf(grid, dn), [&] {
            DistributedTensor<double> l(ctx);
            l("i,j") = tenex::cholesky(spd("i,j"));
            l.wait();
          });
        }
      }
    } catch (const tenex::Error& e) {
      std::fprintf(stderr, "bench_dist_comm: %s\n", e.what());
      status = 1;
    }
  }
  MPI_Finalize();
  return status;
}
