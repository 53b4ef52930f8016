// What one rank of transformer_train keeps between steps: its parameter
// shards and their Adam moments, the optimizer step that updates them, and
// what it saves in its checkpoint and restores after a restart
// (runtime/checkpoint.h): shards and moments in parameter order, and (on
// rank 0) the loss log so far.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "examples/transformer/model.h"

namespace gpulaunch::examples {

struct AdamState {
  std::vector<float> m, v;  // empty until the first Adam step
};

// One optimizer step (0-based `step`) of `params` with `grad`, their
// gradients laid end to end in the same order: "sgd", or Adam (beta1 0.9,
// beta2 0.999, eps 1e-8, bias-corrected) with its moments in `adam`.
void OptimizerStep(const std::vector<ParamShard*>& params, const std::vector<float>& grad, const std::string& optimizer,
                   double lr, int step, std::map<uint64_t, AdamState>& adam);

std::string SaveTrainState(const std::vector<ParamShard*>& params, std::map<uint64_t, AdamState>& adam,
                           const std::string& loss_log);

// Fails, naming the parameter, when the bytes do not fit these shards.
Status RestoreTrainState(const std::string& state, const std::vector<ParamShard*>& params,
                         std::map<uint64_t, AdamState>& adam, std::string& loss_log);

}  // namespace gpulaunch::examples
