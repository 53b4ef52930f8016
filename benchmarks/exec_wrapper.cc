// The least any program between the engine and a rank can be: it execs its
// arguments and nothing else. launch_overhead_bench runs `mpirun -n 16
// exec_wrapper /bin/true` beside plain mpirun and gpulaunch, so every run
// shows what one extra exec a rank costs on the machine at hand; the shim,
// which also checks the rank in and supervises it, cannot cost less.
// Linked like the shim (static-pie where the toolchain can), so the two
// compare like for like.
//
//   exec_wrapper PROGRAM [ARG...]     exit 127 when PROGRAM cannot be run
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  execv(argv[1], argv + 1);
  return 127;
}
