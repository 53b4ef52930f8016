// What one rank of transformer_train saves in its checkpoint and restores
// after a restart (runtime/checkpoint.h): its parameter shards, their Adam
// moments, in parameter order, and (on rank 0) the loss log so far.
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

std::string SaveTrainState(const std::vector<ParamShard*>& params, std::map<uint64_t, AdamState>& adam,
                           const std::string& loss_log);

// Fails, naming the parameter, when the bytes do not fit these shards.
Status RestoreTrainState(const std::string& state, const std::vector<ParamShard*>& params,
                         std::map<uint64_t, AdamState>& adam, std::string& loss_log);

}  // namespace gpulaunch::examples
