// What happens to the pool from outside the queue: reservations of whole
// hosts for a team's window, and node health (bad hosts and their leases).
#include <algorithm>

#include "policies/pool/scheduler.h"

namespace gpulaunch::pool {

StatusOr<PoolReservation> Scheduler::Reserve(const std::string& name, int team, int hosts, double start,
                                              double end) {
  if (hosts < 1 || hosts > static_cast<int>(pool_.hosts().size()) || !(end > start)) {
    return InvalidArgument("reservation " + name + ": needs 1 to " + std::to_string(pool_.hosts().size()) +
                           " hosts and an end after its start");
  }
  // The shape on an empty pool of the same hosts, minus hosts other
  // reservations hold over an overlapping window.
  std::vector<PoolHost> all = pool_.hosts();
  GpuPool empty(all);
  GangConstraints c;
  c.avoid.assign(all.size(), false);
  for (const PoolReservation& other : reservations_) {
    if (other.start < end && start < other.end)
      for (int h : other.hosts) c.avoid[static_cast<size_t>(h)] = true;
  }
  const int per = all.front().gpus;
  auto a = PlaceGang(empty, hosts * per, PlacementStyle::kTopology, c);
  if (!a) {
    return Infeasible("reservation " + name + ": " + std::to_string(hosts) +
                      " whole hosts are not free of other reservations in that window");
  }
  PoolReservation r{name, team, {}, start, end};
  for (const HostShare& s : a->shares) r.hosts.push_back(s.host);
  reservations_.push_back(r);
  return r;
}

StatusOr<std::vector<int>> Scheduler::ApplyHealth(const NodeHealth& health, double now) {
  std::vector<bool> bad(pool_.hosts().size(), false);
  for (int h = 0; h < static_cast<int>(pool_.hosts().size()); ++h) {
    const NodeState state = health.State(h, now);
    pool_.set_usable(h, state == NodeState::kHealthy);
    bad[static_cast<size_t>(h)] = state == NodeState::kBad;
  }
  // Expired leases: those GPUs are free again (the host's old work is gone).
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (now >= it->expiry) {
      GL_RETURN_IF_ERROR(pool_.Give(Allocation{{it->share}}));
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<int> lost;
  for (const auto& [id, r] : running_) {
    for (const HostShare& s : r.allocation.shares)
      if (bad[static_cast<size_t>(s.host)]) {
        lost.push_back(id);
        break;
      }
  }
  for (int id : lost) {
    const RunningJob r = running_.at(id);
    Allocation healthy_part;
    for (const HostShare& s : r.allocation.shares) {
      if (bad[static_cast<size_t>(s.host)]) {
        leases_.push_back(Lease{s, health.LeaseExpiry(s.host)});
      } else {
        healthy_part.shares.push_back(s);
      }
    }
    GL_RETURN_IF_ERROR(pool_.Give(healthy_part));
    config_.quotas.Remove(r.job.team, r.job.gpus, r.borrowed, r.job.tier_units);
    running_.erase(id);
    RunningChanged();
  }
  return lost;
}

}  // namespace gpulaunch::pool
