// The network between hosts as a switch tree, in the syntax of Slurm's
// topology.conf (topology/tree plugin):
//   SwitchName=leaf1 Nodes=node[01-16] [LinkSpeed=N]
//   SwitchName=spine Switches=leaf[1-2]
// '#' starts a comment. Every host sits under at most one leaf switch; the
// switches form a forest (several roots mean disconnected islands).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

struct NetworkSwitch {
  std::string name;
  std::vector<std::string> nodes;     // hosts directly below (leaf switches)
  std::vector<std::string> children;  // switches directly below
  std::optional<int64_t> link_speed;  // LinkSpeed as written (relative units)
  std::string parent;                 // empty for a root
  int level = 0;                      // 0 for a leaf, parent = child + 1
};

class NetworkTree {
 public:
  NetworkTree() = default;

  const std::vector<NetworkSwitch>& switches() const { return switches_; }
  bool empty() const { return switches_.empty(); }
  // The leaf switch of `host`, or nullptr when the tree does not name it.
  const NetworkSwitch* LeafOf(const std::string& host) const;
  // Switches from the host's leaf up to its root.
  std::vector<const NetworkSwitch*> PathOf(const std::string& host) const;
  // Switches a message between two hosts crosses: 0 for the same host, 1 for
  // the same leaf, 3 through one level above, ...; -1 when not connected or a
  // host is unknown.
  int SwitchesBetween(const std::string& a, const std::string& b) const;
  // The lowest switch above every one of `hosts` (nullptr if none/unknown).
  const NetworkSwitch* CommonAncestor(const std::vector<std::string>& hosts) const;

  // Builds from switch declarations; checks references, cycles and hosts
  // under two leaves. `origin` names the source in errors.
  static StatusOr<NetworkTree> Build(std::vector<NetworkSwitch> switches, const std::string& origin);

 private:
  const NetworkSwitch* Find(const std::string& name) const;
  std::vector<NetworkSwitch> switches_;
  std::map<std::string, size_t> index_;
  std::map<std::string, size_t> leaf_of_host_;
};

// Parses topology.conf text; errors name origin:line and the fix.
StatusOr<NetworkTree> ParseTopologyConf(std::string_view text, const std::string& origin);
StatusOr<NetworkTree> ReadTopologyConf(const std::string& path);
// Parses `scontrol show topology` output: topology.conf lines plus Level=,
// with upper switches also listing every node below them (dropped here).
StatusOr<NetworkTree> ParseScontrolTopology(std::string_view text, const std::string& origin);

// Writes the tree back in topology.conf syntax (hostlists compressed per run).
std::string WriteTopologyConf(const NetworkTree& tree);

}  // namespace gpulaunch
