// A GPT-2-style decoder (embedding, pre-norm attention and MLP blocks, a
// head) in float32 on the CPU, forward and backward, written so that its
// results have the same bits under any data / tensor / pipeline layout:
//   - every initial parameter is a pure function of (seed, tensor, index),
//     so any rank generates exactly its shard;
//   - every per-token operation (layer norm, softmax, GELU, loss) runs in a
//     fixed order on whole rows, and sequences never mix;
//   - the QKV and first MLP projections are column-parallel (whole dot
//     products per output), the attention output and second MLP projections
//     row-parallel over `heads` leaves through the deterministic reducer
//     (runtime/tensor_parallel.h); their input gradients reduce the same way;
//   - parameter gradients sum over tokens in order within a micro-batch; the
//     trainer sums micro-batches with the deterministic reducer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
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

// SplitMix64's mixing step: the seeded weights and the training data.
uint64_t SplitMix(uint64_t x);

// This rank's part of one parameter tensor (rows x cols in full).
struct ParamShard {
  uint64_t id = 0;
  size_t rows = 0, cols = 0;
  size_t row_first = 0, row_count = 0, col_first = 0, col_count = 0;
  std::vector<float> value, grad;
};

// The layers of the chain (as ModelTaskGraph numbers them: 0 embedding, then
// attention and MLP per block, last the head) on one tensor-parallel rank.
class TransformerLayers {
 public:
  TransformerLayers(const ModelConfig& config, rt::Communicator& tp, rt::DeterministicReducer& reducer);
  int layers() const { return 2 + 2 * config_.blocks; }
  const ModelConfig& config() const { return config_; }

  // Takes the parameters from a file that transformer_train wrote (every
  // tensor whole, in id order, float32) instead of the seed; this rank reads
  // only its shards. Fails, naming both sizes, when the file does not match
  // the model's shape.
  Status LoadWeights(const std::string& path);

  // This rank's shards of the parameters of layers [first, end), by id.
  std::vector<ParamShard*> Params(int first, int end);

  // Layer `layer` forward for micro-batch `mb` of `seqs` sequences. The
  // embedding reads `tokens` and writes h; blocks update h in place; the head
  // writes the logits of the last position of each sequence to `logits`
  // (inference) or, given `targets`, returns the sum of the token losses
  // (next-token cross entropy) in `loss`. `save` keeps what Backward needs.
  Status Forward(int layer, int mb, int seqs, const int32_t* tokens, const int32_t* targets, std::vector<float>& h,
                 bool save, std::vector<float>* logits, double* loss);
  // Layer `layer` backward for `mb`: dh holds the gradient of its output
  // (ignored at the head, which starts from the loss scaled by `loss_scale`)
  // and becomes the gradient of its input. Parameter gradients of this
  // micro-batch are written (not added) to the shards' grad.
  Status Backward(int layer, int mb, int seqs, float loss_scale, std::vector<float>& dh);

 private:
  struct Saved {
    std::vector<float> x, a, q, k, v, p, o, u;  // what the layer's backward reads
  };
  ParamShard& P(uint64_t id);
  Status Attention(int block, int seqs, std::vector<float>& h, Saved* saved);
  Status Mlp(int block, int seqs, std::vector<float>& h, Saved* saved);
  Status AttentionBackward(int block, int seqs, const Saved& s, std::vector<float>& dh);
  Status MlpBackward(int block, int seqs, const Saved& s, std::vector<float>& dh);
  // The gradient of a block's layer-norm input from its column-parallel
  // projections: leaf_element(leaf, token, i) for each of this rank's leaves,
  // summed over tp by the reducer's fixed tree, through the layer norm at x,
  // added to dh (the residual path).
  Status AddInputGradient(size_t tokens, size_t local_leaves, const std::vector<float>& x, std::vector<float>& dh,
                          const std::function<float(size_t, size_t, size_t)>& leaf_element);

  ModelConfig config_;
  rt::Communicator* tp_;
  rt::DeterministicReducer* reducer_;
  std::map<uint64_t, ParamShard> params_;
  std::map<std::pair<int, int>, Saved> saved_;  // (mb, layer)
  std::map<int, std::vector<int32_t>> tokens_, targets_;  // by mb, for the embedding and head backward
  std::string weights_file_;                   // LoadWeights: the file's bytes
  std::map<uint64_t, size_t> file_offset_;     // tensor id -> its offset in weights_file_
};

}  // namespace gpulaunch::examples
