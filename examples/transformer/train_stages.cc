#include "examples/transformer/train_stages.h"

#include <cstring>

namespace gpulaunch::examples {

namespace {

// Token `pos` (0 .. seq) of global sequence `s` at `step`: a noisy counting
// pattern the model can learn.
int32_t DataToken(const ModelConfig& c, int step, int s, int pos) {
  const uint64_t noise = SplitMix(SplitMix(c.seed * 7919 + static_cast<uint64_t>(step)) ^ static_cast<uint64_t>(s * 4099 + pos));
  const int base = (s * 3 + pos * (1 + s % 3)) % c.vocab;
  return static_cast<int32_t>(noise % 8 == 0 ? noise % static_cast<uint64_t>(c.vocab) : static_cast<uint64_t>(base));
}

}  // namespace

void ReplicaBatch(const ModelConfig& model, int step, int replica, int per_replica, std::vector<int32_t>& tokens,
                  std::vector<int32_t>& targets) {
  for (int s = replica * per_replica; s < (replica + 1) * per_replica; ++s) {
    for (int pos = 0; pos < model.seq; ++pos) {
      tokens.push_back(DataToken(model, step, s, pos));
      targets.push_back(DataToken(model, step, s, pos + 1));
    }
  }
}

size_t TrainStages::ActivationFloats(int) const {
  return static_cast<size_t>(spm_) * layers_.config().seq * layers_.config().hidden;
}

StatusOr<std::vector<float>> TrainStages::Forward(int mb, int stage, const std::vector<float>& input) {
  std::vector<float> h = input;
  const size_t at = static_cast<size_t>(mb) * spm_ * layers_.config().seq;
  for (int l = first_[stage]; l < first_[stage + 1]; ++l) {
    double loss = 0;
    GL_RETURN_IF_ERROR(layers_.Forward(l, mb, spm_, tokens_.data() + at, targets_.data() + at, h, true, nullptr, &loss));
    if (l == layers_.layers() - 1) losses_.Add(loss);
  }
  return h;
}

StatusOr<std::vector<float>> TrainStages::Backward(int mb, int stage, const std::vector<float>& grad_output) {
  std::vector<float> dh = grad_output;
  for (int l = first_[stage + 1] - 1; l >= first_[stage]; --l) {
    GL_RETURN_IF_ERROR(layers_.Backward(l, mb, spm_, loss_scale_, dh));
  }
  std::vector<float> flat;
  for (ParamShard* p : layers_.Params(first_[stage], first_[stage + 1])) flat.insert(flat.end(), p->grad.begin(), p->grad.end());
  auto& sum = sums_.at(stage);
  GL_RETURN_IF_ERROR(sum.AddLeaf(flat.data()));
  return dh;
}

StatusOr<std::string> GatherWeights(rt::Communicator& world, const ParallelLayout& layout,
                                    const std::vector<ParamShard*>& mine) {
  std::string buffer;
  auto put = [&](uint64_t v) { buffer.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const ParamShard* p : mine) {
    for (uint64_t v : {p->id, p->rows, p->cols, p->row_first, p->row_count, p->col_first, p->col_count}) put(v);
    buffer.append(reinterpret_cast<const char*>(p->value.data()), p->value.size() * sizeof(float));
  }
  const bool sender = layout.CoordsOf(world.rank())[kDp] == 0;
  if (world.rank() != 0) {
    if (sender) {
      const uint64_t size = buffer.size();
      GL_RETURN_IF_ERROR(world.Send(0, 7100, &size, sizeof size));
      GL_RETURN_IF_ERROR(world.Send(0, 7101, buffer.data(), buffer.size()));
    }
    return std::string();
  }
  std::map<uint64_t, std::pair<std::vector<uint64_t>, std::vector<float>>> full;  // id -> (rows, cols), values
  auto absorb = [&](const std::string& b) {
    size_t at = 0;
    while (at < b.size()) {
      uint64_t h[7];
      std::memcpy(h, b.data() + at, sizeof h);
      at += sizeof h;
      auto& [shape, values] = full[h[0]];
      if (values.empty()) shape = {h[1], h[2]}, values.assign(h[1] * h[2], 0.0f);
      for (uint64_t r = 0; r < h[4]; ++r) {
        std::memcpy(&values[(h[3] + r) * h[2] + h[5]], b.data() + at + r * h[6] * sizeof(float), h[6] * sizeof(float));
      }
      at += h[4] * h[6] * sizeof(float);
    }
  };
  absorb(buffer);
  for (int r = 1; r < world.size(); ++r) {
    if (layout.CoordsOf(r)[kDp] != 0) continue;
    uint64_t size = 0;
    GL_RETURN_IF_ERROR(world.Recv(r, 7100, &size, sizeof size));
    std::string b(size, '\0');
    GL_RETURN_IF_ERROR(world.Recv(r, 7101, b.data(), b.size()));
    absorb(b);
  }
  std::string out;
  for (const auto& [id, sv] : full) out.append(reinterpret_cast<const char*>(sv.second.data()), sv.second.size() * sizeof(float));
  return out;
}

}  // namespace gpulaunch::examples
