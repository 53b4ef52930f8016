// The first steps of the one launch pipeline (docs/architecture.md), written
// once for a launch, --dry-run, `plan` and `slurm-config`: where the cluster
// comes from -> ClusterTopology. Hosts are resolved and discovered
// (host_resolution.h), or the whole cluster is synthetic (--synthetic) or read
// from a gpulaunch-cluster/v1 file (--cluster); the switch tree comes from
// --network, else from the Slurm allocation when there is one, else from the
// leaves that linkcheck inferred (--links, or the default link file). Place() is the
// next step (policies/placement_engine.h), then MakeLaunchPlan() (plan.h).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/cluster_topology.h"
#include "common/status.h"
#include "launcher/core/host_resolution.h"

namespace gpulaunch {

struct ClusterSource {
  HostRequest hosts;                        // -H, --hostfile, --topology-file: resolved and discovered
  std::optional<std::string> synthetic;     // --synthetic SPEC: the whole cluster (no hosts then)
  std::optional<std::string> cluster_file;  // --cluster FILE: the whole cluster (no hosts then)
  std::optional<std::string> network;       // --network topology.conf
  std::optional<std::string> dump_cluster;  // --dump-cluster FILE: also write what was built
  // --links FILE: measured links (common/link_table.h); "none": nominal
  // figures only. Unset: the default link file when it exists (never for
  // --synthetic or --cluster, whose hosts are not real ones).
  std::optional<std::string> links;
};

struct BuiltCluster {
  ClusterTopology topology;
  bool all_local = false;          // every host is this machine (resolved hosts only)
  // Hosts whose topology came from the cache, with their fingerprints
  // (ResolvedHosts::cached_fingerprints): the launch confirms them.
  std::map<std::string, std::string> cached_fingerprints;
  std::vector<std::string> notes;  // for the user (a deprecated spelling, ...), one line each
};

// `settings` resolve and discover hosts (its runner probes remote ones).
StatusOr<BuiltCluster> BuildClusterTopology(const ClusterSource& source, const ResolveSettings& settings);

// What the model knows of the links between `hosts` (the ones a placement
// uses), one line each for --dry-run, --display-map and `plan`: measured
// (which file, when) or nominal, naming the pairs that are not measured, and
// where the switch tree came from when linkcheck inferred it.
std::vector<std::string> LinkSourceNotes(const ClusterTopology& cluster, const std::vector<std::string>& hosts);

// The cluster without `excluded` hosts (a relaunch without failed hosts).
ClusterTopology WithoutHosts(const ClusterTopology& cluster, const std::set<std::string>& excluded);

}  // namespace gpulaunch
