#include "examples/transformer/model.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "examples/transformer/kernels.h"
#include "runtime/tensor_parallel.h"

namespace gpulaunch::examples {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {

// Initial value of element `index` of tensor `tensor`: uniform in [-scale, scale).
float Param(uint64_t seed, uint64_t tensor, uint64_t index, float scale) {
  const uint64_t bits = SplitMix(SplitMix(SplitMix(seed) ^ tensor) ^ index);
  return scale * (static_cast<float>(bits >> 40) / static_cast<float>(1ULL << 23) - 1.0f);
}

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

ParamShard& TransformerLayers::P(uint64_t id) {
  auto it = params_.find(id);
  if (it != params_.end()) return it->second;
  const size_t h = config_.hidden, t = tp_->size(), r = tp_->rank();
  const size_t cols = h / t, ff = 4 * h / t;
  const float w = 1.0f / std::sqrt(static_cast<float>(h)), out = w / std::sqrt(2.0f * config_.blocks);
  ParamShard s;
  s.id = id;
  float scale = 0.1f;
  auto full = [&](size_t rows, size_t cs) { s.rows = s.row_count = rows, s.cols = s.col_count = cs; };
  if (id == 1) full(config_.vocab, h), scale = 0.5f;
  else if (id == 2) full(config_.seq, h);
  else if (id == 3) full(config_.vocab, h), scale = w;
  else {
    switch (id % 1000) {
      case 1: case 2: case 3: full(h, h), s.col_first = r * cols, s.col_count = cols, scale = w; break;
      case 4: case 5: case 6: full(1, h), s.col_first = r * cols, s.col_count = cols; break;
      case 7: full(h, h), s.row_first = r * cols, s.row_count = cols, scale = out; break;
      case 8: case 12: full(1, h); break;
      case 9: full(h, 4 * h), s.col_first = r * ff, s.col_count = ff, scale = w; break;
      case 10: full(1, 4 * h), s.col_first = r * ff, s.col_count = ff; break;
      default: full(4 * h, h), s.row_first = r * ff, s.row_count = ff, scale = out / 2; break;  // 11
    }
  }
  s.value.resize(s.row_count * s.col_count);
  const auto loaded = file_offset_.find(id);
  for (size_t i = 0; i < s.row_count; ++i) {
    for (size_t j = 0; j < s.col_count; ++j) {
      const size_t index = (s.row_first + i) * s.cols + s.col_first + j;
      float& v = s.value[i * s.col_count + j];
      if (loaded != file_offset_.end()) {
        std::memcpy(&v, weights_file_.data() + loaded->second + index * sizeof(float), sizeof(float));
      } else {
        v = Param(config_.seed, id, index, scale);
      }
    }
  }
  s.grad.assign(s.value.size(), 0.0f);
  return params_.emplace(id, std::move(s)).first->second;
}

Status TransformerLayers::LoadWeights(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open the weights file " + path);
  weights_file_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  // Every tensor in id order, whole, float32: what transformer_train writes.
  const size_t h = config_.hidden;
  std::vector<std::pair<uint64_t, size_t>> sizes = {{1, config_.vocab * h}, {2, config_.seq * h}, {3, config_.vocab * h}};
  for (int b = 0; b < config_.blocks; ++b) {
    const uint64_t base = 1000 * static_cast<uint64_t>(b + 1);
    for (auto [j, n] : std::vector<std::pair<uint64_t, size_t>>{{1, h * h}, {2, h * h}, {3, h * h}, {4, h}, {5, h},
                                                                 {6, h}, {7, h * h}, {8, h}, {9, 4 * h * h},
                                                                 {10, 4 * h}, {11, 4 * h * h}, {12, h}}) {
      sizes.push_back({base + j, n});
    }
  }
  size_t offset = 0;
  for (const auto& [id, n] : sizes) {
    file_offset_[id] = offset;
    offset += n * sizeof(float);
  }
  if (offset != weights_file_.size()) {
    file_offset_.clear();
    return InvalidArgument(path + ": " + std::to_string(weights_file_.size()) + " bytes, but this model (vocab " +
                           std::to_string(config_.vocab) + ", hidden " + std::to_string(h) + ", blocks " +
                           std::to_string(config_.blocks) + ", seq " + std::to_string(config_.seq) + ") has " +
                           std::to_string(offset) + "; pass the model options the weights were trained with");
  }
  params_.clear();
  return Status::Ok();
}

std::vector<ParamShard*> TransformerLayers::Params(int first, int end) {
  std::vector<ParamShard*> out;
  for (int l = first; l < end; ++l) {
    if (l == 0) {
      out.push_back(&P(1));
      out.push_back(&P(2));
    } else if (l == layers() - 1) {
      out.push_back(&P(3));
    } else {
      const uint64_t base = 1000 * static_cast<uint64_t>((l - 1) / 2 + 1);
      const bool attention = (l - 1) % 2 == 0;
      for (uint64_t j = attention ? 1 : 9; j <= (attention ? 8u : 12u); ++j) out.push_back(&P(base + j));
    }
  }
  return out;
}

Status TransformerLayers::Forward(int layer, int mb, int seqs, const int32_t* tokens, const int32_t* targets,
                                  std::vector<float>& h, bool save, std::vector<float>* logits, double* loss) {
  const size_t hid = config_.hidden, seq = config_.seq, vocab = config_.vocab, n = static_cast<size_t>(seqs) * seq;
  if (layer == 0) {
    const std::vector<float>& wte = P(1).value;
    const std::vector<float>& wpe = P(2).value;
    h.assign(n * hid, 0.0f);
    for (size_t t = 0; t < n; ++t) {
      if (tokens[t] < 0 || static_cast<size_t>(tokens[t]) >= vocab) return InvalidArgument("token out of range");
      for (size_t i = 0; i < hid; ++i) h[t * hid + i] = wte[static_cast<size_t>(tokens[t]) * hid + i] + wpe[(t % seq) * hid + i];
    }
    if (save) tokens_[mb].assign(tokens, tokens + n);
    return Status::Ok();
  }
  if (layer < layers() - 1) {
    Saved* s = save ? &saved_[{mb, layer}] : nullptr;
    const int block = (layer - 1) / 2;
    return (layer - 1) % 2 == 0 ? Attention(block, seqs, h, s) : Mlp(block, seqs, h, s);
  }
  // The head: every position when training, the last one for inference.
  const std::vector<float>& head = P(3).value;
  std::vector<float> x;
  if (targets) {
    x = h;
  } else {
    x.resize(static_cast<size_t>(seqs) * hid);
    for (size_t s = 0; s < static_cast<size_t>(seqs); ++s) {
      std::memcpy(&x[s * hid], &h[(s * seq + seq - 1) * hid], hid * sizeof(float));
    }
  }
  const size_t rows = x.size() / hid;
  const std::vector<float> xn = LayerNorm(x, hid);
  std::vector<float> out(rows * vocab);
  MatMulNT(xn.data(), rows, hid, head.data(), vocab, out.data());
  if (!targets) {
    if (logits) *logits = std::move(out);
    return Status::Ok();
  }
  // Softmax cross entropy per token; probabilities kept for the backward.
  double sum_loss = 0;
  for (size_t t = 0; t < rows; ++t) {
    float* l = &out[t * vocab];
    float max = l[0];
    for (size_t v = 1; v < vocab; ++v) max = std::max(max, l[v]);
    float sum = 0;
    for (size_t v = 0; v < vocab; ++v) sum += std::exp(l[v] - max);
    const float lse = max + std::log(sum);
    sum_loss += static_cast<double>(lse - l[targets[t]]);
    for (size_t v = 0; v < vocab; ++v) l[v] = std::exp(l[v] - lse);
  }
  if (loss) *loss = sum_loss;
  if (save) {
    Saved& s = saved_[{mb, layer}];
    s.x = std::move(x);
    s.p = std::move(out);
    targets_[mb].assign(targets, targets + rows);
  }
  return Status::Ok();
}

Status TransformerLayers::Attention(int block, int seqs, std::vector<float>& h, Saved* saved) {
  const uint64_t base = 1000 * static_cast<uint64_t>(block + 1);
  const size_t hid = config_.hidden, seq = config_.seq, n = static_cast<size_t>(seqs) * seq;
  const ParamShard &wq = P(base + 1), &wk = P(base + 2), &wv = P(base + 3), &wo = P(base + 7);
  const size_t cols = wq.col_count, dh = hid / config_.heads, local_heads = cols / dh;
  std::vector<float> a = LayerNorm(h, hid);
  GL_ASSIGN_OR_RETURN(std::vector<float> q, rt::ColumnParallel(*tp_, a, n, hid, wq.value, cols, false));
  GL_ASSIGN_OR_RETURN(std::vector<float> k, rt::ColumnParallel(*tp_, a, n, hid, wk.value, cols, false));
  GL_ASSIGN_OR_RETURN(std::vector<float> v, rt::ColumnParallel(*tp_, a, n, hid, wv.value, cols, false));
  AddBias(q, P(base + 4).value);
  AddBias(k, P(base + 5).value);
  AddBias(v, P(base + 6).value);
  std::vector<float> o(n * cols, 0.0f), probs(static_cast<size_t>(seqs) * local_heads * seq * seq, 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  for (size_t s = 0; s < static_cast<size_t>(seqs); ++s) {
    for (size_t head = 0; head < local_heads; ++head) {
      float* P_ = &probs[(s * local_heads + head) * seq * seq];
      for (size_t i = 0; i < seq; ++i) {
        const float* qi = &q[(s * seq + i) * cols + head * dh];
        float max = -INFINITY;
        for (size_t j = 0; j <= i; ++j) {  // causal
          const float* kj = &k[(s * seq + j) * cols + head * dh];
          float dot = 0;
          for (size_t d = 0; d < dh; ++d) dot += qi[d] * kj[d];
          P_[i * seq + j] = dot * scale;
          max = std::max(max, P_[i * seq + j]);
        }
        float sum = 0;
        for (size_t j = 0; j <= i; ++j) sum += P_[i * seq + j] = std::exp(P_[i * seq + j] - max);
        float* oi = &o[(s * seq + i) * cols + head * dh];
        for (size_t j = 0; j <= i; ++j) {
          P_[i * seq + j] /= sum;
          const float* vj = &v[(s * seq + j) * cols + head * dh];
          for (size_t d = 0; d < dh; ++d) oi[d] += P_[i * seq + j] * vj[d];
        }
      }
    }
  }
  GL_ASSIGN_OR_RETURN(std::vector<float> y, rt::RowParallel(*reducer_, *tp_, o, n, cols, wo.value, hid));
  if (saved) *saved = Saved{h, std::move(a), std::move(q), std::move(k), std::move(v), std::move(probs), std::move(o), {}};
  const std::vector<float>& bo = P(base + 8).value;
  for (size_t i = 0; i < h.size(); ++i) h[i] += y[i] + bo[i % hid];
  return Status::Ok();
}

Status TransformerLayers::Mlp(int block, int seqs, std::vector<float>& h, Saved* saved) {
  const uint64_t base = 1000 * static_cast<uint64_t>(block + 1);
  const size_t hid = config_.hidden, n = static_cast<size_t>(seqs) * config_.seq;
  const ParamShard &w1 = P(base + 9), &w2 = P(base + 11);
  const size_t ff = w1.col_count;
  std::vector<float> a = LayerNorm(h, hid);
  GL_ASSIGN_OR_RETURN(std::vector<float> u, rt::ColumnParallel(*tp_, a, n, hid, w1.value, ff, false));
  AddBias(u, P(base + 10).value);
  std::vector<float> g(u.size());
  for (size_t i = 0; i < u.size(); ++i) g[i] = Gelu(u[i]);
  GL_ASSIGN_OR_RETURN(std::vector<float> y, rt::RowParallel(*reducer_, *tp_, g, n, ff, w2.value, hid));
  if (saved) *saved = Saved{h, std::move(a), {}, {}, {}, {}, std::move(g), std::move(u)};
  const std::vector<float>& b2 = P(base + 12).value;
  for (size_t i = 0; i < h.size(); ++i) h[i] += y[i] + b2[i % hid];
  return Status::Ok();
}

}  // namespace gpulaunch::examples
