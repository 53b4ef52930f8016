// Launch overhead: `gpulaunch -n 16 --oversubscribe JOB` against the anchor
// `mpirun -n 16 --oversubscribe JOB`, for a trivial job (/bin/true) and an MPI
// job (rank_report: MPI_Init, Allreduce, Finalize), all measured in the same
// run with random interleaving so machine noise hits both alike. Reports the
// median ratio, the fixed cost (difference) and whether the target holds:
// gpulaunch <= 1.10 x mpirun + 50 ms. Each launch also reports the CPU time
// of the whole process tree (the counter cpu_ms: user and system time of the
// launcher and everything it waited for), whose target is mpirun's plus at
// most 2 ms a rank. Beside them, for /bin/true, mpirun starts every rank
// through exec_wrapper (one exec, nothing else): the floor of any design
// that puts a program between the engine and the job, as the shim is, on
// the machine at hand. Where MPICH is installed, the same for a C MPI program
// built with it (mpi_hello_mpich): `gpulaunch --launcher hydra -n 16`
// against plain `mpiexec.hydra -n 16`, with the same target. A report, never
// an assertion.
//
//   build/bin/launch_overhead_bench [--ranks N] [google benchmark flags]
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "launcher/base/process.h"

namespace {

int g_ranks = 16;
std::string g_bin;

std::vector<std::string> Job(bool mpi) {
  if (mpi) return {g_bin + "/rank_report", "--quiet"};
  return {"/bin/true"};
}

// `wrapper` goes between mpirun and the job when not empty.
std::vector<std::string> MpirunArgv(bool mpi, const std::string& wrapper = "") {
  std::vector<std::string> a = {"mpirun", "-n", std::to_string(g_ranks), "--oversubscribe",
                                // the same loopback settings gpulaunch uses on one host
                                "--mca", "oob_tcp_if_include", "lo", "--mca", "btl_tcp_if_include", "lo"};
  if (geteuid() == 0) a.push_back("--allow-run-as-root");
  if (!wrapper.empty()) a.push_back(wrapper);
  for (auto& j : Job(mpi)) a.push_back(j);
  return a;
}

std::vector<std::string> GpulaunchArgv(bool mpi) {
  std::vector<std::string> a = {g_bin + "/gpulaunch", "-n", std::to_string(g_ranks), "--oversubscribe"};
  if (geteuid() == 0) a.push_back("--allow-run-as-root");
  for (auto& j : Job(mpi)) a.push_back(j);
  return a;
}

// User plus system time of every child this process waited for, in ms.
double ChildrenCpuMs() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  const auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

void RunOnce(benchmark::State& state, const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const double cpu_before = ChildrenCpuMs();
  const auto r = gpulaunch::RunCaptured(argv, env, 60000);
  // A launcher waits for what it started, so its children's CPU is in its own.
  state.counters["cpu_ms"] = ChildrenCpuMs() - cpu_before;
  if (r.timed_out || !WIFEXITED(r.wait_status) || WEXITSTATUS(r.wait_status) != 0) {
    state.SkipWithError(("launch failed: " + r.err).c_str());
  }
}

void BM_Mpirun(benchmark::State& state, bool mpi) {
  const auto env = gpulaunch::EnvironmentWith({});
  for (auto _ : state) RunOnce(state, MpirunArgv(mpi), env);
}

void BM_MpirunThroughExec(benchmark::State& state, bool mpi) {
  const auto env = gpulaunch::EnvironmentWith({});
  for (auto _ : state) RunOnce(state, MpirunArgv(mpi, g_bin + "/exec_wrapper"), env);
}

void BM_Gpulaunch(benchmark::State& state, bool mpi) {
  const auto env = gpulaunch::EnvironmentWith({});
  for (auto _ : state) RunOnce(state, GpulaunchArgv(mpi), env);
}

// MPICH: the same C MPI program under Hydra, plain and through gpulaunch.
std::string MpichJob() { return g_bin + "/mpi_hello_mpich"; }

bool HaveHydra() {
  return std::filesystem::exists(MpichJob()) &&
         gpulaunch::RunCaptured({"mpiexec.hydra", "--version"}, gpulaunch::EnvironmentWith({}), 10000).wait_status == 0;
}

void BM_Hydra(benchmark::State& state) {
  const auto env = gpulaunch::EnvironmentWith({});
  for (auto _ : state) RunOnce(state, {"mpiexec.hydra", "-n", std::to_string(g_ranks), MpichJob()}, env);
}

void BM_GpulaunchHydra(benchmark::State& state) {
  const auto env = gpulaunch::EnvironmentWith({});
  for (auto _ : state) {
    RunOnce(state, {g_bin + "/gpulaunch", "-n", std::to_string(g_ranks), "--oversubscribe", "--launcher", "hydra",
                    MpichJob()},
            env);
  }
}

// Collects per-repetition times to report the ratio at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median" && !r.error_occurred) {
        medians_[r.run_name.function_name] = r.GetAdjustedRealTime();  // already in ms (the unit)
        if (const auto cpu = r.counters.find("cpu_ms"); cpu != r.counters.end()) {
          cpu_medians_[r.run_name.function_name] = cpu->second.value;
        }
        repetitions_ = r.repetitions;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Summary() const {
    Pair("true", "BM_Mpirun/true", "BM_Gpulaunch/true", "BM_MpirunThroughExec/true");
    Pair("MPI rank_report", "BM_Mpirun/mpi", "BM_Gpulaunch/mpi", "");
    Pair("MPICH mpi_hello_mpich (anchor: mpiexec.hydra)", "BM_Hydra/mpich", "BM_GpulaunchHydra/mpich", "");
  }

