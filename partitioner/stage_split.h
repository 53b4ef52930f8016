// Cutting a chain of layers into pipeline stages. A stage is a non-empty run
// of consecutive layers. Its cost is its compute (forward, plus backward when
// training) plus the time to send its output activation to the next stage
// (and, when training, the gradient back to the previous one) over the
// boundary's link, when link bandwidths are given.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"
#include "partitioner/task_graph.h"

namespace gpulaunch {

struct SplitOptions {
  int stages = 1;
  bool training = true;
  // Per stage, bytes: parameters x param_memory_factor (1: weights only; 4:
  // weights, gradients and two Adam moments) plus stored activations (all of
  // the stage's layers x activations_in_flight micro-batches when training,
  // the largest one layer's output for inference).
  std::optional<int64_t> memory_limit_bytes;
  double param_memory_factor = 1;
  int activations_in_flight = 1;
  // Bandwidth, in bytes per cost unit, of the link from stage s to s + 1
  // (stages - 1 entries), e.g. from the placement's hosts and NICs. Empty:
  // communication is free.
  std::vector<double> boundary_bandwidth;
};

struct StageSplit {
  std::vector<int> first_layer;  // stages + 1 entries; stage s is [first_layer[s], first_layer[s + 1])
  std::vector<double> stage_cost;
  std::vector<int64_t> stage_memory;
  double bottleneck = 0;         // the largest stage cost: the pipeline's steady-state step per micro-batch
};

// Equal layer counts (the first n % stages stages get one more); memory is
// reported, not enforced.
StatusOr<StageSplit> SplitUniform(const TaskGraph& graph, const SplitOptions& options);

// The split with the smallest bottleneck among those that respect the memory
// limit: exact, by dynamic programming over (stage, first layer), O(n^2 p).
// Ties go to the lexicographically smallest first_layer, so equal inputs give
// equal splits. Infeasible when no split fits the memory limit, naming why.
StatusOr<StageSplit> SplitBalanced(const TaskGraph& graph, const SplitOptions& options);

// Cost and memory of layers [first, end) as stage `stage` (what the splitters
// minimise and check; layer costs are summed from `first` upwards).
double StageCost(const TaskGraph& graph, const SplitOptions& options, int first, int end, int stage);
int64_t StageMemory(const TaskGraph& graph, const SplitOptions& options, int first, int end);

}  // namespace gpulaunch
