// Resource templates: named request shapes users pick instead of spelling
// out every constraint. A template sets a job's GPU count and the hard
// constraints its hosts must meet:
//   "train-large:gpus=32,mem=80,link=200,affinity=leaf;infer:gpus=1,mem=24"
//   gpus       GPUs, all at once
//   mem        at least this much memory per GPU (GiB)
//   link       hosts with at least this network link (Gb/s)
//   affinity   any (default) | leaf (every host under one leaf switch) |
//              spread:N (over at least N leaf switches, for fault tolerance)
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/scheduler.h"

namespace gpulaunch::pool {

struct ResourceTemplate {
  std::string name;
  int gpus = 1;
  double min_gpu_memory_gib = 0;
  double min_link_gbps = 0;
  bool one_leaf = false;
  int spread_leaves = 0;
};

StatusOr<std::vector<ResourceTemplate>> ParseTemplates(const std::string& text);
// `job` asking for `t`: its GPU count and constraints.
PoolJob WithTemplate(PoolJob job, const ResourceTemplate& t);
// Gives every trace job that names a template (TraceJob::template_name) its
// constraints. The job's GPU count must be the template's; an unknown name
// or another count is an error naming the trace's file and line.
Status ApplyTemplates(std::vector<TraceJob>& jobs, const std::vector<ResourceTemplate>& templates,
                      const std::string& origin);

}  // namespace gpulaunch::pool
