#include "examples/transformer/train_state.h"

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

}  // namespace gpulaunch::examples
