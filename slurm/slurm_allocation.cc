#include "slurm/slurm_allocation.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/hostlist.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr int kMaxId = 1 << 20;  // far above any node's CPUs or GPUs

// Splits "gpu:2(IDX:0-1),nic:1(IDX:0)" at the commas outside parentheses.
std::vector<std::string> SplitGresItems(std::string_view s) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// The GPU indices of one GRES value: "gpu:2(IDX:0-1)", "gpu:a100:1(IDX:3)",
// the older "gpu(IDX:0-1)"; nullopt when it names no gpu.
StatusOr<std::optional<std::vector<int>>> GpuIndices(std::string_view gres, const std::string& where) {
  std::optional<std::vector<int>> gpus;
  for (const std::string& item : SplitGresItems(gres)) {
    if (item != "gpu" && !StartsWith(item, "gpu:") && !StartsWith(item, "gpu(")) continue;
    const auto open = item.find("(IDX:");
    const auto close = item.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) {
      return InvalidArgument(where + ": GRES '" + item + "' has no (IDX:...) list of GPU indices");
    }
    const auto ids = ParseIdList(std::string_view(item).substr(open + 5, close - open - 5));
    if (!ids || (!ids->empty() && ids->back() > kMaxId)) {
      return InvalidArgument(where + ": GRES '" + item + "' has a malformed IDX list (expected e.g. IDX:0-1,3)");
    }
    if (!gpus) gpus.emplace();
    gpus->insert(gpus->end(), ids->begin(), ids->end());
  }
  if (gpus) {
    std::sort(gpus->begin(), gpus->end());
    gpus->erase(std::unique(gpus->begin(), gpus->end()), gpus->end());
  }
  return gpus;
}

std::vector<int> KeepOnly(const std::vector<int>& ids, const std::set<int>& allowed) {
  std::vector<int> out;
  for (int id : ids)
    if (allowed.count(id)) out.push_back(id);
  return out;
}

}  // namespace

StatusOr<std::map<std::string, SlurmNodeShare>> ParseScontrolJobDetail(std::string_view text,
                                                                       const std::string& origin) {
  std::map<std::string, SlurmNodeShare> out;
  int line_no = 0;
  for (const std::string& raw : Split(text, '\n')) {
    ++line_no;
    std::istringstream words{std::string(Trim(raw))};
    std::string first;
    if (!(words >> first) || !StartsWith(first, "Nodes=")) continue;
    const std::string where = origin + ":" + std::to_string(line_no);
    GL_ASSIGN_OR_RETURN(std::vector<std::string> hosts, ExpandHostlist(first.substr(6)));
    SlurmNodeShare share;
    bool has_cpus = false;
    for (std::string w; words >> w;) {
      if (StartsWith(w, "CPU_IDs=")) {
        const auto ids = ParseIdList(w.substr(8));
        if (!ids || ids->empty() || ids->back() > kMaxId) {
          return InvalidArgument(where + ": '" + w + "' is not a CPU id list (expected e.g. CPU_IDs=0-3,8)");
        }
        share.cpu_ids = *ids;
        has_cpus = true;
      } else if (StartsWith(w, "GRES=") || StartsWith(w, "GRES_IDX=")) {
        GL_ASSIGN_OR_RETURN(share.gpu_indices, GpuIndices(w.substr(w.find('=') + 1), where));
      }
    }
    if (!has_cpus) return InvalidArgument(where + ": the line for " + first + " has no CPU_IDs=");
    for (const std::string& h : hosts) out[h] = share;
  }
  if (out.empty()) {
    return InvalidArgument(origin + ": no 'Nodes=... CPU_IDs=...' lines; is this the output of `scontrol show job -d`?");
  }
  return out;
}

std::set<std::string> ParseNodesWithGpuGres(std::string_view text) {
  std::set<std::string> out;
  for (const std::string& line : Split(text, '\n')) {
    std::istringstream words(line);
    std::string name;
    bool gpu = false;
    for (std::string w; words >> w;) {
      if (StartsWith(w, "NodeName=")) name = w.substr(9);
      if (StartsWith(w, "Gres=")) {
        for (const std::string& item : SplitGresItems(w.substr(5))) gpu = gpu || item == "gpu" || StartsWith(item, "gpu:");
      }
    }
    if (!name.empty() && gpu) out.insert(name);
  }
  return out;
}

