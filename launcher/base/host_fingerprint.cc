#include "launcher/base/host_fingerprint.h"

#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/sha256.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

// The cgroup (v2) this process is in, from /proc/self/cgroup's "0::PATH".
std::string CgroupPath(const std::string& root) {
  for (const std::string& line : Split(ReadFileOrEmpty(root + "/proc/self/cgroup"), '\n'))
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

}  // namespace

std::vector<std::string> SortedDirectoryNames(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string HostFingerprint(const std::string& root) {
  std::string f = std::string("gpulaunch ") + GPULAUNCH_VERSION + "\nboot " +
                  ReadFileOrEmpty(root + "/proc/sys/kernel/random/boot_id") + "cpus " +
                  ReadFileOrEmpty(root + "/sys/devices/system/cpu/online") + "nodes " +
                  ReadFileOrEmpty(root + "/sys/devices/system/node/online");
  // What the cgroup allows, not its name: hwloc discovers only those CPUs.
  const std::string cgroup = root + "/sys/fs/cgroup" + CgroupPath(root);
  f += "cgroup cpus " + ReadFileOrEmpty(cgroup + "/cpuset.cpus.effective") + "cgroup mems " +
       ReadFileOrEmpty(cgroup + "/cpuset.mems.effective") + "pci";
  for (const std::string& d : SortedDirectoryNames(root + "/sys/bus/pci/devices")) f += " " + d;
  f += "\nnet";
  for (const std::string& n : SortedDirectoryNames(root + "/sys/class/net")) {
    f += " " + n + "=";
    f += Trim(ReadFileOrEmpty(root + "/sys/class/net/" + n + "/operstate"));
  }
  f += "\nib";
  const std::string ib = root + "/sys/class/infiniband";
  for (const std::string& dev : SortedDirectoryNames(ib)) {
    for (const std::string& port : SortedDirectoryNames(ib + "/" + dev + "/ports")) {
      f += " " + dev + "/" + port + "=";
      f += Trim(ReadFileOrEmpty(ib + "/" + dev + "/ports/" + port + "/state"));
    }
  }
  return Sha256Hex(f).substr(0, 32);
}

}  // namespace gpulaunch
