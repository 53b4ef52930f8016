// Where a gang of GPUs goes in the pool: every GPU of a job at once, or none.
//
// The hard rule, the same for every style: a job of at most one host's GPUs
// runs on one host; a bigger one takes whole hosts, the remainder (if any) on
// one more. Styles differ in which hosts:
//   kFirstFit   the first hosts in index order that fit (the FIFO baseline)
//   kBestFit    the fullest host that fits; whole hosts in index order
//               (Slurm's best fit without topology awareness)
//   kTopology   the fullest host that fits, ties to the fullest leaf switch;
//               a multi-host job under one leaf switch when one has room
//               (the one with the least room left), else over the fewest
//               leaves: whole free hosts and leaves stay whole for big jobs
// Options: hosts to avoid (hard), a fault-domain spread (hard: whole hosts
// taken round-robin over the leaves with the most room), preferred hosts
// (data locality: a preference among hosts that already satisfy everything
// hard, never more), and hosts holding a cached copy of the job's data (a
// weaker preference: with best fit and topology, a job smaller than a host
// does not take a whole free host for it when a partly used host fits).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policies/pool/gpu_pool.h"

namespace gpulaunch::pool {

enum class PlacementStyle { kFirstFit, kBestFit, kTopology };
const char* PlacementStyleName(PlacementStyle s);

struct GangConstraints {
  std::vector<bool> avoid;      // by host: must not be used (empty: none)
  std::vector<bool> preferred;  // by host: use when it makes no other difference (empty: none)
  std::vector<bool> cached;     // by host: holds a copy of its data (empty: none known)
  // Fault-domain spread: a multi-host job's hosts under at least this many
  // leaf switches (a leaf is a fault domain); 0 or 1: no spread asked.
  int min_leaves = 0;
  // Affinity: all hosts under one leaf switch (a template's "affinity=leaf").
  bool one_leaf = false;
  // Expected times (kTopology): when each host's current jobs end (by host,
  // -infinity for none; null: unknown), the time now, and when this job
  // would end (0: unknown). A job then goes where it delays least the moment
  // its host is whole again.
  const std::vector<double>* host_busy_until = nullptr;
  double now = 0;
  double ends_at = 0;
};

std::optional<Allocation> PlaceGang(const GpuPool& pool, int gpus, PlacementStyle style,
                                    const GangConstraints& constraints = {});

// The fewest hosts and leaf switches a job of `gpus` could use in this pool.
int MinHosts(const GpuPool& pool, int gpus);
int MinLeaves(const GpuPool& pool, int gpus);
int LeavesOf(const GpuPool& pool, const Allocation& a);

}  // namespace gpulaunch::pool
