// Placement quality against Open MPI's default by-slot mapping: for recorded
// machines (2 hosts each) and switch trees of 2 to 64 eight-GPU hosts with
// random partial occupancy, the modelled step communication time and hosts
// spanned of gpulaunch's plan and of by-slot, and their ratio. Exit status 1
// if gpulaunch is ever worse (it must never be).
//   build/bin/placement_quality [--data tests/data]
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "common/synthetic_cluster.h"
#include "launcher/discovery/hwloc_source.h"
#include "policies/placement_engine.h"

using namespace gpulaunch;

namespace {

int g_rows = 0, g_worse = 0;
double g_sum_ratio = 0;

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
  const double ratio = b.total_seconds() / a.total_seconds();
  const bool worse = a.total_seconds() > b.total_seconds() * (1 + 1e-9) || a.hosts > b.hosts;
  std::printf("%-34s %5d %-10s %9.2f %9.2f %6.2fx %3d/%-3d %s\n", name.c_str(), ranks, layout,
              a.total_seconds() * 1e3, b.total_seconds() * 1e3, ratio, a.hosts, b.hosts, worse ? "WORSE" : "");
  ++g_rows;
  g_worse += worse;
  g_sum_ratio += ratio;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "tests/data";
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--data")) data = argv[++i];
  std::printf("%-34s %5s %-10s %9s %9s %7s %7s\n", "cluster", "ranks", "layout", "ours ms", "by-slot ms", "ratio",
              "hosts");
  for (const char* f : {"open-mpi-hwloc/nvidiaDGX2.xml", "open-mpi-hwloc/power8gpudistances.xml",
                        "mpibind/coral-lassen.xml", "mpibind/g4dnmetal.xml", "flux-core/sierra.xml",
                        "flux-core/tuo.SPX.xml", "flux-core/corona.xml", "flux-sched/corona11.xml"}) {
    auto t = LoadHwlocXmlFile(data + "/topologies/hwloc/" + f);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", t.status().message().c_str());
      return 2;
    }
    ClusterTopology c;
    for (int h = 0; h < 2; ++h) c.hosts.push_back({"h" + std::to_string(h), *t, true, {}, std::nullopt});
    const int g = static_cast<int>(t->gpus.size());
    for (const char* layout : {"tp=2", "tp=2,pp=2", "tp=4"}) {
      Row(f, c, g, layout);
      Row(f, c, 2 * g, layout);
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
  std::printf("\n%d cases, mean by-slot/gpulaunch ratio %.2fx, gpulaunch worse in %d\n", g_rows, g_sum_ratio / g_rows,
              g_worse);
  return g_worse ? 1 : 0;
}
