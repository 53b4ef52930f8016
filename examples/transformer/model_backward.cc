// The transformer example's backward passes (model.h): parameter gradients
// per micro-batch, and input gradients through the same deterministic leaves
// as the forward's tensor-parallel products.
#include <cmath>
#include <cstring>
#include <functional>

#include "examples/transformer/kernels.h"
#include "examples/transformer/model.h"
#include "runtime/leaf_sum.h"
#include "runtime/tensor_parallel.h"

namespace gpulaunch::examples {

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
