#include "partitioner/stage_split.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpulaunch {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Status CheckRequest(const TaskGraph& graph, const SplitOptions& o) {
  GL_RETURN_IF_ERROR(ValidateTaskGraph(graph));
  const int n = static_cast<int>(graph.layers.size());
  if (o.stages < 1) return InvalidArgument("stages must be at least 1, got " + std::to_string(o.stages));
  if (o.stages > n) {
    return InvalidArgument(std::to_string(o.stages) + " stages for " + std::to_string(n) +
                           " layers would leave a stage empty; use at most " + std::to_string(n) + " stages");
  }
  if (!o.boundary_bandwidth.empty() && static_cast<int>(o.boundary_bandwidth.size()) != o.stages - 1) {
    return InvalidArgument("boundary_bandwidth has " + std::to_string(o.boundary_bandwidth.size()) +
                           " entries; " + std::to_string(o.stages) + " stages have " + std::to_string(o.stages - 1) +
                           " boundaries");
  }
  for (double bw : o.boundary_bandwidth) {
    if (!(bw > 0) || !std::isfinite(bw)) return InvalidArgument("every boundary bandwidth must be positive and finite");
  }
  if (o.activations_in_flight < 1) return InvalidArgument("activations_in_flight must be at least 1");
  return Status::Ok();
}

double LayerCost(const Layer& l, bool training) { return training ? l.forward_cost + l.backward_cost : l.forward_cost; }

// Communication added to a stage of compute `compute` spanning [first, end).
double WithComm(const TaskGraph& g, const SplitOptions& o, double compute, int first, int end, int stage) {
  double cost = compute;
  if (o.boundary_bandwidth.empty()) return cost;
  if (stage + 1 < o.stages) cost += static_cast<double>(g.layers[end - 1].activation_bytes) / o.boundary_bandwidth[stage];
  if (o.training && stage > 0) {
    cost += static_cast<double>(g.layers[first - 1].activation_bytes) / o.boundary_bandwidth[stage - 1];
  }
  return cost;
}

StageSplit Describe(const TaskGraph& g, const SplitOptions& o, std::vector<int> first_layer) {
  StageSplit s;
  s.first_layer = std::move(first_layer);
  for (int k = 0; k < o.stages; ++k) {
    s.stage_cost.push_back(StageCost(g, o, s.first_layer[k], s.first_layer[k + 1], k));
    s.stage_memory.push_back(StageMemory(g, o, s.first_layer[k], s.first_layer[k + 1]));
    s.bottleneck = std::max(s.bottleneck, s.stage_cost.back());
  }
  return s;
}

}  // namespace

double StageCost(const TaskGraph& g, const SplitOptions& o, int first, int end, int stage) {
  double compute = 0;
  for (int i = first; i < end; ++i) compute += LayerCost(g.layers[i], o.training);
  return WithComm(g, o, compute, first, end, stage);
}

int64_t StageMemory(const TaskGraph& g, const SplitOptions& o, int first, int end) {
  double params = 0;
  int64_t activations = 0;
  for (int i = first; i < end; ++i) {
    params += static_cast<double>(g.layers[i].param_bytes);
    activations = o.training ? activations + g.layers[i].activation_bytes * o.activations_in_flight
                             : std::max(activations, g.layers[i].activation_bytes);
  }
  return static_cast<int64_t>(std::ceil(params * o.param_memory_factor)) + activations;
}

StatusOr<StageSplit> SplitUniform(const TaskGraph& graph, const SplitOptions& o) {
  GL_RETURN_IF_ERROR(CheckRequest(graph, o));
  const int n = static_cast<int>(graph.layers.size());
  std::vector<int> first = {0};
  for (int k = 0; k < o.stages; ++k) first.push_back(first.back() + n / o.stages + (k < n % o.stages ? 1 : 0));
  return Describe(graph, o, std::move(first));
}

StatusOr<StageSplit> SplitBalanced(const TaskGraph& graph, const SplitOptions& o) {
  GL_RETURN_IF_ERROR(CheckRequest(graph, o));
  const int n = static_cast<int>(graph.layers.size());
  const int p = o.stages;
  // compute[i][j - i - 1]: compute of layers [i, j), summed from i upwards
  // exactly as StageCost does, so both give the same bits.
  std::vector<std::vector<double>> compute(n);
  std::vector<std::vector<char>> fits(n);
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int j = i + 1; j <= n; ++j) {
      sum += LayerCost(graph.layers[j - 1], o.training);
      compute[i].push_back(sum);
      fits[i].push_back(!o.memory_limit_bytes || StageMemory(graph, o, i, j) <= *o.memory_limit_bytes);
    }
  }
  auto cost = [&](int i, int j, int stage) {
    return fits[i][j - i - 1] ? WithComm(graph, o, compute[i][j - i - 1], i, j, stage) : kInf;
  };
  // best[k][i]: the smallest bottleneck of layers [i, n) as stages k..p-1.
  std::vector<std::vector<double>> best(p + 1, std::vector<double>(n + 1, kInf));
  best[p][n] = 0;
  for (int k = p - 1; k >= 0; --k) {
    const int stages_after = p - k - 1;
    for (int i = k; i <= n - (p - k); ++i) {
      for (int e = i + 1; e <= n - stages_after; ++e) {
        best[k][i] = std::min(best[k][i], std::max(cost(i, e, k), best[k + 1][e]));
      }
    }
  }
  const double target = best[0][0];
  if (target == kInf) {
    for (int i = 0; i < n; ++i) {
      if (!fits[i][0]) {
        return Infeasible("layer " + std::to_string(i) + " (" + graph.layers[i].name + ") alone needs " +
                          std::to_string(StageMemory(graph, o, i, i + 1)) + " bytes, over the limit of " +
                          std::to_string(*o.memory_limit_bytes) + " per stage; add memory or split the layer");
      }
    }
    return Infeasible("no split of " + std::to_string(n) + " layers into " + std::to_string(p) +
                      " stages keeps every stage under " + std::to_string(*o.memory_limit_bytes) +
                      " bytes; use more stages or more memory per stage");
  }
  std::vector<int> first = {0};
  for (int k = 0, i = 0; k < p; ++k) {
    for (int e = i + 1; e <= n - (p - k - 1); ++e) {
      if (std::max(cost(i, e, k), best[k + 1][e]) <= target) {
        first.push_back(e);
        i = e;
        break;
      }
    }
  }
  return Describe(graph, o, std::move(first));
}

}  // namespace gpulaunch
