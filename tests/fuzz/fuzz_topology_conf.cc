// libFuzzer: Slurm topology.conf and `scontrol show topology` output,
// `scontrol show job -d` details and `scontrol show node -o` states; and the
// other line formats gpulaunch reads: job traces, quota and cluster specs,
// resource templates and synthetic trace specs,
// the storage probe's answers, a site's slurm.conf and `scontrol show config`,
// sacct exports (a job read once, whatever its rows).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/network_tree.h"
#include "slurm/sacct_export.h"
#include "slurm/scheduler_timing.h"
#include "slurm/site_conf.h"
#include "slurm/slurm_allocation.h"
#include "launcher/check/node_table.h"
#include "launcher/check/storage_probe.h"
#include "policies/pool/gpu_pool.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/quota.h"
#include "policies/pool/resource_template.h"
#include "policies/pool/synthetic_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gpulaunch::ParseTopologyConf(text, "fuzz");
  (void)gpulaunch::ParseScontrolTopology(text, "fuzz");
  (void)gpulaunch::ParseScontrolJobDetail(text, "fuzz");
  std::vector<gpulaunch::NodeRow> rows = {gpulaunch::DownRow("node1", ""), gpulaunch::DownRow("node2", "")};
  gpulaunch::ApplySlurmStates(rows, std::string(text));
  (void)gpulaunch::pool::ParseTrace(std::string(text), "fuzz");
  (void)gpulaunch::pool::QuotaBook::Parse(std::string(text));
  (void)gpulaunch::pool::GpuPool::FromSpec(std::string(text).substr(0, 200));
  (void)gpulaunch::pool::ParseTemplates(std::string(text));
  if (auto spec = gpulaunch::pool::ParseSyntheticSpec(std::string(text)); spec.ok() && spec->jobs <= 200) {
    (void)gpulaunch::pool::SyntheticTrace(*spec, {});
  }
  if (auto site = gpulaunch::ParseSlurmConf(std::string(text), "fuzz"); site.ok()) {
    for (const auto& [key, value] : site->keys)
      if (!site->Find(key)) __builtin_trap();  // every key read is found again
  }
  if (auto running = gpulaunch::ParseRunningSlurmConfig(std::string(text), std::string(text)); running.ok()) {
    const gpulaunch::SlurmSchedulerTiming t = gpulaunch::SchedulerTimingOf(*running);
    if (!(t.backfill_interval_s > 0) || t.requeue_hold_s < 0) __builtin_trap();  // Slurm's defaults at worst
  }
  if (auto jobs = gpulaunch::ParseSacctExport(std::string(text), "fuzz"); jobs.ok()) {
    std::vector<std::string> ids;
    for (const gpulaunch::SacctJob& j : *jobs) {
      if (j.runs < 1 || j.id.empty()) __builtin_trap();
      ids.push_back(j.id);
    }
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) __builtin_trap();  // a job once
  }
  (void)gpulaunch::ParseStorageWriteLine(std::string(text));
  (void)gpulaunch::ParseStorageReadLine(std::string(text));
  (void)gpulaunch::ParseGpuMemoryComment(std::string(text));
  return 0;
}
