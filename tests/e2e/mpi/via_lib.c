/* Links only libgl_test_mpi_wrap.so, which links MPI (mpi_wrap.c). */
#include <stdio.h>

int gl_wrapped_world_size(int* argc, char*** argv);

int main(int argc, char** argv) {
  printf("world=%d\n", gl_wrapped_world_size(&argc, &argv));
  return 0;
}
