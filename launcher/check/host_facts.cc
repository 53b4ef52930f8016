#include "launcher/check/host_facts.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "launcher/engine/program_mpi.h"
#include "common/env.h"
#include "common/strings.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/nvml_gpus.h"
#include "launcher/base/host_identity.h"
#include "launcher/base/process.h"
#include "policies/nic_choice.h"

namespace gpulaunch {
namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return std::string(Trim(line));
}

// First line of a command's output, or "" when it does not run.
std::string FirstOutputLine(const std::vector<std::string>& argv) {
  const CapturedRun run = RunCaptured(argv, EnvironmentWith({}), 5000);
  if (!run.Succeeded()) return "";
  const auto lines = Split(run.out, '\n');
  return lines.empty() ? "" : std::string(Trim(lines.front()));
}

// The clock `gpulaunch check` compares. GPULAUNCH_CHECK_CLOCK_OFFSET_S (a
// test hook, documented) shifts it, so a skewed host can be planted.
double ClockSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  double t = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  if (auto offset = GetEnv("GPULAUNCH_CHECK_CLOCK_OFFSET_S")) t += std::strtod(offset->c_str(), nullptr);
  return t;
}

std::vector<NetInterfaceFacts> Interfaces() {
  std::map<std::string, NetInterfaceFacts> by_name;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next) {
      if (!a->ifa_name) continue;
      NetInterfaceFacts& f = by_name[a->ifa_name];
      f.name = a->ifa_name;
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET) {
        char buf[INET_ADDRSTRLEN] = {0};
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
        f.ipv4.push_back(buf);
      }
    }
    freeifaddrs(list);
  }
  std::vector<NetInterfaceFacts> out;
  for (auto& [name, f] : by_name) {
    const std::string sys = "/sys/class/net/" + name + "/";
    f.state = FirstLine(sys + "operstate");
    f.mtu = static_cast<int>(ParseInt(FirstLine(sys + "mtu")).value_or(0));
    // Reading speed fails (EINVAL) for a link that is down or virtual.
    f.speed_mbps = static_cast<int>(ParseInt(FirstLine(sys + "speed")).value_or(-1));
    out.push_back(std::move(f));
  }
  return out;
}

int FreeJobPorts() {
  int free = 0;
  for (int port = kJobPortFirst; port <= kJobPortLast; ++port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) ++free;
    close(fd);
  }
  return free;
}

void CheckTmp(HostFacts& f) {
  f.tmp_dir = EnvOr("TMPDIR", "");
  if (f.tmp_dir.empty()) f.tmp_dir = "/tmp";
  std::string name = f.tmp_dir + "/gpulaunch-check.XXXXXX";
  const int fd = mkstemp(name.data());
  if (fd < 0) {
    f.tmp_error = "cannot create a file in " + f.tmp_dir + ": " + std::strerror(errno);
    return;
  }
  if (write(fd, "x", 1) != 1) f.tmp_error = "cannot write to " + name + ": " + std::strerror(errno);
  close(fd);
  unlink(name.c_str());
}

void CheckBinary(HostFacts& f, const std::string& binary) {
  if (binary.empty()) return;
  std::string path;
  if (binary.find('/') != std::string::npos) {
    path = binary;
  } else {
    for (const std::string& dir : Split(EnvOr("PATH", "/usr/bin:/bin"), ':')) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/" + binary;
      if (access(candidate.c_str(), X_OK) == 0) {
        path = candidate;
        break;
      }
    }
    if (path.empty()) {
      f.binary_error = binary + " is not in PATH";
      return;
    }
  }
  f.binary = path;
  if (access(path.c_str(), F_OK) != 0) {
    f.binary_error = path + " does not exist";
    return;
  }
  if (access(path.c_str(), X_OK) != 0) {
    f.binary_error = path + " is not executable";
    return;
  }
  const CapturedRun ldd = RunCaptured({"ldd", path}, EnvironmentWith({}), 5000);
  std::vector<std::string> missing;
  for (const std::string& line : Split(ldd.out, '\n')) {
    if (line.find("not found") == std::string::npos) continue;
    missing.push_back(std::string(Trim(line.substr(0, line.find("=>")))));
  }
  if (!missing.empty()) f.binary_error = path + " needs libraries not found here: " + Join(missing, ", ");
  const ProgramMpi mpi = ReadProgramMpi(path);
  f.binary_mpi = mpi.family ? MpiFamilyName(*mpi.family) + " (" + mpi.library + ")" : "none (" + mpi.why_none + ")";
}

