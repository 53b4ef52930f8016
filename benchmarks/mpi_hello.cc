// mpi_hello: the smallest MPI job, for launch benchmarks at scale
// (benchmarks/run-suite, section scale): MPI_Init, one MPI_Barrier over
// every rank, MPI_Finalize. Prints one line from rank 0 only, so that the
// output of thousands of ranks costs nothing to collect.
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int barrier = MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("mpi_hello: %d ranks passed the barrier\n", size);
  MPI_Finalize();
  return barrier == MPI_SUCCESS ? 0 : 1;
}
