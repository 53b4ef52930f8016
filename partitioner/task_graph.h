// A model as the partitioner sees it: an ordered chain of layers, each with
// its compute cost and its bytes. Costs are in any one unit (flops or
// measured seconds); only their ratios matter to the splitters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

struct Layer {
  std::string name;
  double forward_cost = 0;
  double backward_cost = 0;
  int64_t param_bytes = 0;
  int64_t activation_bytes = 0;  // output of the layer for one micro-batch: what crosses a stage boundary
};

struct TaskGraph {
  std::vector<Layer> layers;
};

// Rejects an empty graph and negative or non-finite costs and sizes, naming
// the layer.
Status ValidateTaskGraph(const TaskGraph& graph);

// A transformer-style model: embedding, `blocks` x (attention, MLP), final
// norm + head. Forward costs are matmul flops per micro-batch of
// `batch` x `seq` tokens; backward is twice forward. Used by the examples
// and by `gpulaunch plan --layout auto`.
struct TransformerShape {
  int vocab = 50257;
  int hidden = 768;
  int heads = 12;
  int blocks = 12;
  int seq = 1024;
  int batch = 1;          // sequences per micro-batch
  int bytes_per_value = 4;
};
TaskGraph TransformerTaskGraph(const TransformerShape& shape);
// GPT-2 shapes: "gpt2-small" (124M), "gpt2-medium" (350M), "gpt2-large"
// (774M), "gpt2-xl" (1.5B), and "tiny" (the examples' default).
StatusOr<TransformerShape> TransformerPreset(const std::string& name);

}  // namespace gpulaunch
