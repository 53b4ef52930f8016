#include "examples/transformer/model.h"

#include <cmath>
#include <cstring>

#include "runtime/tensor_parallel.h"

namespace gpulaunch::examples {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Parameter `index` of tensor `tensor`: uniform in [-scale, scale).
float Param(uint64_t seed, uint64_t tensor, uint64_t index, float scale) {
  const uint64_t bits = SplitMix(SplitMix(SplitMix(seed) ^ tensor) ^ index);
  return scale * (static_cast<float>(bits >> 40) / static_cast<float>(1ULL << 23) - 1.0f);
}

// Rows [0, rows) and columns [first, first + count) of a rows x cols tensor.
std::vector<float> Shard(uint64_t seed, uint64_t tensor, size_t rows, size_t cols, size_t row_first, size_t row_count,
                         size_t first, size_t count, float scale) {
  std::vector<float> out(row_count * count);
  for (size_t r = 0; r < row_count; ++r) {
    for (size_t c = 0; c < count; ++c) out[r * count + c] = Param(seed, tensor, (row_first + r) * cols + first + c, scale);
  }
  (void)rows;
  return out;
}

// Pre-norm layer norm of each row (gain 1, bias 0), sums in ascending order.
std::vector<float> LayerNorm(const std::vector<float>& h, size_t width) {
  std::vector<float> out(h.size());
  for (size_t row = 0; row < h.size() / width; ++row) {
    const float* x = &h[row * width];
    float mean = 0, var = 0;
    for (size_t i = 0; i < width; ++i) mean += x[i];
    mean /= static_cast<float>(width);
    for (size_t i = 0; i < width; ++i) var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<float>(width);
    const float inv = 1.0f / std::sqrt(var + 1e-5f);
    for (size_t i = 0; i < width; ++i) out[row * width + i] = (x[i] - mean) * inv;
  }
  return out;
}

void AddBias(std::vector<float>& y, const std::vector<float>& b) {
  for (size_t i = 0; i < y.size(); ++i) y[i] += b[i % b.size()];
}

float Gelu(float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }

}  // namespace

StatusOr<ModelConfig> ModelPreset(const std::string& name) {
  if (name == "tiny") return ModelConfig{};
  if (name == "gpt2-small") return ModelConfig{50257, 768, 12, 12, 1024, 1};
  return InvalidArgument("unknown model '" + name + "'; use tiny or gpt2-small");
}

Status ValidateModel(const ModelConfig& c, int tp) {
  if (c.vocab < 2 || c.hidden < 1 || c.heads < 1 || c.blocks < 1 || c.seq < 1) {
    return InvalidArgument("vocab, hidden, heads, blocks and seq must be positive (vocab at least 2)");
  }
  if (c.hidden % c.heads != 0) {
    return InvalidArgument("hidden (" + std::to_string(c.hidden) + ") must be a multiple of heads (" +
                           std::to_string(c.heads) + ")");
  }
  if (c.heads % tp != 0) {
    return InvalidArgument("tensor parallelism splits attention heads: tp=" + std::to_string(tp) +
                           " does not divide " + std::to_string(c.heads) + " heads; use a tp that divides it");
  }
  return Status::Ok();
}

TaskGraph ModelTaskGraph(const ModelConfig& c, int seqs) {
  TransformerShape s;
  s.vocab = c.vocab;
  s.hidden = c.hidden;
  s.heads = c.heads;
  s.blocks = c.blocks;
  s.seq = c.seq;
  s.batch = seqs;
  return TransformerTaskGraph(s);
}

TransformerLayers::TransformerLayers(const ModelConfig& config, rt::Communicator& tp, rt::DeterministicReducer& reducer)
    : config_(config), tp_(&tp), reducer_(&reducer) {}

const std::vector<float>& TransformerLayers::Wte() {
  if (wte_.empty()) {
    const size_t h = config_.hidden, v = config_.vocab;
    wte_ = Shard(config_.seed, 1, v, h, 0, v, 0, h, 0.5f);
  }
  return wte_;
}

const TransformerLayers::BlockWeights& TransformerLayers::WeightsOf(int block) {
  auto it = blocks_.find(block);
  if (it != blocks_.end()) return it->second;
  const size_t h = config_.hidden, t = tp_->size(), r = tp_->rank();
  const size_t cols = h / t, ff = 4 * h / t;  // this rank's attention columns and MLP columns
  const uint64_t id = 1000 * static_cast<uint64_t>(block + 1), seed = config_.seed;
  const float w = 1.0f / std::sqrt(static_cast<float>(h)), out = w / std::sqrt(2.0f * config_.blocks);
  BlockWeights b;
  b.wq = Shard(seed, id + 1, h, h, 0, h, r * cols, cols, w);
  b.wk = Shard(seed, id + 2, h, h, 0, h, r * cols, cols, w);
  b.wv = Shard(seed, id + 3, h, h, 0, h, r * cols, cols, w);
  b.bq = Shard(seed, id + 4, 1, h, 0, 1, r * cols, cols, 0.1f);
  b.bk = Shard(seed, id + 5, 1, h, 0, 1, r * cols, cols, 0.1f);
  b.bv = Shard(seed, id + 6, 1, h, 0, 1, r * cols, cols, 0.1f);
  b.wo = Shard(seed, id + 7, h, h, r * cols, cols, 0, h, out);
  b.bo = Shard(seed, id + 8, 1, h, 0, 1, 0, h, 0.1f);
  b.w1 = Shard(seed, id + 9, h, 4 * h, 0, h, r * ff, ff, w);
  b.b1 = Shard(seed, id + 10, 1, 4 * h, 0, 1, r * ff, ff, 0.1f);
  b.w2 = Shard(seed, id + 11, 4 * h, h, r * ff, ff, 0, h, out / 2);
  b.b2 = Shard(seed, id + 12, 1, h, 0, 1, 0, h, 0.1f);
  return blocks_.emplace(block, std::move(b)).first->second;
}

