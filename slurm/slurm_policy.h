// The Slurm side of a gpulaunch multi-tenant policy file (`gpulaunch
// slurm-config --policy FILE --out DIR`). The same file describes the teams'
// quotas that gpulaunch's scheduler and simulator use (policies/pool/).
//
//   {"format": "gpulaunch-policy/v1", "grace_s": 300,
//    "teams": [{"name": "ml", "guarantee": 16, "nominal": 32, "borrow_limit": 16,
//               "lend_limit": 16, "users": ["alice"]}],
//    "reservations": [{"name": "demo", "team": "ml", "nodes": 1,
//                      "start": "2026-12-01T10:00:00", "minutes": 60}]}
//
// Its Slurm side: policy_slurm_side.h.
// Names, users and times are checked against strict patterns, so the scripts
// never carry anything a shell would interpret.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

struct PolicyTeam {
  std::string name;
  int guarantee = 0, nominal = 0, borrow_limit = 0, lend_limit = -1;  // -1: unlimited
  std::vector<std::string> users;
  std::string where;  // "FILE:LINE" of its entry, for errors
};

struct PolicyReservation {
  std::string name, team, start;  // start: YYYY-MM-DDTHH:MM:SS or "now"
  int nodes = 1, minutes = 60;
  std::string where;              // "FILE:LINE" of its entry, for errors
};

struct PolicyFile {
  int grace_s = 300;
  std::vector<PolicyTeam> teams;
  std::vector<PolicyReservation> reservations;
};

// Unknown keys, impossible dates and a user in two places are errors too.
StatusOr<PolicyFile> ParsePolicyFile(const std::string& text, const std::string& origin);

// What the cluster cannot hold: a reservation of more nodes than it has.
Status CheckPolicyFits(const PolicyFile& policy, int nodes);

// A reservation whose start has passed (local time, as slurmctld reads
// StartTime; "now" never has): Slurm would create it in the past, so it is
// refused, saying to give a later start or "now".
Status CheckPolicyReservationsAhead(const PolicyFile& policy, std::time_t now);

// What Slurm cannot enforce: a lend limit (Slurm lends every idle GPU; the
// simulator's --quota still takes one).
Status CheckPolicySlurmCanEnforce(const PolicyFile& policy);

// The quota string the simulator takes (--quota): "ml:16/32/16/16,...".
std::string PolicyQuotaText(const PolicyFile& policy);

}  // namespace gpulaunch
