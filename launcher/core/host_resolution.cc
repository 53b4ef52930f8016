#include "launcher/core/host_resolution.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <map>

#include "common/host_spec.h"
#include "common/strings.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/remote_topology_cache.h"
#include "launcher/discovery/topology_file.h"
#include "launcher/base/host_identity.h"
#include "launcher/base/process.h"
#include "launcher/core/slurm_job.h"

namespace gpulaunch {
namespace {

bool Resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  freeaddrinfo(res);
  return true;
}

// Runs gpulaunch-probe once on each remote host through the engine (one
// task per host, output labelled by task) and keeps each report in the cache.
// Each XML is matched to its host by the hostname hwloc recorded in it, or by
// position when that name is not among the hosts.
StatusOr<std::map<std::string, HostTopology>> ProbeRemote(const std::vector<std::string>& hosts,
                                                          const ResolveSettings& s) {
  const std::vector<std::string> argv = s.runner->OnEachHostArgv(hosts, s.probe_path, s.allow_run_as_root);
  const CapturedRun run = RunCaptured(argv, EnvironmentWith({}), 120000);
  if (run.timed_out || run.wait_status != 0) {
    // The root cause first: mpirun's refusal to run as root, else the first
    // line the engine said; its whole output after the advice.
    if (run.err.find("detected an attempt to run as root") != std::string::npos) {
      return FailedPrecondition(argv[0] + " refuses to run as root, so the topology of " + Join(hosts, ", ") +
                                " could not be discovered; add --allow-run-as-root (or export "
                                "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) if you mean it");
    }
    std::string first;
    for (const std::string& line : Split(run.err, '\n')) {
      const std::string_view t = Trim(line);
      if (!t.empty() && t.find_first_not_of('-') != std::string_view::npos) {
        first = std::string(t.substr(0, 300));
        break;
      }
    }
    return Unavailable("could not discover the topology of " + Join(hosts, ", ") + " through " + argv[0] + ": " +
                       (run.timed_out ? std::string("timed out after 120 s") : first.empty() ? "it failed" : first) +
                       "; check that each host is reachable (ssh without a password for mpirun) and has gpulaunch "
                       "installed at the same path. " + argv[0] + " said:\n" + run.err);
  }
  std::map<int, std::string> xml_of_rank = s.runner->SplitByTask(run.out);
  std::map<std::string, std::pair<HostTopology, std::string>> out;  // host -> topology, report
  std::vector<std::pair<HostTopology, std::string>> unnamed;
  for (size_t i = 0; i < hosts.size(); ++i) {
    std::string& report = xml_of_rank[static_cast<int>(i)];
    GL_ASSIGN_OR_RETURN(HostTopology t, LoadHwlocXmlText(report, "topology of " + hosts[i]));
    if (std::find(hosts.begin(), hosts.end(), t.hostname) != hosts.end() && !out.count(t.hostname)) {
      const std::string name = t.hostname;
      out.emplace(name, std::make_pair(std::move(t), std::move(report)));
    } else {
      unnamed.emplace_back(std::move(t), std::move(report));
    }
  }
  for (const std::string& h : hosts) {
    if (!out.count(h) && !unnamed.empty()) {
      out.emplace(h, std::move(unnamed.front()));
      unnamed.erase(unnamed.begin());
    }
  }
  std::map<std::string, HostTopology> topologies;
  for (auto& [host, probed] : out) {
    StoreCachedProbe(host, s.probe_path, probed.second, probed.first);
    topologies.emplace(host, std::move(probed.first));
  }
  return topologies;
}

// The remote hosts' topologies: from the cache where allowed and present
// (their fingerprints noted in `cached`), the others probed.
StatusOr<std::map<std::string, HostTopology>> RemoteTopologies(const std::vector<std::string>& hosts,
                                                               const ResolveSettings& s,
                                                               std::map<std::string, std::string>& cached) {
  std::map<std::string, HostTopology> out;
  std::vector<std::string> to_probe;
  for (const std::string& host : hosts) {
    std::optional<CachedProbe> entry;
    if (s.use_cached_probes) entry = ReadCachedProbe(host, s.probe_path);
    if (!entry) {
      to_probe.push_back(host);
      continue;
    }
    out.emplace(host, std::move(entry->topology));
    cached[host] = entry->fingerprint;
  }
  if (!to_probe.empty()) {
    GL_ASSIGN_OR_RETURN(auto probed, ProbeRemote(to_probe, s));
    out.merge(probed);
  }
  return out;
}

// The hosts as the user named them: --host, --hostfile, else the Slurm
// allocation, else this machine.
StatusOr<std::vector<HostSpec>> RequestedHosts(const HostRequest& o) {
  if (!o.host_args.empty() && o.hostfile) {
    return InvalidArgument("give either --host or --hostfile, not both");
  }
  std::vector<HostSpec> specs;
  for (const std::string& arg : o.host_args) {
    GL_ASSIGN_OR_RETURN(std::vector<HostSpec> more, ParseHostArgument(arg));
    for (auto& h : more) specs.push_back(std::move(h));
  }
  if (o.hostfile) {
    GL_ASSIGN_OR_RETURN(specs, ReadHostfile(*o.hostfile));
  }
  if (specs.empty()) {  // inside a Slurm allocation: its nodes and task counts
    GL_ASSIGN_OR_RETURN(specs, HostsFromSlurmAllocation(ProcessEnv()));
  }
  if (specs.empty()) specs.push_back(HostSpec{LocalHostname(), std::nullopt, std::nullopt});
  return specs;
}

// Recorded machines: "FILE" describes every host not named otherwise,
// "HOST=FILE" one host. Shared, not copied, by the hosts they describe
// (cluster_topology.h).
StatusOr<ResolvedHosts> HostsFromTopologyFiles(const std::vector<HostSpec>& specs, const HostRequest& o) {
  if (!o.planning_only) {
    return InvalidArgument("--topology-file describes recorded machines, not these ones; use it with --dry-run");
  }
  std::optional<SharedTopology> for_all;
  std::map<std::string, SharedTopology> per_host;
  for (const std::string& item : o.topology_files) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      GL_ASSIGN_OR_RETURN(HostTopology t, LoadTopologyFile(item));
      for_all = std::move(t);
    } else {
      GL_ASSIGN_OR_RETURN(HostTopology t, LoadTopologyFile(item.substr(eq + 1)));
      per_host[item.substr(0, eq)] = std::move(t);
    }
  }
  for (const auto& entry : per_host) {
    const std::string& name = entry.first;  // a plain name: clang 14 cannot capture structured bindings
    if (std::none_of(specs.begin(), specs.end(), [&](const HostSpec& h) { return h.name == name; })) {
      return InvalidArgument("--topology-file " + name + "=...: host '" + name + "' is not among the hosts");
    }
  }
  ResolvedHosts out;
  out.all_local = false;
  for (const HostSpec& h : specs) {
    const auto it = per_host.find(h.name);
    if (it == per_host.end() && !for_all) {
      return InvalidArgument("no topology for host '" + h.name + "': add --topology-file " + h.name +
                             "=FILE or a --topology-file FILE for all hosts");
    }
    out.hosts.push_back(ClusterHost{.name = h.name, .topology = it != per_host.end() ? it->second : *for_all,
                                    .slots = h.slots, .max_slots = h.max_slots});
  }
  return out;
}

