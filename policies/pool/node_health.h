// Node health from heartbeats: healthy, then suspect once `missed_for_suspect`
// heartbeats are missed in a row (heartbeats come every `heartbeat_s`, 3-5 s),
// then bad `bad_after_s` after the last one. A suspect host gets no new work;
// a bad one loses its jobs. Allocations are leases renewed by the host's
// heartbeats: the GPUs a bad host's jobs held there are given out again only
// after the lease expires (last heartbeat + lease_s), because the host may
// still run them (a partitioned host, not a dead one). The scheduler applies
// it (Scheduler::ApplyHealth).
#pragma once

#include <vector>

namespace gpulaunch::pool {

struct HealthConfig {
  double heartbeat_s = 4;
  int missed_for_suspect = 2;
  double bad_after_s = 15;
  double lease_s = 30;
};

enum class NodeState { kHealthy, kSuspect, kBad };
const char* NodeStateName(NodeState s);

class NodeHealth {
 public:
  NodeHealth(int hosts, HealthConfig config, double now);
  void Heartbeat(int host, double now);
  NodeState State(int host, double now) const;
  double LeaseExpiry(int host) const;
  const HealthConfig& config() const { return config_; }
  int hosts() const { return static_cast<int>(last_.size()); }

 private:
  HealthConfig config_;
  std::vector<double> last_;
};

}  // namespace gpulaunch::pool
