#include "examples/transformer/train_state.h"

#include <cmath>
#include <cstring>

namespace gpulaunch::examples {
namespace {

void PutFloats(std::string& out, const std::vector<float>& v) {
  const uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  if (n > 0) out.append(reinterpret_cast<const char*>(v.data()), n * sizeof(float));
}

bool GetFloats(const std::string& in, size_t& at, std::vector<float>& v) {
  uint64_t n = 0;
  if (at + sizeof n > in.size()) return false;
  std::memcpy(&n, in.data() + at, sizeof n);
  at += sizeof n;
  if (n > (in.size() - at) / sizeof(float)) return false;
  v.resize(n);
  if (n > 0) std::memcpy(v.data(), in.data() + at, n * sizeof(float));  // data() may be null when empty
  at += n * sizeof(float);
  return true;
}

}  // namespace

std::string SaveTrainState(const std::vector<ParamShard*>& params, std::map<uint64_t, AdamState>& adam,
                           const std::string& loss_log) {
  std::string out;
  for (const ParamShard* p : params) {
    PutFloats(out, p->value);
    PutFloats(out, adam[p->id].m);
    PutFloats(out, adam[p->id].v);
  }
  out += loss_log;
  return out;
}

Status RestoreTrainState(const std::string& state, const std::vector<ParamShard*>& params,
                         std::map<uint64_t, AdamState>& adam, std::string& loss_log) {
  size_t at = 0;
  for (ParamShard* p : params) {
    const size_t expected = p->value.size();
    if (!GetFloats(state, at, p->value) || p->value.size() != expected || !GetFloats(state, at, adam[p->id].m) ||
        !GetFloats(state, at, adam[p->id].v)) {
      return FailedPrecondition("the checkpoint does not match this model (parameter " + std::to_string(p->id) + ")");
    }
  }
  loss_log = state.substr(at);
  return Status::Ok();
}

void OptimizerStep(const std::vector<ParamShard*>& params, const std::vector<float>& grad, const std::string& optimizer,
                   double lr_d, int step, std::map<uint64_t, AdamState>& adam) {
  const float lr = static_cast<float>(lr_d);
  const float c1 = 1.0f - std::pow(0.9f, static_cast<float>(step + 1));
  const float c2 = 1.0f - std::pow(0.999f, static_cast<float>(step + 1));
  size_t at = 0;
  for (ParamShard* p : params) {
    AdamState& st = adam[p->id];
    if (st.m.empty()) st.m.assign(p->value.size(), 0.0f), st.v.assign(p->value.size(), 0.0f);
    for (size_t i = 0; i < p->value.size(); ++i, ++at) {
      const float g = grad[at];
      if (optimizer == "sgd") {
        p->value[i] -= lr * g;
      } else {
        st.m[i] = 0.9f * st.m[i] + 0.1f * g;
        st.v[i] = 0.999f * st.v[i] + 0.001f * g * g;
        p->value[i] -= lr * (st.m[i] / c1) / (std::sqrt(st.v[i] / c2) + 1e-8f);
      }
    }
  }
}

}  // namespace gpulaunch::examples
