// A GPT-2-style decoder (embedding, pre-norm attention and MLP blocks, tied
// head) in float32 on the CPU, written so that its results have the same
// bits under any data / tensor / pipeline parallel layout:
//   - every parameter is a pure function of (seed, tensor, index), so any
//     rank generates exactly its shard;
//   - every per-token operation (layer norm, softmax, GELU) runs in a fixed
//     order on whole rows, and sequences never mix;
//   - the QKV and first MLP projections are column-parallel (whole dot
//     products per output), the attention output and second MLP projections
//     row-parallel over `heads` leaves through the deterministic reducer
//     (runtime/tensor_parallel.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "partitioner/task_graph.h"
#include "runtime/communicator.h"
#include "runtime/deterministic_reducer.h"

namespace gpulaunch::examples {

struct ModelConfig {
  int vocab = 257;
  int hidden = 64;
  int heads = 4;
  int blocks = 4;
  int seq = 16;
  uint64_t seed = 1;
};

// "tiny" (the default above) or "gpt2-small" (50257 / 768 / 12 heads / 12
// blocks / 1024 tokens).
StatusOr<ModelConfig> ModelPreset(const std::string& name);
Status ValidateModel(const ModelConfig& config, int tp);

// The model as the partitioner sees it, for micro-batches of `seqs` sequences.
TaskGraph ModelTaskGraph(const ModelConfig& config, int seqs);

// Layer l of the chain (as ModelTaskGraph numbers it: 0 embedding, then
// attention and MLP per block, last the head) on one tensor-parallel rank.
class TransformerLayers {
 public:
  TransformerLayers(const ModelConfig& config, rt::Communicator& tp, rt::DeterministicReducer& reducer);
  int layers() const { return 2 + 2 * config_.blocks; }

  // Hidden states (seqs * seq rows of `hidden`) of token ids.
  StatusOr<std::vector<float>> Embed(const std::vector<int32_t>& tokens, int seqs);
  // Applies attention or MLP layer `layer` (1 .. layers() - 2) in place.
  Status Block(int layer, std::vector<float>& h, int seqs);
  // Logits (seqs x vocab) of each sequence's last position.
  std::vector<float> Head(const std::vector<float>& h, int seqs);

 private:
  struct BlockWeights {
    std::vector<float> wq, wk, wv, bq, bk, bv, wo, bo, w1, b1, w2, b2;
  };
  const BlockWeights& WeightsOf(int block);
  const std::vector<float>& Wte();
  Status Attention(const BlockWeights& w, std::vector<float>& h, int seqs);
  Status Mlp(const BlockWeights& w, std::vector<float>& h, int seqs);

  ModelConfig config_;
  rt::Communicator* tp_;
  rt::DeterministicReducer* reducer_;
  std::map<int, BlockWeights> blocks_;
  std::vector<float> wte_;
};

}  // namespace gpulaunch::examples
