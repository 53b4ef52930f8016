#include "examples/transformer/model.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <functional>

#include "runtime/leaf_sum.h"
#include "runtime/tensor_parallel.h"

namespace gpulaunch::examples {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Initial value of element `index` of tensor `tensor`: uniform in [-scale, scale).
float Param(uint64_t seed, uint64_t tensor, uint64_t index, float scale) {
  const uint64_t bits = SplitMix(SplitMix(SplitMix(seed) ^ tensor) ^ index);
  return scale * (static_cast<float>(bits >> 40) / static_cast<float>(1ULL << 23) - 1.0f);
}

// Row-wise layer norm without gain and bias; sums in ascending order.
std::vector<float> LayerNorm(const std::vector<float>& x, size_t width) {
  std::vector<float> y(x.size());
  for (size_t row = 0; row < x.size() / width; ++row) {
    const float* in = &x[row * width];
    float mean = 0, var = 0;
    for (size_t i = 0; i < width; ++i) mean += in[i];
    mean /= static_cast<float>(width);
    for (size_t i = 0; i < width; ++i) var += (in[i] - mean) * (in[i] - mean);
    var /= static_cast<float>(width);
    const float inv = 1.0f / std::sqrt(var + 1e-5f);
    for (size_t i = 0; i < width; ++i) y[row * width + i] = (in[i] - mean) * inv;
  }
  return y;
}

// dx of LayerNorm at input x, given dy: inv * (dy - mean(dy) - y mean(dy y)).
std::vector<float> LayerNormBackward(const std::vector<float>& x, const std::vector<float>& dy, size_t width) {
  const std::vector<float> y = LayerNorm(x, width);
  std::vector<float> dx(x.size());
  for (size_t row = 0; row < x.size() / width; ++row) {
    const float* in = &x[row * width];
    float mean = 0, var = 0;
    for (size_t i = 0; i < width; ++i) mean += in[i];
    mean /= static_cast<float>(width);
    for (size_t i = 0; i < width; ++i) var += (in[i] - mean) * (in[i] - mean);
    var /= static_cast<float>(width);
    const float inv = 1.0f / std::sqrt(var + 1e-5f);
    float mdy = 0, mdyy = 0;
    for (size_t i = 0; i < width; ++i) {
      mdy += dy[row * width + i];
      mdyy += dy[row * width + i] * y[row * width + i];
    }
    mdy /= static_cast<float>(width);
    mdyy /= static_cast<float>(width);
    for (size_t i = 0; i < width; ++i) {
      dx[row * width + i] = inv * (dy[row * width + i] - mdy - y[row * width + i] * mdyy);
    }
  }
  return dx;
}

constexpr float kGeluC = 0.7978845608f;
float Gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + 0.044715f * x * x * x))); }
float GeluGrad(float x) {
  const float t = std::tanh(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * x * x);
}

void AddBias(std::vector<float>& y, const std::vector<float>& b) {
  for (size_t i = 0; i < y.size(); ++i) y[i] += b[i % b.size()];
}

// out (k x n) = a^T b for a (t x k), b (t x n): sums over t in order.
void MatMulTN(const float* a, size_t t, size_t k, const float* b, size_t n, float* out) {
  std::memset(out, 0, k * n * sizeof(float));
  for (size_t r = 0; r < t; ++r) {
    for (size_t i = 0; i < k; ++i) {
      const float x = a[r * k + i];
      for (size_t j = 0; j < n; ++j) out[i * n + j] += x * b[r * n + j];
    }
  }
}

// out (t x k) = a b^T for a (t x n), b (k x n): sums over n in order.
void MatMulNT(const float* a, size_t t, size_t n, const float* b, size_t k, float* out) {
  for (size_t r = 0; r < t; ++r) {
    for (size_t i = 0; i < k; ++i) {
      float sum = 0;
      for (size_t j = 0; j < n; ++j) sum += a[r * n + j] * b[i * n + j];
      out[r * k + i] = sum;
    }
  }
}

