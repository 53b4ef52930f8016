// Synthetic job traces for the simulator, with what public traces lack:
// users, teams, priority classes and resource templates. Deterministic: the
// same spec gives the same trace on every machine (its own generator, no
// <random> distributions, whose output differs between standard libraries).
//
// Spec: "jobs:2000 days:14 seed:7 teams:3 users:24 high:0.1 templated:0.2"
//   jobs       how many (default 1000)
//   days       arrivals spread over this many days, as a Poisson process (7)
//   seed       (1)
//   teams      user u is in team u % teams (0: every job in team 0)
//   users      users, each job one of them at random (0: no users)
//   high       share of jobs in priority class 1 (others 0)
//   templated  share of jobs that take one of the given templates at random
//              (its GPU count and constraints); needs templates
//   datasets   input datasets (0: none): sizes log-uniform from 20 GB to
//              2 TB, each job reads one, picked by Zipf popularity with
//              exponent 1 (dataset d in proportion to 1 / (d + 1)), the
//              usual model of popularity in cache studies (Breslau et al.,
//              "Web Caching and Zipf-like Distributions", INFOCOM '99)
// Sizes follow the medium ITP trace's mix (1 GPU 45%, 2 2%, 4 8%, 8 40%,
// 16 3%, 32 1.5%, 64 0.5%); run times are log-uniform from 5 minutes to 24 h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/resource_template.h"

namespace gpulaunch::pool {

struct SyntheticSpec {
  int jobs = 1000;
  double days = 7;
  uint32_t seed = 1;
  int teams = 0, users = 0;
  double high = 0, templated = 0;
  int datasets = 0;
};
inline constexpr double kDatasetMinGb = 20, kDatasetMaxGb = 2000;

StatusOr<SyntheticSpec> ParseSyntheticSpec(const std::string& text);
StatusOr<std::vector<TraceJob>> SyntheticTrace(const SyntheticSpec& spec, const std::vector<ResourceTemplate>& templates);

}  // namespace gpulaunch::pool