void Record(HostFacts& f) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, value;
  while (meminfo >> key >> value) {
    if (key == "SwapTotal:") f.recorded["swap_total_kib"] = value;
    meminfo.ignore(256, '\n');
  }
  rlimit memlock{};
  if (getrlimit(RLIMIT_MEMLOCK, &memlock) == 0) {
    f.recorded["memlock"] = memlock.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(memlock.rlim_cur);
  }
  for (const char* sysctl : {"vm.swappiness", "vm.overcommit_memory", "kernel.numa_balancing", "kernel.yama.ptrace_scope",
                             "net.core.rmem_max", "net.core.wmem_max", "net.ipv4.ip_local_port_range"}) {
    std::string path = std::string("/proc/sys/") + sysctl;
    for (char& c : path)
      if (c == '.') c = '/';
    const std::string v = FirstLine(path);
    if (!v.empty()) f.recorded[sysctl] = v;
  }
  const std::string thp = FirstLine("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!thp.empty()) f.recorded["transparent_hugepage"] = thp;
}

}  // namespace

HostFacts GatherHostFacts(const std::string& host, const std::string& binary) {
  HostFacts f;
  f.host = host;
  f.hostname = LocalHostname();
  f.gpulaunch_version = GPULAUNCH_VERSION;
  const std::string mpi = FirstOutputLine({"mpirun", "--version"});  // "mpirun (Open MPI) 4.1.4"
  f.mpi_version = mpi.empty() ? "none" : mpi;
  const std::string ucx = FirstOutputLine({"ucx_info", "-v"});  // "# Version 1.13.1"
  f.ucx_version = ucx.empty() ? "none" : std::string(Trim(ucx.substr(ucx.find_last_of(' ') + 1)));
  const NvmlReport nvml = QueryNvml();
  f.nvml = nvml.available;
  f.driver_version = nvml.available ? nvml.driver_version : "none";
  for (const NvmlGpu& g : nvml.gpus) {
    f.gpus.push_back(GpuFacts{g.pci_bus_id, g.uuid, g.name, g.memory_bytes, g.temperature_c, g.ecc_uncorrected});
  }
  if (auto topology = DiscoverLocalHost(); topology.ok()) {
    for (const Gpu& g : topology->gpus) {
      f.hwloc_gpus += g.vendor == "nvidia" ? 1 : 0;
      if (const auto near = NearestNicOf(*topology, g)) {
        f.gpu_nics.push_back({g.pci_bus_id, topology->nics[near->nic].name, PathTypeName(near->path)});
      }
    }
  }
  f.interfaces = Interfaces();
  f.free_ports = FreeJobPorts();
  CheckTmp(f);
  CheckBinary(f, binary);
  Record(f);
  f.time_s = ClockSeconds();  // last: as close to the answer as it gets
  return f;
}

int RunFactsProbe(const std::vector<std::string>& args) {
  if (args.empty() || args.size() > 2) {
    std::cerr << "usage: gpulaunch-probe facts HOST [BINARY]\n";
    return 2;
  }
  std::cout << kFactsBegin << "\n"
            << HostFactsToJson(GatherHostFacts(args[0], args.size() > 1 ? args[1] : "")).Write() << "\n"
            << kFactsEnd << "\n";
  return 0;
}

StatusOr<HostFacts> ParseFactsOutput(const std::string& output, const std::string& origin) {
  const size_t begin = output.find(kFactsBegin), end = output.find(kFactsEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    return InvalidArgument(origin + ": the probe printed no facts");
  }
  const size_t from = begin + std::string(kFactsBegin).size();
  GL_ASSIGN_OR_RETURN(Json j, ParseJson(std::string_view(output).substr(from, end - from), origin));
  return HostFactsFromJson(j, origin);
}

}  // namespace gpulaunch
