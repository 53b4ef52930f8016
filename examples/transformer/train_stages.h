// What transformer_train's pipeline computes and gathers: the seeded
// synthetic training data, the stages of one (tp, dp) position with their
// per-micro-batch gradient sums, and the final weights on rank 0.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/parallel_layout.h"
#include "common/status.h"
#include "examples/transformer/model.h"
#include "runtime/communicator.h"
#include "runtime/leaf_sum.h"
#include "runtime/pipeline_executor.h"
#include "runtime/superaccumulator.h"

namespace gpulaunch::examples {

// Replica `replica`'s `per_replica` sequences of the step's global batch
// (a noisy counting pattern the model can learn), with next-token targets.
void ReplicaBatch(const ModelConfig& model, int step, int replica, int per_replica, std::vector<int32_t>& tokens,
                  std::vector<int32_t>& targets);

// One pipeline position (tp, dp) of the model: stages own layers
// [first[s], first[s + 1]); gradients of each micro-batch go to the stage's
// LeafSum in micro-batch order.
class TrainStages : public rt::PipelineStages {
 public:
  TrainStages(TransformerLayers& layers, std::vector<int> first, int seqs_per_mb, float loss_scale)
      : layers_(layers), first_(std::move(first)), spm_(seqs_per_mb), loss_scale_(loss_scale) {}
  void SetData(std::vector<int32_t> tokens, std::vector<int32_t> targets) {
    tokens_ = std::move(tokens);
    targets_ = std::move(targets);
  }
  size_t ActivationFloats(int) const override;
  StatusOr<std::vector<float>> Forward(int mb, int stage, const std::vector<float>& input) override;
  StatusOr<std::vector<float>> Backward(int mb, int stage, const std::vector<float>& grad_output) override;
  std::map<int, rt::LeafSum<float>> sums_;  // by stage, for this step
  rt::Superaccumulator losses_;

 private:
  TransformerLayers& layers_;
  std::vector<int> first_;
  int spm_;
  float loss_scale_;
  std::vector<int32_t> tokens_, targets_;
};

// Rank 0 assembles every tensor from the dp = 0 ranks' shards; returns the
// file bytes on rank 0 (tensors in id order, float32), empty elsewhere.
StatusOr<std::string> GatherWeights(rt::Communicator& world, const ParallelLayout& layout,
                                    const std::vector<ParamShard*>& mine);

}  // namespace gpulaunch::examples
