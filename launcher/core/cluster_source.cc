#include "launcher/core/cluster_source.h"

#include "common/file_write.h"

#include <fstream>

#include "common/cluster_json.h"
#include "common/cluster_spec.h"
#include "common/synthetic_cluster.h"
#include "launcher/core/slurm_job.h"

namespace gpulaunch {

StatusOr<BuiltCluster> BuildClusterTopology(const ClusterSource& source, const ResolveSettings& settings) {
  BuiltCluster built;
  ClusterTopology& c = built.topology;
  const bool whole = source.synthetic || source.cluster_file;
  if (source.synthetic) {
    GL_ASSIGN_OR_RETURN(ClusterSpec spec, ParseClusterSpec(*source.synthetic));
    built.notes = spec.notes;
    GL_ASSIGN_OR_RETURN(c, MakeSyntheticCluster(spec));
  } else if (source.cluster_file) {
    GL_ASSIGN_OR_RETURN(c, ReadClusterFile(*source.cluster_file));
  } else {
    GL_ASSIGN_OR_RETURN(ResolvedHosts hosts, ResolveHosts(source.hosts, settings));
    c.hosts = std::move(hosts.hosts);
    built.all_local = hosts.all_local;
    built.cached_fingerprints = hosts.cached_fingerprints;
  }
  if (source.network) {
    GL_ASSIGN_OR_RETURN(c.network, ReadTopologyConf(*source.network));
  } else if (!whole) {
    GL_ASSIGN_OR_RETURN(std::optional<NetworkTree> tree, SlurmNetworkTreeFor(c.hosts));  // inside an allocation
    if (tree) c.network = std::move(*tree);
  }
  if (source.dump_cluster) {
    if (Status s = WriteFileAtomically(*source.dump_cluster, DumpClusterJson(c)); !s.ok()) {
      return InvalidArgument("cannot write the cluster file: " + s.message());
    }
  }
  return built;
}

ClusterTopology WithoutHosts(const ClusterTopology& cluster, const std::set<std::string>& excluded) {
  ClusterTopology out;
  out.network = cluster.network;
  for (const ClusterHost& h : cluster.hosts)
    if (!excluded.count(h.name)) out.hosts.push_back(h);
  return out;
}

}  // namespace gpulaunch
