// env_dump: a non-MPI job for end-to-end tests. Each rank prints one line:
//   rank=R world=W local=L/LS node=N host=H affinity=CPUS cpuset=C hash=X
//   master=A:P foo=$FOO cvd=$CUDA_VISIBLE_DEVICES coords=$GPULAUNCH_COORDS
//   restart=$GPULAUNCH_RESTART_COUNT
// Options (any order, after the program name):
//   --lines K           also print K numbered lines "rank=R line=I" (for --tag)
//   --kill-self RANK    that rank sends itself SIGKILL after printing
//   --wait-dir DIR      write DIR/ready.R (holding the pid), then wait up to 30 s for a signal;
//                       on SIGTERM/SIGINT/SIGUSR1 write DIR/<signal>.R and
//                       exit (0 after SIGUSR1, else 128 + the signal)
//   --sleep S           sleep S seconds before exiting
//   --marker TEXT       ignored; lets a test find its ranks in /proc
//   --stubborn          ignore SIGINT and SIGTERM (a rank that will not stop); with
//                       --wait-dir they are recorded as DIR/<signal>.R, and ignored
//   --fail-rank R       that rank says so on stderr and exits 3 (with
//                       GPULAUNCH_RESTART_COUNT unset or 0 only)
//   --start-dir DIR     every rank writes DIR/started.R first, and the --fail-rank
//                       rank fails only once every rank's file is there (up to
//                       30 s), so the others are running when the job is torn
//                       down, whatever the load
//   --stall-rank R      every rank reports progress (libgpurt heartbeats) for
//                       1.5 s; then the others exit and that rank hangs in
//                       StallHere() for 60 s. With --wait-dir, the others
//                       write DIR/done.R first, and rank R goes on reporting
//                       progress until every other rank's file is there, so
//                       it stalls only once they have ended (whatever the load)
// With --wait-dir, SIGUSR2 is recorded (DIR/SIGUSR2.R) and the wait goes on.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/strings.h"
#include "runtime/heartbeat.h"
#include "runtime/rank_env.h"

namespace {

const char* Env(const char* n) {
  const char* v = std::getenv(n);
  return v ? v : "";
}

std::string Affinity() { return gpulaunch::FormatIdList(gpulaunch::rt::BoundCpus()); }

std::string g_wait_dir;
volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_usr2 = 0;
bool g_stubborn = false;  // --stubborn: SIGINT and SIGTERM are recorded (with --wait-dir) but do not end it
char g_term_path[4096], g_int_path[4096], g_usr1_path[4096], g_usr2_path[4096];

// Records the signal at once (open() is async-signal-safe): the engine may
// follow SIGTERM with SIGKILL before a polling loop would notice.
void OnSignal(int sig) {
  if (sig == SIGUSR2) g_usr2 = 1;
  else if (!(g_stubborn && (sig == SIGINT || sig == SIGTERM))) g_signal = sig;
  const char* path = sig == SIGTERM ? g_term_path : sig == SIGINT ? g_int_path : sig == SIGUSR1 ? g_usr1_path : g_usr2_path;
  const int fd = open(path, O_CREAT | O_WRONLY, 0644);
  if (fd >= 0) close(fd);
}

// Where a stalled rank hangs: its name must show in the stacks gpulaunch
// collects.
[[gnu::noinline]] void StallHere() {
  for (int i = 0; i < 600; ++i) usleep(100000);
  asm volatile("");
}


struct DumpOptions {
  int lines = 0, kill_self = -1, sleep_s = 0, fail_rank = -1, stall_rank = -1;
  std::string start_dir;
};

DumpOptions ParseArgs(int argc, char** argv) {
  DumpOptions o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--stubborn")) {
      g_stubborn = true;
      signal(SIGINT, SIG_IGN);
      signal(SIGTERM, SIG_IGN);
    }
  }
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--lines")) o.lines = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--kill-self")) o.kill_self = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--wait-dir")) g_wait_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--sleep")) o.sleep_s = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--fail-rank")) o.fail_rank = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--stall-rank")) o.stall_rank = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--start-dir")) o.start_dir = argv[++i];
  }
  return o;
}