StatusOr<NarrowedHost> NarrowToSlurmShare(const HostTopology& topology, const SlurmNodeShare& share,
                                          bool slurm_manages_gpus, const std::string& host) {
  NarrowedHost out{topology, {}};
  HostTopology& t = out.topology;
  // Abstract id = logical core position * threads per core + thread.
  const size_t threads = topology.cores.empty() ? 1 : std::max<size_t>(1, topology.cores.front().pus.size());
  const std::set<int> ids(share.cpu_ids.begin(), share.cpu_ids.end());
  std::set<int> pus;
  t.cores.clear();
  for (size_t c = 0; c < topology.cores.size(); ++c) {
    Core core = topology.cores[c];
    std::vector<int> kept;
    for (size_t k = 0; k < core.pus.size(); ++k)
      if (ids.count(static_cast<int>(c * threads + k))) kept.push_back(core.pus[k]);
    if (kept.empty()) continue;
    core.pus = kept;
    pus.insert(kept.begin(), kept.end());
    t.cores.push_back(std::move(core));
  }
  if (t.cores.empty()) {
    return FailedPrecondition("Slurm gave this job CPUs " + FormatIdList(share.cpu_ids) + " on " + host +
                              ", but that host has only " + std::to_string(topology.NumPus()) +
                              " CPUs; do slurm.conf's Sockets, CoresPerSocket and ThreadsPerCore match the hardware "
                              "(`slurmd -C`)?");
  }
  for (Package& p : t.packages) p.pus = KeepOnly(p.pus, pus);
  for (NumaNode& n : t.numa_nodes)
    if (!n.pus.empty()) n.pus = KeepOnly(n.pus, pus);
  if (slurm_manages_gpus && !t.gpus.empty()) {
    const std::vector<int> held = share.gpu_indices.value_or(std::vector<int>{});
    out.gpu_busy.assign(t.gpus.size(), true);
    for (const Gpu& g : t.gpus)
      if (std::binary_search(held.begin(), held.end(), g.index)) out.gpu_busy[g.index] = false;
  }
  return out;
}

std::optional<GpuShare> GpusPerRankInAllocation(const std::optional<std::string>& gpus_per_task,
                                                const std::vector<ClusterHost>& hosts) {
  if (gpus_per_task && !gpus_per_task->empty()) {
    const std::string count = gpus_per_task->substr(gpus_per_task->rfind(':') + 1);  // "a100:2" -> "2"
    const auto n = ParseInt(count);
    if (n && *n >= 1 && *n <= 1024) return GpuShare{static_cast<int>(*n), "SLURM_GPUS_PER_TASK=" + *gpus_per_task};
  }
  int share = 0;
  std::string example;
  for (const ClusterHost& h : hosts) {
    const int tasks = h.slots.value_or(0);
    if (tasks <= 0) continue;
    const int here = h.FreeGpus() / tasks;
    if (share == 0 || here < share) {
      share = here;
      example = h.name + ": " + std::to_string(h.FreeGpus()) + " GPUs for " + std::to_string(tasks) +
                (tasks == 1 ? " task" : " tasks");
    }
  }
  if (share < 2) return std::nullopt;
  return GpuShare{share, "the allocation's GPUs shared over its tasks (" + example + ")"};
}

StatusOr<std::optional<NetworkTree>> TreeFromTopologyAddrs(const std::vector<ClusterHost>& hosts) {
  std::map<std::string, NetworkSwitch> switches;  // by name
  std::vector<std::string> order;                 // first seen first
  auto touch = [&](const std::string& name) -> NetworkSwitch& {
    if (!switches.count(name)) {
      order.push_back(name);
      switches[name].name = name;
    }
    return switches[name];
  };
  std::map<std::string, std::string> parent_of;
  for (const ClusterHost& h : hosts) {
    const HostTopology& t = h.topology;
    if (t.slurm_topology_addr.empty()) continue;
    const std::vector<std::string> parts = Split(t.slurm_topology_addr, '.');
    const std::vector<std::string> kinds = Split(t.slurm_topology_pattern, '.');
    // Without topology/tree, Slurm still sets the node alone ("node1" under
    // "node"): no switch, nothing to build from.
    if (parts.size() == 1 && kinds.size() == 1 && kinds[0] == "node") continue;
    const std::string what = "SLURM_TOPOLOGY_ADDR=" + t.slurm_topology_addr + " (pattern " + t.slurm_topology_pattern +
                             ") on " + h.name;
    if (parts.size() != kinds.size() || parts.size() < 2 || kinds.back() != "node") {
      return InvalidArgument(what + ": expected switch names then the node, as many as the pattern's words");
    }
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (kinds[i] != "switch" || parts[i].empty()) return InvalidArgument(what + ": word " + std::to_string(i + 1) +
                                                                           " is not a switch name");
      NetworkSwitch& s = touch(parts[i]);
      const std::string below = parts[i + 1];
      const bool leaf = i + 2 == parts.size();
      auto& list = leaf ? s.nodes : s.children;
      if (std::find(list.begin(), list.end(), leaf ? h.name : below) == list.end()) list.push_back(leaf ? h.name : below);
      if (!leaf) {
        const auto [it, fresh] = parent_of.emplace(below, parts[i]);
        if (!fresh && it->second != parts[i]) {
          return InvalidArgument(what + ": switch " + below + " is below both " + it->second + " and " + parts[i]);
        }
      }
    }
  }
  if (switches.empty()) return std::optional<NetworkTree>();
  std::vector<NetworkSwitch> list;
  for (const std::string& name : order) list.push_back(switches[name]);
  GL_ASSIGN_OR_RETURN(NetworkTree tree, NetworkTree::Build(std::move(list), "SLURM_TOPOLOGY_ADDR"));
  return std::optional<NetworkTree>(std::move(tree));
}

}  // namespace gpulaunch
