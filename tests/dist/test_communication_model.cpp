// The bytes each rank sends, counted by the PMPI shim of bench/mpi_counters.cpp (ScaLAPACK's
// and BLACS's messages included), against the communication model of docs/distributed.md
// (bench/communication_model.hpp): a remap, two products, a replicated operand, a plain Tensor
// target, a full reduction and a Cholesky factorization, on two grids per rank count. The
// mean over the ranks must lie within a stated factor of the model: 10% where the model is
// exact (a product that keeps C in place, gathers, reductions), 25% for remaps (the model
// assumes the elements scatter independently), a product that keeps A in place and p?potrf
// (edge panels). A remap that doubled its traffic, an
// operand gathered twice or a full reduction that gathered its tensor fails.
#include <doctest/doctest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "communication_model.hpp"
#include "mpi_counters.hpp"
#include "support/environment_scope.hpp"
#include "tenex/tenex.hpp"

using tenex::dist::Context;
using tenex::dist::DistributedTensor;
using DT = DistributedTensor<double>;

namespace {

std::vector<tenex::dist::ContextOptions> grids() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  switch (size) {
    case 2: return {{1, 2, 8}, {2, 1, 32}};
    case 4: return {{2, 2, 8}, {1, 4, 4}};
    default: return {{0, 0, 8}};
  }
}

struct OnDistributed {
  OnDistributed() { tenex::set_default_backend(tenex::BackendKind::distributed); }
  ~OnDistributed() { tenex::set_default_backend(tenex::BackendKind::cpu); }
};

double entry(std::size_t i, std::size_t j) { return 1e-2 * static_cast<double>((i * 7 + j * 3) % 17); }

/// Runs `f` on every rank with the counters reset; the counters over the ranks.
template <class F>
mpi_counters::Summary counted(F f) {
  MPI_Barrier(MPI_COMM_WORLD);
  mpi_counters::reset();
  tenex::dist::reset_phase_times();
  f();
  const mpi_counters::Counters mine = mpi_counters::counters();
  return mpi_counters::summarize(mine, MPI_COMM_WORLD);
}

double by(const mpi_counters::Summary& s, mpi_counters::Call c) {
  return s.mean_bytes_by_call[static_cast<std::size_t>(c)];
}

/// measured / model within [low, high]; on one rank both are 0.
void check_ratio(const std::string& what, double measured, double model, double low, double high) {
  INFO(what << ": measured " << measured << " bytes per rank, model " << model);
  if (model == 0) {
    CHECK(measured == 0);
    return;
  }
  CHECK(measured / model >= low);
  CHECK(measured / model <= high);
}

}  // namespace

