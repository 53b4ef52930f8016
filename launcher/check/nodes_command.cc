#include "launcher/check/nodes_command.h"

#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "common/strings.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/nvml_gpus.h"
#include "launcher/base/exit_codes.h"
#include "launcher/check/host_command.h"
#include "launcher/base/host_identity.h"
#include "launcher/check/node_table.h"
#include "launcher/core/options.h"
#include "launcher/base/process.h"

namespace gpulaunch {
namespace {


// One host's row: this machine in-process, others through the engine.
NodeRow AskHost(const std::string& host, const NodesOptions& o, const std::string& probe, const Engine& engine) {
  if (IsLocalHost(host)) {
    auto t = DiscoverLocalHost();
    GpuMemoryByBus memory;
    for (const NvmlGpu& g : QueryNvmlGpus()) memory[g.pci_bus_id] = GpuMemory{g.memory_bytes, g.memory_used_bytes};
    return t.ok() ? RowFromTopology(host, *t, std::chrono::system_clock::now(), memory)
                  : DownRow(host, t.status().message());
  }
  const CapturedRun run = RunOnHost(host, {probe}, engine, o.allow_run_as_root, o.budget_s * 1000);
  if (run.timed_out) return DownRow(host, "no answer within --budget " + std::to_string(o.budget_s) + " s");
  if (run.wait_status != 0) return DownRow(host, EngineFailureReason(run, engine));
  auto t = LoadHwlocXmlText(run.out, "topology of " + host);
  return t.ok() ? RowFromTopology(host, *t, std::chrono::system_clock::now(), ParseGpuMemoryComment(run.out))
                : DownRow(host, t.status().message());
}

std::vector<NodeRow> Gather(const std::vector<std::string>& hosts, const NodesOptions& o, const std::string& probe,
                            const Engine& engine) {
  std::vector<NodeRow> rows(hosts.size());
  std::vector<std::thread> askers;
  for (size_t i = 0; i < hosts.size(); ++i) {
    askers.emplace_back([&, i] { rows[i] = AskHost(hosts[i], o, probe, engine); });
  }
  for (auto& t : askers) t.join();
  // Slurm's view where it runs: drained and down nodes, with its reasons.
  const CapturedRun slurm = RunCaptured({"scontrol", "show", "node", "-o", Join(hosts, ",")}, EnvironmentWith({}),
                                        o.budget_s * 1000);
  if (!slurm.timed_out && slurm.wait_status == 0) ApplySlurmStates(rows, slurm.out);
  return rows;
}

}  // namespace

int RunNodesCommand(const std::vector<std::string>& args) {
  auto parsed = ParseNodesCommandLine(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const NodesOptions& o = *parsed;
  if (o.help) {
    std::cout << NodesHelpText();
    return kExitOk;
  }
  auto target = ResolveCommandHosts(o.host_args, o.hostfile, "nodes", o.launcher);
  if (!target.ok()) return Fail(target.status());
  const std::vector<std::string>& hosts = target->hosts;
  const std::string probe = SiblingBinary("gpulaunch-probe");
  const Engine& engine = *target->engine;

  std::map<std::string, NodeHistory> history;
  for (int round = 1;; ++round) {
    std::vector<NodeRow> rows = Gather(hosts, o, probe, engine);
    ApplyHistory(rows, history);
    const std::string text = o.format == "json" ? RenderNodeJson(rows) + "\n" : RenderNodeTable(rows);
    if (o.watch_s > 0) std::cout << "\x1b[H\x1b[2J";  // refresh in place
    std::cout << text << std::flush;
    if (o.watch_s == 0 || round == o.count) {
      for (const NodeRow& r : rows)
        if (r.state != "online") return 1;
      return kExitOk;
    }
    std::this_thread::sleep_for(std::chrono::seconds(o.watch_s));
  }
}

}  // namespace gpulaunch
