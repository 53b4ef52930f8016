// The one cluster-spec syntax, for `gpulaunch plan --synthetic`,
// `slurm-config --synthetic` and `gpulaunch sim --cluster`: words KEY:N from
// the top of the switch tree down, then each host's hardware; groups of other
// hosts joined with '+'.
//   "leaf:2 node:8 gpu:8"                          2 leaf switches of 8 hosts of 8 GPUs
//   "pod:4 leaf:16 node:16 gpu:8 nic:4"            1,024 hosts under a 3-level tree
//   "leaf:1 node:8 gpu:8 mem:80 link:200 + leaf:1 node:8 gpu:8 mem:40"
// Keys: pod (pods under the top switch), leaf (leaf switches per pod), node
// (hosts per leaf), gpu, nic, numa (NUMA nodes), core (per NUMA node) and
// nvlink (0/1: a host's GPUs on one NVSwitch) per host, mem (GiB per GPU) and
// link (Gb/s per host). `switch` is the old name of `leaf` (plan's syntax
// before the two were one): still read, with a note saying so.
//
// This file reads the words; each consumer applies its defaults and refuses,
// by name, the keys it does not model (MakeSyntheticCluster, GpuPool::FromSpec).
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

struct ClusterGroupSpec {
  std::string text;                  // the group as written
  std::map<std::string, int> given;  // key -> value, canonical keys (leaf, not switch)
  int Get(const std::string& key, int fallback) const {
    auto it = given.find(key);
    return it == given.end() ? fallback : it->second;
  }
  bool Has(const std::string& key) const { return given.count(key) > 0; }
};

struct ClusterSpec {
  std::string text;
  std::vector<ClusterGroupSpec> groups;  // one or more
  std::vector<std::string> notes;        // deprecations, for the user
};

// Values are whole numbers from 0 to 100000; a key twice in one group, an
// unknown key or an empty group is an error naming the word and the keys.
StatusOr<ClusterSpec> ParseClusterSpec(std::string_view text);

// An error naming the first key of `spec` outside `modelled`, as `who`
// ("gpulaunch sim") cannot model it; Ok when there is none.
Status OnlyKeys(const ClusterSpec& spec, std::initializer_list<const char*> modelled, const std::string& who);

}  // namespace gpulaunch
