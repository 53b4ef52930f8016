#include "policies/pool/node_health.h"

#include <cstddef>

namespace gpulaunch::pool {

const char* NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kHealthy: return "healthy";
    case NodeState::kSuspect: return "suspect";
    case NodeState::kBad: return "bad";
  }
  return "?";
}

NodeHealth::NodeHealth(int hosts, HealthConfig config, double now)
    : config_(config), last_(static_cast<size_t>(hosts), now) {}

void NodeHealth::Heartbeat(int host, double now) { last_[static_cast<size_t>(host)] = now; }

NodeState NodeHealth::State(int host, double now) const {
  const double silent = now - last_[static_cast<size_t>(host)];
  if (silent >= config_.bad_after_s) return NodeState::kBad;
  if (silent >= config_.missed_for_suspect * config_.heartbeat_s) return NodeState::kSuspect;
  return NodeState::kHealthy;
}

double NodeHealth::LeaseExpiry(int host) const { return last_[static_cast<size_t>(host)] + config_.lease_s; }

}  // namespace gpulaunch::pool