// Live machines: this one through hwloc (once, however often it is named),
// the others through the engine's probe.
StatusOr<ResolvedHosts> DiscoveredHosts(const std::vector<HostSpec>& specs, const ResolveSettings& s) {
  ResolvedHosts out;
  std::vector<std::string> remote;
  std::optional<SharedTopology> local;
  for (const HostSpec& h : specs) {
    if (IsLocalHost(h.name)) {
      if (!local) {
        GL_ASSIGN_OR_RETURN(HostTopology t, DiscoverLocalHost());
        local = std::move(t);
      }
      continue;
    }
    if (!Resolves(h.name)) {
      return NotFound("unknown host '" + h.name + "': the name does not resolve; check the spelling, /etc/hosts or DNS");
    }
    remote.push_back(h.name);
  }
  std::map<std::string, HostTopology> probed;
  if (!remote.empty()) {
    out.all_local = false;
    GL_ASSIGN_OR_RETURN(probed, RemoteTopologies(remote, s, out.cached_fingerprints));
  }
  for (const HostSpec& h : specs) {
    const bool is_local = !probed.count(h.name);
    out.hosts.push_back(ClusterHost{.name = h.name, .topology = is_local ? *local : SharedTopology(probed[h.name]),
                                    .slots = h.slots, .max_slots = h.max_slots});
  }
  GL_RETURN_IF_ERROR(NarrowToSlurmJob(out.hosts));
  return out;
}

}  // namespace

StatusOr<ResolvedHosts> ResolveHosts(const HostRequest& o, const ResolveSettings& s) {
  GL_ASSIGN_OR_RETURN(std::vector<HostSpec> specs, RequestedHosts(o));
  if (!o.topology_files.empty()) return HostsFromTopologyFiles(specs, o);
  return DiscoveredHosts(specs, s);
}

}  // namespace gpulaunch
