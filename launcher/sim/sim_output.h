// What `gpulaunch sim` prints: the JSON document (format gpulaunch-sim/v1)
// and the table, from the simulator's reports of one run.
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "policies/pool/simulator.h"

namespace gpulaunch {

// What the run was, for both forms.
struct SimRunInfo {
  std::string source;     // the trace file, or "synthetic: SPEC"
  std::string cluster;
  int gpus = 0;
  std::string teams;      // e.g. "teams: 3 round-robin, quotas a:16/48/32,..." or "no teams"
  std::string quota;
  double checkpoint_s = 0;
  double max_wait_s = 0;
  std::string reservations;  // as given, or empty
  std::string failures;      // as given, or empty
  std::string data_cache;    // "GB per host at GB/s", or empty (no locality model)
  const std::vector<pool::TraceJob>* jobs = nullptr;  // for --explain's heading
  int explain = -1;          // --explain's job
};

// How user time limits are drawn (runtime_estimates.h), in one line.
extern const char* const kUserLimitModel;

Json SimJson(const SimRunInfo& info, int teams, const std::vector<pool::SimReport>& reports);
void PrintSimTable(const SimRunInfo& info, const std::vector<pool::SimReport>& reports);

}  // namespace gpulaunch
