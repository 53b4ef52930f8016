// Host filters and host selectors: the plug-in points of the placement
// engine, held in an explicit registry (no static self-registration).
//
// A filter says why a host cannot take ranks of this job (empty: it can).
// A selector chooses, among the hosts that passed, which ones get how many
// "units" (a unit is one TP group when TP groups fit in a host, else one
// rank), in rank-assignment order.
#pragma once

#include <string>
#include <vector>

#include "common/cluster_topology.h"
#include "common/status.h"
#include "policies/placement.h"

namespace gpulaunch {

struct HostFilter {
  const char* name;
  std::string (*reject)(const ClusterTopology&, int host, const JobRequest&);
};
const std::vector<HostFilter>& HostFilters();

struct Candidate {
  int host = 0;   // index in the cluster
  int units = 0;  // units the host can take
};

struct Selection {
  std::vector<Candidate> chosen;  // in assignment order, units to use each
  std::string why;                // one line for --explain
};

class HostSelector {
 public:
  virtual ~HostSelector() = default;
  virtual const char* Name() const = 0;
  virtual const char* Description() const = 0;
  // `candidates` are in cluster order; `units` is what the job needs.
  virtual StatusOr<Selection> Select(const ClusterTopology& cluster, const std::vector<Candidate>& candidates,
                                     int units) const = 0;
};

// The registry: compact (default), spread, fault-domain, fragmented (used
// for --comm compute), and gang (the pool scheduler's rule,
// pool/gang_placement.h, over the hosts' free units).
const HostSelector* FindHostSelector(const std::string& name);
std::vector<std::string> HostSelectorNames();

}  // namespace gpulaunch
