#include "launcher/discovery/nccl_format.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/strings.h"

namespace gpulaunch::nccl {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "0x030200" -> 0x030200; nullopt unless hex digits after an optional 0x.
std::optional<unsigned long> Hex(const std::string& text) {
  std::string s = Lower(text);
  if (s.rfind("0x", 0) == 0) s = s.substr(2);
  if (s.empty() || s.size() > 8 || s.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  return std::stoul(s, nullptr, 16);
}

// Linux cpumask text, most significant 32-bit word first: "000000ff,ffff0000";
// at most 65,536 CPUs (Linux's own NR_CPUS limit is 8,192).
std::optional<std::vector<int>> CpuMask(const std::string& text) {
  const std::vector<std::string> words = Split(text, ',');
  if (words.size() > 2048) return std::nullopt;
  std::vector<int> pus;
  for (size_t w = 0; w < words.size(); ++w) {
    const auto bits = Hex(words[w]);
    if (!bits || words[w].empty()) return std::nullopt;
    const int base = static_cast<int>(32 * (words.size() - 1 - w));
    for (int b = 0; b < 32; ++b)
      if ((*bits >> b) & 1) pus.push_back(base + b);
  }
  std::sort(pus.begin(), pus.end());
  return pus;
}

std::string VendorName(unsigned long id) {
  switch (id) {
    case 0x10de: return "nvidia";
    case 0x1002: return "amd";
    case 0x8086: return "intel";
    default: return "unknown";
  }
}

// NCCL's per-link NVLink bandwidth by SM version (GB/s, src/graph/topo.h).
double NvlinkPerLink(int sm) {
  if (sm <= 0) return 20.0;
  if (sm < 70) return 18.0;
  if (sm >= 86 && sm < 90) return 12.0;
  if (sm < 90) return 20.0;
  if (sm < 100) return 20.6;
  return 40.1;
}

// RCCL's per-link xGMI bandwidth by gcn architecture (GB/s, src/graph/topo.h).
double XgmiPerLink(const std::string& gcn) {
  if (gcn.rfind("gfx90a", 0) == 0) return 36.0;
  if (gcn.rfind("gfx94", 0) == 0 || gcn.rfind("gfx95", 0) == 0) return 48.0;
  return 24.0;
}

// UCX's name for an RDMA port ("mlx5_0:1"); IP interfaces keep their name.
std::string NicName(const std::string& name, const std::string& port) {
  if (name.find(':') != std::string::npos) return name;
  for (const char* ip : {"eth", "en", "ib", "bond", "hsi", "cxi"})
    if (name.rfind(ip, 0) == 0) return name;
  return name + ":" + (port.empty() || port == "0" ? "1" : port);
}

std::string NicKind(const std::string& name, unsigned long pci_class, unsigned long vendor) {
  if (name.rfind("rdmap", 0) == 0 || name.rfind("efa", 0) == 0 || vendor == 0x1d0f) return "efa";
  if (name.rfind("hsi", 0) == 0 || name.rfind("cxi", 0) == 0) return "slingshot";
  if (name.rfind("mlx", 0) == 0 || name.rfind("ib", 0) == 0 || name.rfind("bnxt_re", 0) == 0 ||
      (pci_class >> 8) == 0x0207) {
    return "infiniband";
  }
  return "ethernet";
}

// Cores from the CPUs. The format does not say which CPUs are hardware
// threads of one core; Linux on x86 numbers the second thread of core k
// k + N/2 (N CPUs in all), so when every <cpu> holds both halves that way
// and some <cpu>'s CPUs are not one run (0-23,48-71: a contiguous set is as
// well explained without SMT), those two are one core. Otherwise each CPU
// is a core of its own.
void AddCoresFromCpus(HostTopology& t_) {
  std::map<int, int> numa_of;
  for (const NumaNode& n : t_.numa_nodes)
    for (int pu : n.pus) numa_of[pu] = n.os_index;
  const int half = static_cast<int>(numa_of.size() / 2);
  bool smt = numa_of.size() % 2 == 0 && half > 0 && numa_of.rbegin()->first == 2 * half - 1;
  for (const auto& [pu, numa] : numa_of) {
    const auto twin = numa_of.find(pu < half ? pu + half : pu - half);
    smt = smt && twin != numa_of.end() && twin->second == numa;
  }
  smt = smt && std::any_of(t_.numa_nodes.begin(), t_.numa_nodes.end(), [](const NumaNode& n) {
          return n.pus.back() - n.pus.front() + 1 != static_cast<int>(n.pus.size());
        });
  for (const auto& [pu, numa] : numa_of) {
    if (smt && pu >= half) continue;
    Core c{0, {pu}, numa, numa};
    if (smt) c.pus.push_back(pu + half);
    t_.cores.push_back(std::move(c));
  }
  for (size_t i = 0; i < t_.cores.size(); ++i) t_.cores[i].logical_index = static_cast<int>(i);
}

std::vector<double> GpuLinkMatrix(const std::vector<Gpu>& gpus, const std::vector<GpuLink>& links) {
  std::map<std::string, size_t> index;
  for (const Gpu& g : gpus) index[g.pci_bus_id] = static_cast<size_t>(g.index);
  const size_t n = gpus.size();
  std::vector<double> link(n * n, 0.0), to_switch(n, 0.0);
  for (const GpuLink& l : links) {
    const auto from = index.find(l.from);
    if (from == index.end()) continue;
    if (l.to_switch) {
      to_switch[from->second] += l.gbps;
      continue;
    }
    const auto to = index.find(l.target);
    if (to == index.end() || to->second == from->second) continue;  // outside the file, or itself
    link[from->second * n + to->second] += l.gbps;
  }
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      double& v = link[a * n + b];
      v = std::max(v, link[b * n + a]);  // a link listed on one side only
      if (to_switch[a] > 0 && to_switch[b] > 0) v = std::max(v, std::min(to_switch[a], to_switch[b]));
    }
  }
  if (std::none_of(link.begin(), link.end(), [](double v) { return v > 0; })) return {};
  return link;
}

}  // namespace gpulaunch::nccl
