// A site's Slurm configuration as `gpulaunch slurm-config --policy` needs it:
// the global keys the site sets (each with where it set it) and its
// partitions, read from a slurm.conf or from a running slurmctld
// (`scontrol show config` and `scontrol -o show partition`).
//
// slurm.conf syntax as slurmctld reads it: keys are case-insensitive, `#`
// starts a comment, a key set twice keeps its last value, and NodeName= /
// PartitionName= lines hold several Key=Value pairs. `Include` lines are
// listed, not followed (their paths are relative to the running
// slurmctld's folder): the caller says that their keys were not seen.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

struct SiteConfValue {
  std::string value;
  std::string where;  // "FILE:LINE", or "scontrol show config"
};

struct SitePartition {
  std::string name, where;
  std::map<std::string, std::string> fields;  // keys lowercased: "prioritytier", "preemptmode", ...
};

// A node line's shape as Slurm counts it (NodeName=DEFAULT lines applied).
struct SiteNode {
  std::string names, where;
  int cpus = 1;              // CPUs=, else Sockets x CoresPerSocket x ThreadsPerCore (scontrol: CPUTot)
  int gpus = 0;              // the gpu entries of Gres= ("gpu:4", "gpu:a100:4(S:0-1)")
  long long memory_mb = 1;   // RealMemory= (Slurm's default 1 MB when unset)
};

struct SiteConf {
  std::string origin;                           // the file, or "the running slurmctld"
  std::map<std::string, SiteConfValue> keys;    // global keys, lowercased
  std::vector<SitePartition> partitions;
  std::vector<SiteNode> nodes;
  std::vector<std::string> includes;            // "FILE:LINE: Include PATH"

  // The value of a global key (any case), or null when the site does not set it.
  const SiteConfValue* Find(const std::string& key) const;
  const SitePartition* FindPartition(const std::string& name) const;
};

// A slurm.conf's text (`origin` names it in every `where`).
StatusOr<SiteConf> ParseSlurmConf(const std::string& text, const std::string& origin);

// A running cluster: `scontrol show config` ("Key = Value" lines; values
// slurmctld reports as "(null)" count as not set), `scontrol -o show
// partition` and `scontrol -o show node` (one a line).
StatusOr<SiteConf> ParseRunningSlurmConfig(const std::string& show_config, const std::string& show_partitions,
                                           const std::string& show_nodes = "");

// Whether the comma-separated `list` holds `item` (case-insensitive):
// "associations,limits,qos" holds "limits".
bool ListHolds(const std::string& list, const std::string& item);

}  // namespace gpulaunch
