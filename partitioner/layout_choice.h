// Choosing dp x tp x pp for a model on a cluster (`gpulaunch plan --layout
// auto`): every factorisation of the ranks is costed per training (or
// inference) step as
//   compute  (m + pp - 1) x bottleneck stage / tp / flops  (m = micro-batches per replica)
//   + communication of its tp, pp and dp groups (a CommModel, e.g. the
//     placement engine's link model on the real topology),
// after checking that it fits: tp divides the attention heads and stays
// within a host, pp leaves no stage empty, the micro-batches divide over dp,
// and the balanced split's largest stage fits the memory per rank.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/parallel_layout.h"
#include "common/status.h"
#include "partitioner/task_graph.h"

namespace gpulaunch {

struct ModelWorkload {
  TaskGraph graph;        // costs and bytes per micro-batch
  int heads = 0;          // tp must divide it (0: any tp)
  int blocks = 0;         // tp allreduces 2 activations per block forward, 2 more backward
  int microbatches = 8;   // per step, over all replicas
  bool training = true;
};

struct LayoutChoiceOptions {
  int ranks = 1;
  int max_tp = 0;                     // GPUs per host (TP stays inside one); 0: no limit
  double memory_per_rank_bytes = 0;   // 0: unlimited
  double flops_per_second = 100e12;   // sustained, per rank
  double param_memory_factor = 4;     // bytes held per parameter byte: 4 = weights, gradients, Adam moments
};

// Communication seconds per step of each group kind.
struct CommEstimate {
  double tp = 0, pp = 0, dp = 0;
};
// Bytes per step each tp group allreduces, each pp neighbour pair passes and
// each dp group allreduces; returns the seconds.
using CommModel = std::function<StatusOr<CommEstimate>(const ParallelLayout& layout, double tp_bytes, double pp_bytes,
                                                       double dp_bytes)>;

struct LayoutCandidate {
  ParallelLayout layout;
  std::vector<int> first_layer;   // the balanced split into pp stages
  double compute_seconds = 0;
  double bubble = 0;              // (pp - 1) / (m + pp - 1)
  CommEstimate comm;
  int64_t memory_per_rank = 0;    // the largest stage's bytes / tp
  std::string rejected;           // why it cannot run; empty when it can
  double total_seconds() const { return compute_seconds + comm.tp + comm.pp + comm.dp; }
};

// Every factorisation, the feasible ones first by modelled step time (ties:
// smaller tp, then smaller pp), then the rejected ones with their reasons.
// Infeasible when none fits.
StatusOr<std::vector<LayoutCandidate>> RankLayouts(const ModelWorkload& workload, const LayoutChoiceOptions& options,
                                                   const CommModel& comm);

}  // namespace gpulaunch
