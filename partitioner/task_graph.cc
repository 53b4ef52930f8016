#include "partitioner/task_graph.h"

#include <cmath>

namespace gpulaunch {

Status ValidateTaskGraph(const TaskGraph& graph) {
  if (graph.layers.empty()) return InvalidArgument("the task graph has no layers");
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& l = graph.layers[i];
    const std::string which = "layer " + std::to_string(i) + (l.name.empty() ? "" : " (" + l.name + ")");
    if (!std::isfinite(l.forward_cost) || !std::isfinite(l.backward_cost) || l.forward_cost < 0 ||
        l.backward_cost < 0) {
      return InvalidArgument(which + ": costs must be finite and not negative");
    }
    if (l.param_bytes < 0 || l.activation_bytes < 0) return InvalidArgument(which + ": byte counts must not be negative");
  }
  return Status::Ok();
}

TaskGraph TransformerTaskGraph(const TransformerShape& s) {
  const double tokens = static_cast<double>(s.batch) * s.seq;
  const double h = s.hidden;
  const int64_t bytes = s.bytes_per_value;
  const int64_t act = static_cast<int64_t>(tokens * h) * bytes;
  TaskGraph g;
  auto add = [&](std::string name, double flops, int64_t params) {
    g.layers.push_back(Layer{std::move(name), flops, 2 * flops, params * bytes, act});
  };
  add("embedding", tokens * h, static_cast<int64_t>(s.vocab + s.seq) * s.hidden);
  for (int b = 0; b < s.blocks; ++b) {
    // QKV and output projections (4 h^2 per token, x2 flops) plus scores and
    // weighted sum (2 seq h per token, x2).
    add("block" + std::to_string(b) + ".attention", tokens * (8 * h * h + 4 * s.seq * h),
        static_cast<int64_t>(4 * h * h + 4 * h));
    add("block" + std::to_string(b) + ".mlp", tokens * 16 * h * h, static_cast<int64_t>(8 * h * h + 5 * h));
  }
  add("head", tokens * 2 * h * s.vocab, static_cast<int64_t>(2 * h));  // tied with the embedding
  g.layers.back().activation_bytes = static_cast<int64_t>(tokens) * s.vocab * bytes;
  return g;
}

StatusOr<TransformerShape> TransformerPreset(const std::string& name) {
  TransformerShape s;
  if (name == "gpt2-small") return s;
  if (name == "gpt2-medium") s.hidden = 1024, s.heads = 16, s.blocks = 24;
  else if (name == "gpt2-large") s.hidden = 1280, s.heads = 20, s.blocks = 36;
  else if (name == "gpt2-xl") s.hidden = 1600, s.heads = 25, s.blocks = 48;
  else if (name == "tiny") s.vocab = 257, s.hidden = 64, s.heads = 4, s.blocks = 4, s.seq = 16;
  else return InvalidArgument("unknown model '" + name + "'; use gpt2-small, gpt2-medium, gpt2-large, gpt2-xl or tiny");
  return s;
}

}  // namespace gpulaunch