TEST_CASE("communication model: remaps, products and Cholesky against the counted bytes") {
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    const comm_model::Grid grid{static_cast<double>(ctx.grid_rows()), static_cast<double>(ctx.grid_cols())};
    CAPTURE(ctx.describe());

    // A permutation of every mode: one remap (MPI_Alltoallv), and nothing else of size.
    const std::size_t o = 6, v = 70;
    DT t(ctx, {o, v, o, v}, [](const auto& i) { return entry(i[0] * 13 + i[1], i[2] * 11 + i[3]); });
    unsigned long long library_count = 0;
    const auto remap = counted([&] {
      DT p(ctx);
      p("i,b,j,a") = t("i,a,j,b");
      p.wait();
      library_count = tenex::dist::phase_times().remap_bytes_sent;
    });
    check_ratio("remap", by(remap, mpi_counters::Call::alltoallv), comm_model::remap(grid, double(o * v * o * v)), 0.75,
                1.25);
    CHECK(remap.mean_bytes == by(remap, mpi_counters::Call::alltoallv));
    // The library's own counter (phase_times) says what the shim saw, on this rank.
    CHECK(library_count == mpi_counters::counters()[mpi_counters::Call::alltoallv].bytes);

    // A product in place (no remap): p?gemm's panels, through BLACS.
    const std::size_t n = 96;
    DT a(ctx, {n, n}, [](const auto& i) { return entry(i[0], i[1]); });
    DT b(ctx, {n, n}, [](const auto& i) { return entry(i[1], i[0] + 1); });
    const auto gemm = counted([&] {
      DT c(ctx);
      c("i,j") = a("i,k") * b("k,j");
      c.wait();
    });
    CHECK(by(gemm, mpi_counters::Call::alltoallv) == 0);
    check_ratio("gemm", gemm.mean_bytes, comm_model::gemm(grid, double(n), double(n), double(n)), 0.9, 1.1);

    // A large matrix times a narrow one: PBLAS keeps the large one in place (moving it would
    // send 8 big^2 (pc - 1) / P bytes per rank).
    const std::size_t big = 192, thin = 40;
    DT large(ctx, {big, big}, [](const auto& i) { return entry(i[0], i[1]); });
    DT narrow(ctx, {big, thin}, [](const auto& i) { return entry(i[1], i[0]); });
    const auto kept = counted([&] {
      DT c(ctx);
      c("i,j") = large("i,k") * narrow("k,j");
      c.wait();
    });
    check_ratio("gemm, A kept", kept.mean_bytes, comm_model::gemm(grid, double(big), double(thin), double(big)), 0.75,
                1.25);

    // Cholesky: p?potrf.
    DT spd(ctx, {n, n}, [n](const auto& i) {
      return i[0] == i[1] ? static_cast<double>(n) : 1.0 / (1.0 + static_cast<double>(i[0] + i[1]));
    });
    const auto potrf = counted([&] {
      DT l(ctx);
      l("i,j") = tenex::cholesky(spd("i,j"));
      l.wait();
    });
    check_ratio("potrf", potrf.mean_bytes, comm_model::potrf(grid, double(n)), 0.75, 1.25);
  }
}

TEST_CASE("communication model: replicated operands, gathered targets and full reductions") {
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    const comm_model::Grid grid{static_cast<double>(ctx.grid_rows()), static_cast<double>(ctx.grid_cols())};
    CAPTURE(ctx.describe());

    // Two vectors broadcast over (i,a): each replicated once (MPI_Allgatherv of its entries).
    const std::size_t m = 40;
    DT x(ctx, {m}, [](const auto& i) { return entry(i[0], 1); });
    DT y(ctx, {m}, [](const auto& i) { return entry(i[0], 2); });
    const auto replicated = counted([&] {
      DT r(ctx);
      r("i,a") = x("i") - y("a");
      r.wait();
    });
    check_ratio("replicated", replicated.mean_bytes, comm_model::replicated(grid, 2.0 * m), 0.9, 1.1);

    // A plain Tensor target: the whole result on every rank, once.
    const std::size_t n = 48;
    DT a(ctx, {n, n}, [](const auto& i) { return entry(i[0], i[1]); });
    const auto gathered = counted([&] {
      tenex::Tensor<double> whole;
      whole("i,j") = 2.0 * a("i,j");
    });
    check_ratio("gather_all", gathered.mean_bytes, comm_model::replicated(grid, double(n * n)), 0.9, 1.1);

    // A full reduction (an inner product, with and without the passes): local sums and one
    // MPI_Allreduce of one value, never the tensor.
    DT b(ctx, {n, n}, [](const auto& i) { return entry(i[1], i[0] + 2); });
    const auto reduced = counted([&] {
      tenex::Tensor<double> e;
      e("") = a("i,j") * b("i,j");
    });
    check_ratio("full reduction", reduced.mean_bytes, comm_model::full_reduction(grid), 0.9, 1.1);

    // A sum to a scalar, fused or not (the passes off): the same local sum and one
    // MPI_Allreduce, never a remap of the tensor to the rank that holds the scalar.
    for (const char* passes : {"all", "none"}) {
      CAPTURE(passes);
      const EnvironmentScope scope("TENEX_PASSES", passes);
      const auto summed = counted([&] {
        tenex::Tensor<double> e;
        e("") = tenex::sum(a("i,j"), "i,j");
      });
      check_ratio("sum to a scalar", summed.mean_bytes, comm_model::full_reduction(grid), 0.9, 1.1);
    }
  }
}
