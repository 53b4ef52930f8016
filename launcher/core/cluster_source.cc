#include "launcher/core/cluster_source.h"

#include "common/file_write.h"

#include <fstream>

#include "common/cluster_json.h"
#include "common/cluster_spec.h"
#include "common/strings.h"
#include "common/synthetic_cluster.h"
#include "launcher/core/slurm_job.h"

namespace gpulaunch {
namespace {

// The link file's entries for `hosts` only: a file measured on a larger set
// (or another one) says nothing of hosts outside it.
LinkTable LinksAmong(const LinkTable& all, const std::vector<ClusterHost>& hosts) {
  std::set<std::string> names;
  for (const ClusterHost& h : hosts) names.insert(h.name);
  LinkTable t;
  t.origin = all.origin;
  t.measured_at = all.measured_at;
  for (const auto& [key, link] : all.pairs)
    if (names.count(key.first) && names.count(key.second)) t.pairs.emplace(key, link);
  for (const auto& [host, link] : all.shared_memory)
    if (names.count(host)) t.shared_memory.emplace(host, link);
  // Leaves only when they place every host: a tree that misses a host would
  // price it as far away.
  size_t covered = 0;
  for (const MeasuredLeaf& leaf : all.leaves) {
    MeasuredLeaf mine = leaf;
    mine.hosts.clear();
    for (const std::string& h : leaf.hosts)
      if (names.count(h)) mine.hosts.push_back(h);
    covered += mine.hosts.size();
    if (!mine.hosts.empty()) t.leaves.push_back(std::move(mine));
  }
  if (covered != names.size()) t.leaves.clear();
  return t;
}

StatusOr<LinkTable> ReadLinks(const ClusterSource& source, bool whole) {
  if (source.links && *source.links == "none") return LinkTable();
  if (source.links) {
    GL_ASSIGN_OR_RETURN(std::optional<LinkTable> t, ReadLinkTableIfPresent(*source.links));
    if (!t) {
      return InvalidArgument("--links " + *source.links +
                             ": no such file; write one with `gpulaunch linkcheck --hosts LIST --links FILE`, or give "
                             "--links none for nominal figures");
    }
    return std::move(*t);
  }
  const std::string path = DefaultLinkTablePath();
  if (whole || path.empty()) return LinkTable();
  GL_ASSIGN_OR_RETURN(std::optional<LinkTable> t, ReadLinkTableIfPresent(path));
  return t ? std::move(*t) : LinkTable();
}

}  // namespace

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
  GL_ASSIGN_OR_RETURN(const LinkTable links, ReadLinks(source, whole));
  c.links = LinksAmong(links, c.hosts);
  if (c.network.empty() && c.links.leaves.size() > 1) {
    GL_ASSIGN_OR_RETURN(c.network, LeavesAsNetworkTree(c.links));
  }
  if (source.dump_cluster) {
    if (Status s = WriteFileAtomically(*source.dump_cluster, DumpClusterJson(c)); !s.ok()) {
      return InvalidArgument("cannot write the cluster file: " + s.message());
    }
  }
  return built;
}

std::vector<std::string> LinkSourceNotes(const ClusterTopology& c, const std::vector<std::string>& hosts) {
  if (hosts.size() < 2) return {};
  std::vector<std::string> notes;
  const size_t pairs = hosts.size() * (hosts.size() - 1) / 2;
  const LinkTable::MissingPairs missing = c.links.Missing(hosts, 4);
  const std::string from = c.links.origin.empty() ? "" : " (" + c.links.origin + ", " + c.links.measured_at + ")";
  if (missing.count == pairs) {
    notes.push_back("links between hosts: nominal figures (none measured: `gpulaunch linkcheck --hosts LIST --concurrent` "
                    "saves them)");
  } else if (missing.count == 0) {
    notes.push_back("links between hosts: measured, all " + std::to_string(pairs) + " pairs" + from);
  } else {
    std::vector<std::string> names;
    for (const auto& [a, b] : missing.first) names.push_back(a + "-" + b);
    if (missing.count > missing.first.size()) names.push_back("...");
    notes.push_back("links between hosts: measured for " + std::to_string(pairs - missing.count) + " of " +
                    std::to_string(pairs) + " pairs" + from + "; nominal for " + Join(names, ", "));
  }
  if (!c.links.leaves.empty()) {
    std::vector<std::string> leaves;
    for (const MeasuredLeaf& l : c.links.leaves) leaves.push_back(l.name + ": " + Join(l.hosts, ","));
    notes.push_back("measured leaves, whose uplinks flows share: " + Join(leaves, " | "));
  }
  return notes;
}

ClusterTopology WithoutHosts(const ClusterTopology& cluster, const std::set<std::string>& excluded) {
  ClusterTopology out;
  out.network = cluster.network;
  out.links = cluster.links;
  for (const ClusterHost& h : cluster.hosts)
    if (!excluded.count(h.name)) out.hosts.push_back(h);
  return out;
}

}  // namespace gpulaunch
