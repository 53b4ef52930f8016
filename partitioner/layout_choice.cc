#include "partitioner/layout_choice.h"

#include <algorithm>
#include <tuple>

#include "partitioner/stage_split.h"

namespace gpulaunch {

namespace {

// Why a layout cannot run this model at all (before any split), or "".
std::string ShapeRejection(const ModelWorkload& w, const LayoutChoiceOptions& o, int tp, int pp, int dp) {
  const int layers = static_cast<int>(w.graph.layers.size());
  if (w.heads > 0 && w.heads % tp) {
    return "tp=" + std::to_string(tp) + " does not divide the " + std::to_string(w.heads) + " attention heads";
  }
  if (o.max_tp > 0 && tp > o.max_tp) {
    return "tp=" + std::to_string(tp) + " would span hosts (" + std::to_string(o.max_tp) + " GPUs per host)";
  }
  if (pp > layers) return "pp=" + std::to_string(pp) + " exceeds the " + std::to_string(layers) + " layers";
  if (w.microbatches % dp) {
    return std::to_string(w.microbatches) + " micro-batches do not divide over dp=" + std::to_string(dp);
  }
  return "";
}

// One layout's split, memory, compute, bubble and communication (or why it
// was rejected).
LayoutCandidate Evaluate(const ModelWorkload& w, const LayoutChoiceOptions& o, const CommModel& comm, int tp, int pp,
                         int dp) {
  LayoutCandidate c;
  c.layout.extent = {tp, pp, dp};
  c.rejected = ShapeRejection(w, o, tp, pp, dp);
  if (!c.rejected.empty()) return c;
  const int m = w.microbatches / dp;
  SplitOptions so;
  so.stages = pp;
  so.training = w.training;
  so.param_memory_factor = w.training ? o.param_memory_factor : 1;
  so.activations_in_flight = w.training ? std::min(pp, m) : 1;
  if (o.memory_per_rank_bytes > 0) so.memory_limit_bytes = static_cast<int64_t>(o.memory_per_rank_bytes * tp);
  auto split = SplitBalanced(w.graph, so);
  if (!split.ok()) {
    c.rejected = "memory: " + split.status().message();
    return c;
  }
  c.first_layer = split->first_layer;
  c.memory_per_rank = *std::max_element(split->stage_memory.begin(), split->stage_memory.end()) / tp;
  c.compute_seconds = (m + pp - 1) * split->bottleneck / tp / o.flops_per_second;
  c.bubble = (pp - 1.0) / (m + pp - 1.0);
  double param_bytes = 0;
  for (const Layer& l : w.graph.layers) param_bytes += static_cast<double>(l.param_bytes);
  const double act_bytes = static_cast<double>(w.graph.layers.size() > 1 ? w.graph.layers[1].activation_bytes
                                                                          : w.graph.layers[0].activation_bytes);
  const double passes = w.training ? 2 : 1;
  const double tp_bytes = tp > 1 ? act_bytes * 2 * passes * (static_cast<double>(w.blocks) / pp) * m : 0;
  const double pp_bytes = pp > 1 ? act_bytes * passes * m : 0;
  const double dp_bytes = w.training && dp > 1 ? param_bytes / (tp * pp) : 0;
  auto estimate = comm(c.layout, tp_bytes, pp_bytes, dp_bytes);
  if (!estimate.ok()) {
    c.rejected = "placement: " + estimate.status().message();
    return c;
  }
  c.comm = *estimate;
  return c;
}

}  // namespace

StatusOr<std::vector<LayoutCandidate>> RankLayouts(const ModelWorkload& w, const LayoutChoiceOptions& o,
                                                   const CommModel& comm) {
  GL_RETURN_IF_ERROR(ValidateTaskGraph(w.graph));
  if (o.ranks < 1) return InvalidArgument("--layout auto needs -n of at least 1");
  if (w.microbatches < 1) return InvalidArgument("micro-batches must be at least 1");
  std::vector<LayoutCandidate> out;
  for (int tp = 1; tp <= o.ranks; ++tp) {
    if (o.ranks % tp) continue;
    for (int pp = 1; pp <= o.ranks / tp; ++pp) {
      if ((o.ranks / tp) % pp) continue;
      out.push_back(Evaluate(w, o, comm, tp, pp, o.ranks / tp / pp));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const LayoutCandidate& a, const LayoutCandidate& b) {
    if (a.rejected.empty() != b.rejected.empty()) return a.rejected.empty();
    if (!a.rejected.empty()) return false;
    return std::make_tuple(a.total_seconds(), a.layout.extent[kTp], a.layout.extent[kPp]) <
           std::make_tuple(b.total_seconds(), b.layout.extent[kTp], b.layout.extent[kPp]);
  });
  if (out.empty() || !out.front().rejected.empty()) {
    std::string why;
    for (const LayoutCandidate& c : out) why += "\n  " + c.layout.ToString() + ": " + c.rejected;
    return Infeasible("no layout of " + std::to_string(o.ranks) + " ranks fits this model:" + why +
                      "\nadd ranks or memory per rank, or use fewer micro-batches");
  }
  return out;
}

}  // namespace gpulaunch
