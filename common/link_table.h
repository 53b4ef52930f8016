// Measured links between hosts, as `gpulaunch linkcheck` saves them and the
// placement model reads them (policies/link_model.h) in place of nominal
// figures: per host pair the bandwidth and latency one flow gets alone; per
// host the shared-memory bandwidth between two ranks on it; and the leaves
// (groups of hosts behind one shared uplink) that linkcheck's concurrent
// mode inferred, each with the most its uplink carried in one direction.
//
// Units: bandwidth in GB/s (10^9 bytes per second, what the model uses;
// linkcheck's tables show Gb/s), latency one-way in microseconds.
//
// The file (format gpulaunch-links/v1, JSON):
//   {"format": "gpulaunch-links/v1", "measured_at": "2026-12-05T08:00:00Z",
//    "pairs": [{"hosts": ["node1", "node2"], "gbyte_per_s": 0.0095, "latency_us": 110}],
//    "shared_memory": [{"host": "node1", "gbyte_per_s": 6.2, "latency_us": 0.4}],
//    "leaves": [{"name": "leaf1", "hosts": ["node1", "node2"], "uplink_gbyte_per_s": 0.0024}]}
// A pair is unordered (the model is symmetric): the slower direction counts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/network_tree.h"
#include "common/status.h"

namespace gpulaunch {

struct MeasuredLink {
  double gbyte_per_s = 0;
  double latency_us = 0;
};

struct MeasuredLeaf {
  std::string name;
  std::vector<std::string> hosts;
  double uplink_gbyte_per_s = 0;  // the most one direction carried; 0: not measured
};

struct LinkTable {
  std::string origin;       // the file it came from ("" when built in memory)
  std::string measured_at;  // UTC, as the file says
  std::map<std::pair<std::string, std::string>, MeasuredLink> pairs;  // key: (lesser, greater) name
  std::map<std::string, MeasuredLink> shared_memory;                  // by host
  std::vector<MeasuredLeaf> leaves;

  bool empty() const { return pairs.empty() && shared_memory.empty() && leaves.empty(); }
  const MeasuredLink* Pair(const std::string& a, const std::string& b) const;
  // Records a measurement of a -> b; a pair measured both ways keeps the slower.
  void AddPair(const std::string& a, const std::string& b, const MeasuredLink& link);
  const MeasuredLeaf* LeafOf(const std::string& host) const;
  // Of the pairs among `hosts` (distinct hosts), how many have no
  // measurement, and the first `list_at_most` of them in host order. Time
  // grows with the hosts and the table's pairs, not with the hosts' pairs:
  // a plan over 8,192 hosts has 33 million.
  struct MissingPairs {
    size_t count = 0;
    std::vector<std::pair<std::string, std::string>> first;
  };
  MissingPairs Missing(const std::vector<std::string>& hosts, size_t list_at_most) const;
  // `newer`'s pairs and shared-memory figures replace these; its leaves
  // replace all of these when it has any (a concurrent run saw the whole set).
  void MergeFrom(const LinkTable& newer);
};

std::string WriteLinkTable(const LinkTable& table);
// Errors name origin:line and the field.
StatusOr<LinkTable> ParseLinkTable(const std::string& text, const std::string& origin);
// nullopt when `path` does not exist; an error when it exists and is not a link file.
StatusOr<std::optional<LinkTable>> ReadLinkTableIfPresent(const std::string& path);

// The inferred leaves as a switch tree (leaf switches named as the leaves,
// under one root "spine" when there are several), for a cluster without
// --network or Slurm's tree; empty when no leaves were inferred.
StatusOr<NetworkTree> LeavesAsNetworkTree(const LinkTable& table);

// Where linkcheck saves, and launches and `plan` look, when --links is not
// given: $XDG_STATE_HOME/gpulaunch/links.json, else
// $HOME/.local/state/gpulaunch/links.json; "" when neither is set.
std::string DefaultLinkTablePath();

}  // namespace gpulaunch
