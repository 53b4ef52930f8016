// rank_report: the first thing to run under gpulaunch. Every rank prints one
// line with its rank, host, CPU binding, memory node and GPUs as gpulaunch
// planned them, checks the environment contract against MPI's own view, and
// checks an MPI_Allreduce. Exit 0 only when every rank agrees.
//
//   gpulaunch -n 16 --oversubscribe build/bin/rank_report
//   options: --exit-rank R --exit-code C   rank R exits with C after the checks
//            --quiet                       only rank 0 prints the summary
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/strings.h"
#include "runtime/rank_env.h"

namespace {

std::string Affinity() { return gpulaunch::FormatIdList(gpulaunch::rt::BoundCpus()); }

// The contract's variable, "" when unset.
std::string Env(const char* name) { return gpulaunch::EnvOr(name, ""); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int exit_rank = -1, exit_code = 0;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--exit-rank") && i + 1 < argc) exit_rank = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--exit-code") && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--quiet")) quiet = true;
  }
  char host[256] = {0};
  gethostname(host, sizeof host - 1);

  // The contract must agree with MPI's own numbering.
  int problems = 0;
  using gpulaunch::HasEnv;
  if (HasEnv("RANK") && std::atoi(Env("RANK").c_str()) != rank) ++problems;
  if (HasEnv("WORLD_SIZE") && std::atoi(Env("WORLD_SIZE").c_str()) != size) ++problems;
  if (HasEnv("GPULAUNCH_CPUSET") && Env("GPULAUNCH_CPUSET") != Affinity()) ++problems;

  long long local = rank + 1, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  const long long expected = static_cast<long long>(size) * (size + 1) / 2;
  if (total != expected) ++problems;

  if (!quiet) {
    std::printf("rank %d/%d host %s local %s/%s node %s cpus %s mem %s gpus %s nic %s allreduce %lld %s\n", rank, size,
                host, Env("LOCAL_RANK").c_str(), Env("LOCAL_WORLD_SIZE").c_str(), Env("NODE_RANK").c_str(),
                Affinity().c_str(), Env("GPULAUNCH_MEM_NODE").c_str(),
                gpulaunch::EnvOr("CUDA_VISIBLE_DEVICES", "-").c_str(), Env("GPULAUNCH_NIC").c_str(), total,
                problems ? "MISMATCH" : "ok");
    std::fflush(stdout);
  }
  int all_problems = 0;
  MPI_Reduce(&problems, &all_problems, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("rank_report: %d ranks, allreduce %s, %d problem(s)\n", size, total == expected ? "ok" : "WRONG",
                all_problems);
    std::fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == exit_rank) {
    std::exit(exit_code);  // without MPI_Finalize, as a crashing rank would
  }
  MPI_Finalize();
  return rank == 0 && all_problems ? 1 : 0;
}
