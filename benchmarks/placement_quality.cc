// Placement quality, per recorded machine (every whole-host hwloc and NCCL
// file in tests/data/topologies, 2 hosts each) and on switch trees of 2 to
// 64 eight-GPU hosts with random partial occupancy: the modelled step
// communication time of gpulaunch's plan against
//   - Open MPI's default by-slot mapping, and
//   - the same plan with its NICs chosen by the previous distance model (four
//     levels: same switch chain, same host bridge, same NUMA node, anything
//     else; ties to the least used NIC), which let a far unused NIC win.
// Prints one row per case, then the worst and the geometric-mean ratio of
// each. Exit status 1 if gpulaunch is ever worse than by-slot (it must never
// be), or than the previous model.
//   build/bin/placement_quality [--data tests/data]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "common/synthetic_cluster.h"
#include "launcher/discovery/topology_file.h"
#include "policies/placement_engine.h"

using namespace gpulaunch;

namespace {

// The NIC rule before path types (policies/pci_distance.h until issue 20),
// kept here as the reference it is measured against.
int FourLevelDistance(const Gpu& gpu, const Nic& nic) {
  size_t shared = 0;
  while (shared < gpu.pci_path.size() && shared < nic.pci_path.size() && gpu.pci_path[shared] == nic.pci_path[shared]) {
    ++shared;
  }
  if (shared > 0) return 100 - static_cast<int>(shared);
  if (gpu.numa_node >= 0 && gpu.numa_node == nic.numa_node) return 200;
  return 300;
}

Placement WithFourLevelNics(Placement p, const ClusterTopology& c) {
  for (const ClusterHost& h : c.hosts) {
    const HostTopology& t = h.topology;
    std::vector<int> users(t.nics.size(), 0);
    for (RankSlot& s : p.ranks) {
      if (s.host != h.name || s.gpus.empty() || t.nics.empty()) continue;
      const Gpu& gpu = t.gpus[s.gpus.front()];
      size_t best = 0;
      for (size_t n = 1; n < t.nics.size(); ++n) {
        if (std::make_pair(FourLevelDistance(gpu, t.nics[n]), users[n]) <
            std::make_pair(FourLevelDistance(gpu, t.nics[best]), users[best])) {
          best = n;
        }
      }
      ++users[best];
      s.nic = t.nics[best].name;
    }
  }
  return p;
}

struct Ratios {
  int rows = 0, worse = 0;
  double log_sum = 0, worst = 0;  // worst: the largest other/ours
  void Add(double ratio, bool is_worse) {
    ++rows;
    worse += is_worse;
    log_sum += std::log(ratio);
    worst = std::max(worst, ratio);
  }
  double Geomean() const { return rows ? std::exp(log_sum / rows) : 0; }
};
Ratios g_by_slot, g_four_level;

void Row(const std::string& name, const ClusterTopology& c, int ranks, const char* layout) {
  JobRequest r;
  r.ranks = ranks;
  auto l = ParseLayout(layout, ranks);
  if (!l.ok()) return;
  r.layout = *l;
  auto ours = Place(r, c);
  auto base = PlaceLikeOpenMpiBySlot(r, c);
  if (!ours.ok() || !base.ok()) return;
  const StepModel a = ModelStep(*ours, c, r), b = ModelStep(*base, c, r);
  const StepModel old = ModelStep(WithFourLevelNics(*ours, c), c, r);
  const double ratio = b.total_seconds() / a.total_seconds(), old_ratio = old.total_seconds() / a.total_seconds();
  const bool worse = a.total_seconds() > b.total_seconds() * (1 + 1e-9) || a.hosts > b.hosts;
  const bool worse_than_old = a.total_seconds() > old.total_seconds() * (1 + 1e-9);
  std::printf("%-40s %5d %-10s %9.2f %10.2f %6.2fx %11.2f %6.2fx %3d/%-3d %s\n", name.c_str(), ranks, layout,
              a.total_seconds() * 1e3, b.total_seconds() * 1e3, ratio, old.total_seconds() * 1e3, old_ratio, a.hosts,
              b.hosts, worse ? "WORSE than by-slot" : worse_than_old ? "WORSE than four-level" : "");
  g_by_slot.Add(ratio, worse);
  g_four_level.Add(old_ratio, worse_than_old);
}

// Not a recording: the machine of issue 20's report, built from its
// description (a 4-GPU node in SNC-4 mode: 2 packages of 4 NUMA nodes, 8
// cores each; GPUs 0-1 on package 0, 2-3 on package 1, each behind its own
// host bridge; NIC cards mlx5_0 and the dual-function mlx5_1/mlx5_2 on
// package 0, mlx5_3 on package 1; 200 Gb/s each). The four-level rule sends
// GPU 2 across the sockets to the unused mlx5_2.
HostTopology ReportedSnc4Node() {
  HostTopology t;
  for (int p = 0; p < 2; ++p) {
    Package pkg{p, {}};
    for (int n = 4 * p; n < 4 * p + 4; ++n) {
      NumaNode numa{n, {}};
      for (int k = 0; k < 8; ++k) {
        const int pu = 8 * n + k;
        numa.pus.push_back(pu);
        pkg.pus.push_back(pu);
        t.cores.push_back(Core{pu, {pu}, n, p});
      }
      t.numa_nodes.push_back(numa);
    }
    t.packages.push_back(pkg);
  }
  const int gpu_numa[] = {0, 1, 4, 5};
  for (int g = 0; g < 4; ++g) {
    Gpu gpu;
    gpu.index = g;
    gpu.vendor = "nvidia";
    gpu.pci_bus_id = "0000:" + std::string(g < 2 ? "1" : "9") + std::to_string(g) + ":00.0";
    gpu.numa_node = gpu_numa[g];
    gpu.local_pus = t.numa_nodes[gpu.numa_node].pus;
    gpu.pci_path = {"hb" + std::to_string(g)};
    t.gpus.push_back(gpu);
  }
  const struct { const char* name; const char* bus; int numa; const char* bridge; } nics[] = {
      {"mlx5_0:1", "0000:2a:00.0", 2, "hb4"}, {"mlx5_1:1", "0000:3b:00.0", 3, "hb5"},
      {"mlx5_2:1", "0000:3b:00.1", 3, "hb5"}, {"mlx5_3:1", "0000:aa:00.0", 6, "hb6"}};
  for (const auto& n : nics) {
    Nic nic;
    nic.name = n.name;
    nic.kind = "infiniband";
    nic.pci_bus_id = n.bus;
    nic.numa_node = n.numa;
    nic.local_pus = t.numa_nodes[n.numa].pus;
    nic.pci_path = {n.bridge};
    nic.gbps = 25;
    t.nics.push_back(nic);
  }
  return t;
}

// Whole-host recordings: every hwloc file, and the NCCL files that load (the
// graph file and the fragments without GPUs are refused, by design).
std::vector<std::pair<std::string, HostTopology>> Machines(const std::string& data) {
  std::vector<std::string> files;
  for (const char* dir : {"/topologies/hwloc", "/topologies/nccl"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(data + dir))
      if (e.path().extension() == ".xml") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, HostTopology>> out;
  for (const std::string& f : files) {
    auto t = LoadTopologyFile(f);
    if (t.ok() && !t->gpus.empty()) out.push_back({f.substr(data.size() + 12), *t});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "tests/data";
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--data")) data = argv[++i];
  std::printf("%-40s %5s %-10s %9s %10s %7s %11s %7s %7s\n", "cluster", "ranks", "layout", "ours ms", "by-slot ms",
              "ratio", "4-level ms", "ratio", "hosts");
  auto machines = Machines(data);
  if (machines.empty()) {
    std::fprintf(stderr, "placement_quality: no recorded machines under %s/topologies\n", data.c_str());
    return 2;
  }
  const size_t recorded = machines.size();
  machines.push_back({"constructed: issue 20's SNC-4 node", ReportedSnc4Node()});
  for (const auto& [name, t] : machines) {
    ClusterTopology c;
    for (int h = 0; h < 2; ++h) c.hosts.push_back({"h" + std::to_string(h), t, true, {}, std::nullopt});
    const int g = static_cast<int>(t.gpus.size());
    for (const char* layout : {"tp=1", "tp=2", "tp=2,pp=2", "tp=4"}) {
      Row(name, c, g, layout);
      Row(name, c, 2 * g, layout);
    }
  }
  std::mt19937 rng(42);
  for (int hosts : {2, 4, 8, 16, 32, 64}) {
    const int leaves = std::max(1, hosts / 8);
    auto c = *MakeSyntheticCluster("switch:" + std::to_string(leaves) + " node:" + std::to_string(hosts / leaves) +
                                   " gpu:8 nic:4");
    for (auto& h : c.hosts) {  // random partial occupancy: the fragmentation real clusters have
      h.gpu_busy.assign(8, false);
      for (int k = 0; k < 8; ++k) h.gpu_busy[k] = rng() % 4 == 0;
    }
    int free = 0;
    for (const auto& h : c.hosts) free += h.FreeGpus();
    for (const char* layout : {"tp=2", "tp=4,pp=2", "tp=8"}) {
      const int unit = std::string(layout) == "tp=2" ? 2 : 8;
      Row("tree " + std::to_string(hosts) + " hosts, " + std::to_string(leaves) + " leaves", c,
          std::max(unit, free / 2 / unit * unit), layout);
    }
  }
  std::printf("\n%d cases on %zu recorded machines, 1 constructed and 6 trees\n", g_by_slot.rows, recorded);
  std::printf("by-slot / gpulaunch:    geometric mean %.2fx, worst %.2fx, gpulaunch worse in %d\n",
              g_by_slot.Geomean(), g_by_slot.worst, g_by_slot.worse);
  std::printf("four-level / gpulaunch: geometric mean %.2fx, worst %.2fx, gpulaunch worse in %d\n",
              g_four_level.Geomean(), g_four_level.worst, g_four_level.worse);
  return g_by_slot.worse || g_four_level.worse ? 1 : 0;
}