// Column sums of a (t x n), over t in order.
void ColumnSums(const std::vector<float>& a, size_t n, std::vector<float>& out) {
  out.assign(n, 0.0f);
  for (size_t r = 0; r < a.size() / n; ++r)
    for (size_t j = 0; j < n; ++j) out[j] += a[r * n + j];
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

Status TransformerLayers::Backward(int layer, int mb, int seqs, float loss_scale, std::vector<float>& dh) {
  const size_t hid = config_.hidden, seq = config_.seq, vocab = config_.vocab, n = static_cast<size_t>(seqs) * seq;
  if (layer == 0) {
    ParamShard &wte = P(1), &wpe = P(2);
    std::fill(wte.grad.begin(), wte.grad.end(), 0.0f);
    std::fill(wpe.grad.begin(), wpe.grad.end(), 0.0f);
    const std::vector<int32_t>& tokens = tokens_[mb];
    for (size_t t = 0; t < n; ++t) {
      for (size_t i = 0; i < hid; ++i) {
        wte.grad[static_cast<size_t>(tokens[t]) * hid + i] += dh[t * hid + i];
        wpe.grad[(t % seq) * hid + i] += dh[t * hid + i];
      }
    }
    tokens_.erase(mb);
    dh.clear();
    return Status::Ok();
  }
  auto it = saved_.find({mb, layer});
  if (it == saved_.end()) return Internal("backward of layer " + std::to_string(layer) + " before its forward");
  const Saved s = std::move(it->second);
  saved_.erase(it);
  if (layer < layers() - 1) {
    const int block = (layer - 1) / 2;
    return (layer - 1) % 2 == 0 ? AttentionBackward(block, seqs, s, dh) : MlpBackward(block, seqs, s, dh);
  }
  // Head: dlogits = (p - onehot(target)) * loss_scale.
  ParamShard& head = P(3);
  std::vector<float> dl = s.p;
  const std::vector<int32_t>& targets = targets_[mb];
  for (size_t t = 0; t < n; ++t) {
    dl[t * vocab + static_cast<size_t>(targets[t])] -= 1.0f;
    for (size_t v = 0; v < vocab; ++v) dl[t * vocab + v] *= loss_scale;
  }
  targets_.erase(mb);
  const std::vector<float> xn = LayerNorm(s.x, hid);
  MatMulTN(dl.data(), n, vocab, xn.data(), hid, head.grad.data());
  std::vector<float> dxn(n * hid);
  rt::MatMul(dl.data(), n, vocab, head.value.data(), hid, hid, dxn.data());
  dh = LayerNormBackward(s.x, dxn, hid);
  return Status::Ok();
}

Status TransformerLayers::AttentionBackward(int block, int seqs, const Saved& s, std::vector<float>& dh) {
  const uint64_t base = 1000 * static_cast<uint64_t>(block + 1);
  const size_t hid = config_.hidden, seq = config_.seq, n = static_cast<size_t>(seqs) * seq;
  ParamShard &wq = P(base + 1), &wk = P(base + 2), &wv = P(base + 3), &wo = P(base + 7);
  const size_t cols = wq.col_count, dh_ = hid / config_.heads, local_heads = cols / dh_;
  ColumnSums(dh, hid, P(base + 8).grad);
  MatMulTN(s.o.data(), n, cols, dh.data(), hid, wo.grad.data());
  std::vector<float> d_o(n * cols);
  MatMulNT(dh.data(), n, hid, wo.value.data(), cols, d_o.data());
  std::vector<float> dq(n * cols, 0.0f), dk(n * cols, 0.0f), dv(n * cols, 0.0f), dp(seq);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh_));
  for (size_t sq = 0; sq < static_cast<size_t>(seqs); ++sq) {
    for (size_t head = 0; head < local_heads; ++head) {
      const float* P_ = &s.p[(sq * local_heads + head) * seq * seq];
      for (size_t i = 0; i < seq; ++i) {
        const float* doi = &d_o[(sq * seq + i) * cols + head * dh_];
        float row = 0;
        for (size_t j = 0; j <= i; ++j) {
          const float* vj = &s.v[(sq * seq + j) * cols + head * dh_];
          float* dvj = &dv[(sq * seq + j) * cols + head * dh_];
          float dot = 0;
          for (size_t d = 0; d < dh_; ++d) {
            dot += doi[d] * vj[d];
            dvj[d] += P_[i * seq + j] * doi[d];
          }
          dp[j] = dot;
          row += P_[i * seq + j] * dot;
        }
        const float* qi = &s.q[(sq * seq + i) * cols + head * dh_];
        float* dqi = &dq[(sq * seq + i) * cols + head * dh_];
        for (size_t j = 0; j <= i; ++j) {
          const float ds = P_[i * seq + j] * (dp[j] - row) * scale;
          const float* kj = &s.k[(sq * seq + j) * cols + head * dh_];
          float* dkj = &dk[(sq * seq + j) * cols + head * dh_];
          for (size_t d = 0; d < dh_; ++d) {
            dqi[d] += ds * kj[d];
            dkj[d] += ds * qi[d];
          }
        }
      }
    }
  }
  ColumnSums(dq, cols, P(base + 4).grad);
  ColumnSums(dk, cols, P(base + 5).grad);
  ColumnSums(dv, cols, P(base + 6).grad);
  MatMulTN(s.a.data(), n, hid, dq.data(), cols, wq.grad.data());
  MatMulTN(s.a.data(), n, hid, dk.data(), cols, wk.grad.data());
  MatMulTN(s.a.data(), n, hid, dv.data(), cols, wv.grad.data());
  // da = dq Wq^T + dk Wk^T + dv Wv^T, one leaf per head.
  return AddInputGradient(n, local_heads, s.x, dh, [&](size_t head, size_t t, size_t i) {
    float acc = 0;
    for (size_t c = head * dh_; c < (head + 1) * dh_; ++c) {
      acc += dq[t * cols + c] * wq.value[i * cols + c] + dk[t * cols + c] * wk.value[i * cols + c] +
             dv[t * cols + c] * wv.value[i * cols + c];
    }
    return acc;
  });
}

