// libFuzzer: gpulaunch-cluster/v1 files (common/cluster_json.h) and the JSON
// reader under them (what the writer produces must read back the same); the
// placement on every accepted cluster (no two bound ranks of a host share a
// CPU, none is bound to nothing, no GPU is given twice); the
// other JSON files gpulaunch reads: policy files, `check --save` baselines,
// hosts' facts, link files (which must write back what they read, and whose
// leaves must make a tree).
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "common/cluster_json.h"
#include "common/json.h"
#include "common/link_table.h"
#include "launcher/check/preflight.h"
#include "policies/placement_engine.h"
#include "slurm/policy_slurm_side.h"
#include "slurm/slurm_policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto json = gpulaunch::ParseJson(text, "fuzz"); json.ok()) {
    const std::string once = json->Write();
    auto again = gpulaunch::ParseJson(once, "fuzz-again");
    if (!again.ok() || again->Write() != once) __builtin_trap();
  }
  if (auto cluster = gpulaunch::LoadClusterJson(text, "fuzz"); cluster.ok()) {
    // What an accepted cluster file yields must be a sound plan: bound ranks
    // of one host never share a CPU, and no two ranks share a GPU.
    int free_gpus = 0, cores = 0;
    for (const gpulaunch::ClusterHost& h : cluster->hosts) {
      free_gpus += h.FreeGpus();
      cores += static_cast<int>(h.topology->cores.size());
    }
    gpulaunch::JobRequest r;
    r.ranks = std::max(1, std::min(free_gpus > 0 ? free_gpus : cores, 64));
    if (auto layout = gpulaunch::ParseLayout("", r.ranks); layout.ok()) r.layout = *layout;
    if (auto p = gpulaunch::Place(r, *cluster); p.ok()) {
      std::map<std::string, std::set<int>> cpus_of, gpus_of;
      for (const gpulaunch::RankSlot& s : p->ranks) {
        for (int g : s.gpus)
          if (!gpus_of[s.host].insert(g).second) __builtin_trap();
        if (!s.bound) continue;
        if (s.cpus.empty()) __builtin_trap();
        for (int c : s.cpus)
          if (!cpus_of[s.host].insert(c).second) __builtin_trap();
      }
    }
  }
  if (auto policy = gpulaunch::ParsePolicyFile(text, "fuzz"); policy.ok()) {
    (void)gpulaunch::SlurmPolicyConf(*policy, gpulaunch::TierBilling{0.5, 0.01, ""});
    (void)gpulaunch::SlurmPolicyJobSubmitLua(*policy);
    // The script's policy lines carry only names, numbers and Slurm's syntax.
    const std::string apply = gpulaunch::SlurmPolicyApplyScript(*policy, gpulaunch::TierBilling{0.5, 0.01, ""});
    const size_t calls = apply.find("\nneed ");  // after the helpers' definitions
    if (calls == std::string::npos) __builtin_trap();
    for (size_t at = apply.find("\nensure_", calls); at != std::string::npos; at = apply.find("\nensure_", at + 1)) {
      const size_t end = apply.find('\n', at + 1);
      const std::string line = apply.substr(at + 1, end - at - 1);
      if (line.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _=/,.:-") !=
          std::string::npos) {
        __builtin_trap();
      }
    }
  }
  if (auto links = gpulaunch::ParseLinkTable(text, "fuzz"); links.ok()) {
    const std::string once = gpulaunch::WriteLinkTable(*links);
    auto again = gpulaunch::ParseLinkTable(once, "fuzz-again");
    if (!again.ok() || gpulaunch::WriteLinkTable(*again) != once) __builtin_trap();
    if (!gpulaunch::LeavesAsNetworkTree(*links).ok()) __builtin_trap();
  }
  (void)gpulaunch::ParseBaseline(text, "fuzz");
  (void)gpulaunch::ParseFactsOutput(std::string(gpulaunch::kFactsBegin) + text + gpulaunch::kFactsEnd, "fuzz");
  return 0;
}
