// GPU-cluster job traces for the simulator. Four CSV forms are read, told
// apart by their header:
//   Tiresias   job_id,num_gpu,submit_time,iterations,model_name,duration,interval
//   ElasticFlow (raw ITP traces)  job_id,submission_time,duration,num_gpu
//   Alibaba openb pods  name,...,num_gpu,gpu_milli,...,creation_time,deletion_time,scheduled_time
//              (FGD, ATC '23): each scheduled pod with GPUs is a job submitted
//              at creation_time that runs deletion_time - scheduled_time on
//              num_gpu GPUs (a shared GPU, gpu_milli < 1000, counts as a whole
//              one); CPU-only pods and pods never scheduled are left out
//   gpulaunch  id,submit,duration,gpus[,team[,priority[,user[,template[,limit]]]]]
//              (any order; template names a resource template, or is empty;
//              limit is the user's time limit in seconds, or empty)
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
  int cpus = 0;       // 0: not known (what SimSetup::tier_cpu_billing counts)
  int team = 0;
  int priority = 0;
  int user = -1;               // -1: none given
  std::string template_name;   // empty: none (ApplyTemplates resolves it)
  int line = 0;                // in its file, for messages
  // The user's time limit (s): from the trace, or drawn (runtime_estimates.h);
  // 0: none. A run reaching it is ended there, as Slurm does.
  double limit = 0;
  // Its input dataset (synthetic traces; -1: none) and that dataset's size.
  int dataset = -1;
  double dataset_gb = 0;
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
