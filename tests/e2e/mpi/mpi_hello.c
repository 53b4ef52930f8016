/* mpi_hello: a plain C MPI program for the engine tests, built twice: with
 * MPICH's mpicc.mpich (mpi_hello_mpich) and with Open MPI (mpi_hello_ompi).
 * It links nothing of gpulaunch. After MPI_Init, an Allreduce of the ranks
 * and a Barrier, each rank prints one line:
 *   mpi_rank=R mpi_world=W sum=S rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK
 *   affinity=CPUS cpuset=$GPULAUNCH_CPUSET host=$GPULAUNCH_HOST
 * Options:
 *   --exit-rank R --exit-code C   rank R exits with C after Finalize
 *   --wait-dir DIR                write DIR/ready.R, then wait up to 60 s for
 *                                 SIGTERM or SIGINT: write DIR/<signal>.R and
 *                                 exit 128 + the signal (without Finalize)
 *   --marker TEXT                 ignored; lets a test find its ranks in /proc
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* Env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

/* "0-3,6" for the CPUs this process may run on. */
static void Affinity(char* out, size_t size) {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  size_t used = 0;
  out[0] = '\0';
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    int n = last > c ? snprintf(out + used, size - used, "%s%d-%d", used ? "," : "", c, last)
                     : snprintf(out + used, size - used, "%s%d", used ? "," : "", c);
    if (n < 0 || (size_t)n >= size - used) break;
    used += (size_t)n;
    c = last;
  }
}

static char g_term_path[4096], g_int_path[4096];
static volatile sig_atomic_t g_signal = 0;

static void OnSignal(int sig) {
  g_signal = sig;
  int fd = open(sig == SIGTERM ? g_term_path : g_int_path, O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) close(fd);
}

int main(int argc, char** argv) {
  int exit_rank = -1, exit_code = 0;
  const char* wait_dir = NULL;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!strcmp(argv[i], "--exit-rank")) exit_rank = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--exit-code")) exit_code = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--wait-dir")) wait_dir = argv[++i];
  }
  MPI_Init(&argc, &argv);
  int rank = 0, world = 0, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  char cpus[1024];
  Affinity(cpus, sizeof cpus);
  printf("mpi_rank=%d mpi_world=%d sum=%d rank=%s world=%s local=%s affinity=%s cpuset=%s host=%s\n", rank, world, sum,
         Env("RANK"), Env("WORLD_SIZE"), Env("LOCAL_RANK"), cpus, Env("GPULAUNCH_CPUSET"), Env("GPULAUNCH_HOST"));
  fflush(stdout);
  if (wait_dir) {
    snprintf(g_term_path, sizeof g_term_path, "%s/SIGTERM.%d", wait_dir, rank);
    snprintf(g_int_path, sizeof g_int_path, "%s/SIGINT.%d", wait_dir, rank);
    signal(SIGTERM, OnSignal);
    signal(SIGINT, OnSignal);
    char ready[4096];
    snprintf(ready, sizeof ready, "%s/ready.%d", wait_dir, rank);
    FILE* f = fopen(ready, "w");
    if (f) {
      fprintf(f, "%d\n", (int)getpid());
      fclose(f);
    }
    for (int i = 0; i < 600 && !g_signal; ++i) usleep(100000);
    if (g_signal) _exit(128 + g_signal);
  }
  MPI_Finalize();
  return rank == exit_rank ? exit_code : 0;
}
