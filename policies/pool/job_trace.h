// GPU-cluster job traces for the simulator. Three CSV forms are read, told
// apart by their header:
//   Tiresias   job_id,num_gpu,submit_time,iterations,model_name,duration,interval
//   ElasticFlow (raw ITP traces)  job_id,submission_time,duration,num_gpu
//   gpulaunch  id,submit,duration,gpus[,team[,priority[,user[,template]]]]
//              (any order; template names a resource template, or is empty)
// CRLF line ends and a missing final newline are fine. Every job needs all its
// GPUs at once for `duration` seconds once started. Public traces carry no
// team: AssignTeams deals jobs to teams round-robin in submit order (say so
// wherever results with teams are reported).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch::pool {

struct TraceJob {
  int id = 0;         // 0.. in submit order
  double submit = 0;  // s
  double duration = 0;  // s, on its GPUs
  int gpus = 1;
  int team = 0;
  int priority = 0;
  int user = -1;               // -1: none given
  std::string template_name;   // empty: none (ApplyTemplates resolves it)
  int line = 0;                // in its file, for messages
  // From its template: hard constraints on its hosts.
  double min_gpu_memory_gib = 0, min_link_gbps = 0;
  bool one_leaf = false;
  int min_leaves = 0;
};

StatusOr<std::vector<TraceJob>> ParseTrace(const std::string& text, const std::string& origin);
// The same from lines already split (LoadTrace reads them with a line limit).
StatusOr<std::vector<TraceJob>> ParseTraceLines(std::vector<std::string> lines, const std::string& origin);
StatusOr<std::vector<TraceJob>> LoadTrace(const std::string& path);
void AssignTeams(std::vector<TraceJob>& jobs, int teams);

}  // namespace gpulaunch::pool
