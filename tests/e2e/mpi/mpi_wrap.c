/* A shared library that links MPI, for a program that does not link MPI
 * itself (mpi_hello_via_lib): gpulaunch must find the MPI a program needs
 * through its libraries. */
#include <mpi.h>

int gl_wrapped_world_size(int* argc, char*** argv) {
  int size = 0;
  MPI_Init(argc, argv);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Finalize();
  return size;
}