// The line every test reads: the rank's contract environment and binding.
void PrintEnvLine() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::printf("rank=%s world=%s local=%s/%s node=%s host=%s affinity=%s cpuset=%s hash=%s master=%s:%s foo=%s cvd=%s "
              "coords=%s switch=%s restart=%s\n",
              Env("RANK"), Env("WORLD_SIZE"), Env("LOCAL_RANK"), Env("LOCAL_WORLD_SIZE"), Env("NODE_RANK"), host,
              Affinity().c_str(), Env("GPULAUNCH_CPUSET"), Env("GPULAUNCH_PLAN_HASH"), Env("MASTER_ADDR"),
              Env("MASTER_PORT"), Env("FOO"), std::getenv("CUDA_VISIBLE_DEVICES") ? Env("CUDA_VISIBLE_DEVICES") : "unset",
              Env("GPULAUNCH_COORDS"), Env("GPULAUNCH_SWITCH"), Env("GPULAUNCH_RESTART_COUNT"));
}

bool AllFilesExist(const std::string& dir, const std::string& prefix, int except_rank) {
  const int world = std::atoi(Env("WORLD_SIZE"));
  for (int r = 0; r < world; ++r) {
    if (r != except_rank && access((dir + "/" + prefix + std::to_string(r)).c_str(), F_OK) != 0) return false;
  }
  return true;
}

void TouchFile(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}

// --stall-rank: every rank reports progress for 1.5 s; the others then
// leave (each saying so in --wait-dir), and the stalled rank waits for them
// and hangs in StallHere.
int RunStallCase(int rank, int stall_rank) {
  for (int i = 0; i < 15; ++i) {
    gpulaunch::rt::ReportProgress();
    usleep(100000);
  }
  if (rank != stall_rank) {
    if (!g_wait_dir.empty()) TouchFile(g_wait_dir + "/done." + std::to_string(rank));
    return 0;
  }
  for (int i = 0; !g_wait_dir.empty() && i < 600 && !AllFilesExist(g_wait_dir, "done.", rank); ++i) {
    gpulaunch::rt::ReportProgress();
    usleep(100000);
  }
  StallHere();
  return 0;
}

// --wait-dir: says it is ready (with its pid), then waits up to 30 s for a
// signal, leaving a file per signal received.
int WaitForSignals(int rank) {
  const std::string r = std::to_string(rank);
  std::snprintf(g_term_path, sizeof g_term_path, "%s/SIGTERM.%s", g_wait_dir.c_str(), r.c_str());
  std::snprintf(g_int_path, sizeof g_int_path, "%s/SIGINT.%s", g_wait_dir.c_str(), r.c_str());
  std::snprintf(g_usr1_path, sizeof g_usr1_path, "%s/SIGUSR1.%s", g_wait_dir.c_str(), r.c_str());
  std::snprintf(g_usr2_path, sizeof g_usr2_path, "%s/SIGUSR2.%s", g_wait_dir.c_str(), r.c_str());
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) signal(sig, OnSignal);
  if (FILE* f = std::fopen((g_wait_dir + "/ready." + r).c_str(), "w")) {
    std::fprintf(f, "%d\n", static_cast<int>(getpid()));  // for tests that kill one rank
    std::fclose(f);
  }
  for (int i = 0; i < 300 && !g_signal; ++i) usleep(100000);
  // SIGUSR1 asks for a clean exit (as a job would checkpoint and leave).
  if (g_signal) return g_signal == SIGUSR1 ? 0 : 128 + g_signal;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const DumpOptions o = ParseArgs(argc, argv);
  const int rank = std::atoi(Env("RANK"));
  PrintEnvLine();
  for (int i = 0; i < o.lines; ++i) std::printf("rank=%d line=%d %s\n", rank, i, std::string(60, 'x').c_str());
  std::fflush(stdout);
  if (rank == o.kill_self) raise(SIGKILL);
  if (!o.start_dir.empty()) {
    TouchFile(o.start_dir + "/started." + std::to_string(rank));
    for (int i = 0; rank == o.fail_rank && i < 300 && !AllFilesExist(o.start_dir, "started.", -1); ++i) usleep(100000);
  }
  if (rank == o.fail_rank && std::atoi(Env("GPULAUNCH_RESTART_COUNT")) == 0) {
    std::fprintf(stderr, "env_dump: rank %d fails on purpose\n", rank);
    return 3;
  }
  if (o.stall_rank >= 0) return RunStallCase(rank, o.stall_rank);
  if (!g_wait_dir.empty()) return WaitForSignals(rank);
  if (o.sleep_s > 0) sleep(static_cast<unsigned>(o.sleep_s));
  return 0;
}
