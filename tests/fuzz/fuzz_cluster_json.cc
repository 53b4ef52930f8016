// libFuzzer: gpulaunch-cluster/v1 files (common/cluster_json.h) and the JSON
// reader under them (what the writer produces must read back the same); the
// other JSON files gpulaunch reads: policy files, `check --save` baselines,
// hosts' facts.
#include <cstdint>
#include <string>

#include "common/cluster_json.h"
#include "common/json.h"
#include "launcher/check/preflight.h"
#include "slurm/slurm_policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto json = gpulaunch::ParseJson(text, "fuzz"); json.ok()) {
    const std::string once = json->Write();
    auto again = gpulaunch::ParseJson(once, "fuzz-again");
    if (!again.ok() || again->Write() != once) __builtin_trap();
  }
  (void)gpulaunch::LoadClusterJson(text, "fuzz");
  if (auto policy = gpulaunch::ParsePolicyFile(text, "fuzz"); policy.ok()) {
    (void)gpulaunch::SlurmPolicyApplyScript(*policy);
  }
  (void)gpulaunch::ParseBaseline(text, "fuzz");
  (void)gpulaunch::ParseFactsOutput(std::string(gpulaunch::kFactsBegin) + text + gpulaunch::kFactsEnd, "fuzz");
  return 0;
}