StatusOr<std::vector<float>> TransformerLayers::Embed(const std::vector<int32_t>& tokens, int seqs) {
  const size_t h = config_.hidden, seq = config_.seq;
  if (tokens.size() != static_cast<size_t>(seqs) * seq) return InvalidArgument("Embed: token count mismatch");
  const std::vector<float>& wte = Wte();
  std::vector<float> out(tokens.size() * h);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const size_t pos = t % seq;
    for (size_t i = 0; i < h; ++i) {
      out[t * h + i] = wte[static_cast<size_t>(tokens[t]) * h + i] + Param(config_.seed, 2, pos * h + i, 0.1f);
    }
  }
  return out;
}

Status TransformerLayers::Block(int layer, std::vector<float>& h, int seqs) {
  const int block = (layer - 1) / 2;
  const BlockWeights& w = WeightsOf(block);
  return (layer - 1) % 2 == 0 ? Attention(w, h, seqs) : Mlp(w, h, seqs);
}

Status TransformerLayers::Attention(const BlockWeights& w, std::vector<float>& h, int seqs) {
  const size_t hid = config_.hidden, seq = config_.seq, tokens = static_cast<size_t>(seqs) * seq;
  const size_t cols = w.bq.size(), dh = hid / config_.heads, local_heads = cols / dh;
  const std::vector<float> a = LayerNorm(h, hid);
  GL_ASSIGN_OR_RETURN(std::vector<float> q, rt::ColumnParallel(*tp_, a, tokens, hid, w.wq, cols, false));
  GL_ASSIGN_OR_RETURN(std::vector<float> k, rt::ColumnParallel(*tp_, a, tokens, hid, w.wk, cols, false));
  GL_ASSIGN_OR_RETURN(std::vector<float> v, rt::ColumnParallel(*tp_, a, tokens, hid, w.wv, cols, false));
  AddBias(q, w.bq);
  AddBias(k, w.bk);
  AddBias(v, w.bv);
  std::vector<float> o(tokens * cols, 0.0f), p(seq);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (size_t s = 0; s < static_cast<size_t>(seqs); ++s) {
    for (size_t head = 0; head < local_heads; ++head) {
      for (size_t i = 0; i < seq; ++i) {
        const float* qi = &q[(s * seq + i) * cols + head * dh];
        float max = -INFINITY;
        for (size_t j = 0; j <= i; ++j) {  // causal
          const float* kj = &k[(s * seq + j) * cols + head * dh];
          float dot = 0;
          for (size_t d = 0; d < dh; ++d) dot += qi[d] * kj[d];
          p[j] = dot * scale;
          max = std::max(max, p[j]);
        }
        float sum = 0;
        for (size_t j = 0; j <= i; ++j) sum += p[j] = std::exp(p[j] - max);
        float* oi = &o[(s * seq + i) * cols + head * dh];
        for (size_t j = 0; j <= i; ++j) {
          const float weight = p[j] / sum;
          const float* vj = &v[(s * seq + j) * cols + head * dh];
          for (size_t d = 0; d < dh; ++d) oi[d] += weight * vj[d];
        }
      }
    }
  }
  GL_ASSIGN_OR_RETURN(std::vector<float> y, rt::RowParallel(*reducer_, *tp_, o, tokens, cols, w.wo, hid));
  for (size_t i = 0; i < h.size(); ++i) h[i] += y[i] + w.bo[i % hid];
  return Status::Ok();
}

Status TransformerLayers::Mlp(const BlockWeights& w, std::vector<float>& h, int seqs) {
  const size_t hid = config_.hidden, tokens = static_cast<size_t>(seqs) * config_.seq, ff = w.b1.size();
  const std::vector<float> m = LayerNorm(h, hid);
  GL_ASSIGN_OR_RETURN(std::vector<float> u, rt::ColumnParallel(*tp_, m, tokens, hid, w.w1, ff, false));
  AddBias(u, w.b1);
  for (float& x : u) x = Gelu(x);
  GL_ASSIGN_OR_RETURN(std::vector<float> y, rt::RowParallel(*reducer_, *tp_, u, tokens, ff, w.w2, hid));
  for (size_t i = 0; i < h.size(); ++i) h[i] += y[i] + w.b2[i % hid];
  return Status::Ok();
}

std::vector<float> TransformerLayers::Head(const std::vector<float>& h, int seqs) {
  const size_t hid = config_.hidden, seq = config_.seq, vocab = config_.vocab;
  std::vector<float> last(static_cast<size_t>(seqs) * hid);
  for (size_t s = 0; s < static_cast<size_t>(seqs); ++s) {
    std::memcpy(&last[s * hid], &h[(s * seq + seq - 1) * hid], hid * sizeof(float));
  }
  const std::vector<float> x = LayerNorm(last, hid);
  const std::vector<float>& wte = Wte();
  std::vector<float> logits(static_cast<size_t>(seqs) * vocab);
  for (size_t s = 0; s < static_cast<size_t>(seqs); ++s) {
    for (size_t t = 0; t < vocab; ++t) {
      float dot = 0;
      for (size_t i = 0; i < hid; ++i) dot += x[s * hid + i] * wte[t * hid + i];
      logits[s * vocab + t] = dot;
    }
  }
  return logits;
}

}  // namespace gpulaunch::examples
