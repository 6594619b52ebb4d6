// The distributed suite's main: MPI around doctest. Every rank runs every test case (SPMD);
// the exit status is the worst of all ranks'.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  {
    doctest::Context context(argc, argv);
    if (rank != 0) context.setOption("minimal", true);  // failures only, from every rank
    status = context.run();
  }
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