  // `floor_name`: mpirun starting the same job through exec_wrapper, or "" when not measured.
  void Pair(const char* job, const std::string& anchor_name, const std::string& name,
            const std::string& floor_name) const {
    const auto a = medians_.find(anchor_name);
    const auto g = medians_.find(name);
    if (a == medians_.end() || g == medians_.end()) return;
    const double anchor = a->second, gl = g->second;
    std::printf("\nlaunch of %d ranks of %s (medians of %lld interleaved repetitions each):\n", g_ranks, job,
                static_cast<long long>(repetitions_));
    std::printf("  anchor           %8.1f ms\n  gpulaunch        %8.1f ms\n", anchor, gl);
    std::printf("  ratio            %8.3f x\n  fixed cost       %8.1f ms\n", gl / anchor, gl - anchor);
    std::printf("  target gpulaunch <= 1.10 x anchor + 50 ms: %s (limit %.1f ms)\n",
                gl <= 1.10 * anchor + 50.0 ? "met" : "NOT met", 1.10 * anchor + 50.0);
    const auto ac = cpu_medians_.find(anchor_name);
    const auto gc = cpu_medians_.find(name);
    if (ac == cpu_medians_.end() || gc == cpu_medians_.end()) return;
    const double per_rank = (gc->second - ac->second) / g_ranks;
    std::printf("  CPU: anchor %.1f ms, gpulaunch %.1f ms: %.2f ms a rank more; target <= 2 ms: %s\n", ac->second,
                gc->second, per_rank, per_rank <= 2.0 ? "met" : "NOT met");
    const auto wc = cpu_medians_.find(floor_name);
    if (wc == cpu_medians_.end()) return;
    std::printf("  CPU: mpirun through exec_wrapper %.1f ms: one exec a rank costs %.2f ms here (the floor of any "
                "wrapper); gpulaunch %.2f ms a rank above that\n",
                wc->second, (wc->second - ac->second) / g_ranks, (gc->second - wc->second) / g_ranks);
  }

 private:
  std::map<std::string, double> medians_, cpu_medians_;
  int64_t repetitions_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  g_bin = std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--ranks") && i + 1 < argc) {
      g_ranks = std::atoi(argv[++i]);
      continue;
    }
    args.push_back(argv[i]);
  }
  // Defaults: 15 repetitions of one launch each, randomly interleaved.
  std::vector<std::string> defaults = {"--benchmark_repetitions=15", "--benchmark_enable_random_interleaving=true",
                                       "--benchmark_report_aggregates_only=true"};
  for (auto& d : defaults) args.insert(args.begin() + 1, d.data());
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  for (bool mpi : {false, true}) {
    const std::string job = mpi ? "mpi" : "true";
    benchmark::RegisterBenchmark(("BM_Mpirun/" + job).c_str(), BM_Mpirun, mpi)
        ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark(("BM_Gpulaunch/" + job).c_str(), BM_Gpulaunch, mpi)
        ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
    // The floor is a CPU figure, measured for the trivial job only.
    if (!mpi) {
      benchmark::RegisterBenchmark(("BM_MpirunThroughExec/" + job).c_str(), BM_MpirunThroughExec, mpi)
          ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
    }
  }
  if (HaveHydra()) {
    benchmark::RegisterBenchmark("BM_Hydra/mpich", BM_Hydra)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("BM_GpulaunchHydra/mpich", BM_GpulaunchHydra)
        ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.Summary();
  benchmark::Shutdown();
  return 0;
}