Status TransformerLayers::AddInputGradient(size_t n, size_t local_leaves, const std::vector<float>& x,
                                           std::vector<float>& dh,
                                           const std::function<float(size_t, size_t, size_t)>& leaf_element) {
  const size_t hid = config_.hidden;
  auto sum = rt::LeafSum<float>::ForRank(n * hid, config_.heads, tp_->rank(), tp_->size());
  std::vector<float> partial(n * hid);
  for (size_t l = 0; l < local_leaves; ++l) {
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i < hid; ++i) partial[t * hid + i] = leaf_element(l, t, i);
    GL_RETURN_IF_ERROR(sum.AddLeaf(partial.data()));
  }
  std::vector<float> da(n * hid);
  GL_RETURN_IF_ERROR(reducer_->Allreduce(sum, da.data()));
  const std::vector<float> dx = LayerNormBackward(x, da, hid);
  for (size_t i = 0; i < dh.size(); ++i) dh[i] += dx[i];
  return Status::Ok();
}

Status TransformerLayers::MlpBackward(int block, int seqs, const Saved& s, std::vector<float>& dh) {
  const uint64_t base = 1000 * static_cast<uint64_t>(block + 1);
  const size_t hid = config_.hidden, n = static_cast<size_t>(seqs) * config_.seq;
  ParamShard &w1 = P(base + 9), &w2 = P(base + 11);
  const size_t ff = w1.col_count;
  ColumnSums(dh, hid, P(base + 12).grad);
  MatMulTN(s.o.data(), n, ff, dh.data(), hid, w2.grad.data());
  std::vector<float> du(n * ff);
  MatMulNT(dh.data(), n, hid, w2.value.data(), ff, du.data());
  for (size_t i = 0; i < du.size(); ++i) du[i] *= GeluGrad(s.u[i]);
  ColumnSums(du, ff, P(base + 10).grad);
  MatMulTN(s.a.data(), n, hid, du.data(), ff, w1.grad.data());
  // da = du W1^T over leaves of 4h / heads columns.
  const size_t leaf = 4 * hid / config_.heads;
  return AddInputGradient(n, ff / leaf, s.x, dh, [&](size_t l, size_t t, size_t i) {
    float acc = 0;
    for (size_t c = l * leaf; c < (l + 1) * leaf; ++c) acc += du[t * ff + c] * w1.value[i * ff + c];
    return acc;
  });
}

}  // namespace gpulaunch::examples
