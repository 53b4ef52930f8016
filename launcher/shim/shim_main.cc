// gpulaunch-shim: every rank starts through it (`mpirun ... gpulaunch-shim --
// PROGRAM ARGS`). It applies the rank's slot from GPULAUNCH_SLOT_TABLE, refuses
// to start when the engine's placement differs from the plan, checks in with
// gpulaunch, and execs PROGRAM (same pid, so signals reach it directly).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/exit_codes.h"
#include "launcher/host_identity.h"
#include "launcher/shim/apply_slot.h"

using namespace gpulaunch;

namespace {

int Refuse(int rank, const std::string& why) {
  std::fprintf(stderr, "gpulaunch-shim: rank %d refuses to start: %s\n", rank, why.c_str());
  return kExitLaunchFailure;
}

// One line to gpulaunch; a failure only costs the launcher its bookkeeping.
// `step` is the Slurm job step ("JOB.STEP") the rank runs in, or "-".
void CheckIn(const std::string& control, int rank, const std::string& host, const std::string& hash,
             const std::string& step) {
  const auto colon = control.rfind(':');
  if (control.empty() || colon == std::string::npos) return;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(control.substr(0, colon).c_str(), control.substr(colon + 1).c_str(), &hints, &res) != 0) return;
  const int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  bool sent = false;
  if (fd >= 0) {
    if (connect(fd, res->ai_addr, res->ai_addrlen) == 0 || errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (poll(&p, 1, 3000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        const std::string line = "checkin " + std::to_string(rank) + " " + std::to_string(getpid()) + " " + host +
                                 " " + hash + " " + step + "\n";
        sent = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
      }
    }
    close(fd);
  }
  freeaddrinfo(res);
  if (!sent) std::fprintf(stderr, "gpulaunch-shim: rank %d could not check in at %s\n", rank, control.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  if (first < argc && std::strcmp(argv[first], "--") == 0) ++first;
  if (first >= argc) {
    std::fprintf(stderr, "usage: gpulaunch-shim [--] PROGRAM [ARGS...] (started by gpulaunch, not by hand)\n");
    return kExitUsage;
  }
  const char* table_text = std::getenv(kSlotTableEnv);
  if (!table_text) return Refuse(-1, std::string(kSlotTableEnv) + " is not set; start jobs with gpulaunch");
  auto table = DecodeSlotTable(table_text);
  if (!table.ok()) return Refuse(-1, table.status().message());
  auto id = ReadEngineIdentity([](const char* n) { return std::getenv(n); });
  if (!id.ok()) return Refuse(-1, id.status().message());
  const std::string hostname = LocalHostname();
  if (Status s = CheckIdentity(*table, *id, IsLocalHost, hostname); !s.ok()) return Refuse(id->rank, s.message());
  const RankSlot& slot = table->ranks[id->rank];
  if (Status s = ApplyBinding(slot); !s.ok()) return Refuse(id->rank, s.message());
  auto cuda_devices = CudaVisibleDevices(slot.gpus, [](const char* n) { return std::getenv(n); });
  if (!cuda_devices.ok()) return Refuse(id->rank, cuda_devices.status().message());
  for (const auto& [k, v] : RankEnvironment(*table, id->rank)) setenv(k.c_str(), v.c_str(), 1);
  if (!slot.gpus.empty()) setenv("CUDA_VISIBLE_DEVICES", cuda_devices->c_str(), 1);
  const std::string control = table->control;
  const std::string hash = table->plan_hash;
  unsetenv(kSlotTableEnv);  // large, and the job has no use for it
  const char* slurm_job = std::getenv("SLURM_JOB_ID");
  const char* slurm_step = std::getenv("SLURM_STEP_ID");
  CheckIn(control, id->rank, hostname, hash,
          slurm_job && slurm_step ? std::string(slurm_job) + "." + slurm_step : std::string("-"));
  execvp(argv[first], argv + first);
  const int err = errno;
  std::fprintf(stderr, "gpulaunch-shim: rank %d on %s cannot execute '%s': %s\n", id->rank, hostname.c_str(),
               argv[first], std::strerror(err));
  return err == ENOENT ? kExitNotFound : kExitCannotExecute;
}
