#include "slurm/tier_billing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/strings.h"

namespace gpulaunch {
namespace {

// A weight as TRESBillingWeights takes it, rounded up at the sixth
// significant digit (never under-counting a node's share).
std::string WeightText(double w) {
  const double scale = std::pow(10.0, 5 - std::floor(std::log10(w)));
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", std::ceil(w * scale - 1e-9) / scale);
  return text;
}

}  // namespace

std::string TierBilling::Weights() const {
  if (cpu <= 0 && mem_gb <= 0) return "";
  return (cpu > 0 ? "CPU=" + WeightText(cpu) + "," : "") + (mem_gb > 0 ? "Mem=" + WeightText(mem_gb) + "G," : "") +
         "GRES/gpu=1";
}

std::string TierBilling::GrpTres(int gpus) const {
  const std::string n = std::to_string(gpus);
  return Weights().empty() ? "gres/gpu=" + n : "billing=" + n + ",gres/gpu=" + n;
}

TierBilling TierBillingFor(const SiteConf* site) {
  TierBilling b;
  if (!site) {
    b.basis = "no site configuration read, so no node shapes: the tiers count GPUs only";
    return b;
  }
  const SiteConfValue* select = site->Find("SelectTypeParameters");
  const bool memory = select && AsciiLower(select->value).find("memory") != std::string::npos;
  std::string shapes;
  for (const SiteNode& n : site->nodes) {
    if (n.gpus <= 0) continue;
    b.cpu = std::max(b.cpu, static_cast<double>(n.gpus) / n.cpus);
    // RealMemory unset (Slurm's 1 MB) says nothing of the node's memory.
    if (memory && n.memory_mb > 1) b.mem_gb = std::max(b.mem_gb, n.gpus / (static_cast<double>(n.memory_mb) / 1024.0));
    shapes += (shapes.empty() ? "" : ", ") + n.names + " (" + std::to_string(n.cpus) + " CPUs, " +
              std::to_string(n.gpus) + " GPUs, " + std::to_string(n.memory_mb) + " MB)";
  }
  if (shapes.empty()) {
    b.basis = site->origin + " names no node with GPUs" +
              (site->includes.empty() ? "" : " (its Include lines were not followed)") +
              ": the tiers count GPUs only, and a team's tier can keep other teams' GPUs idle through cores or "
              "memory (docs/slurm.md)";
    return b;
  }
  b.basis = "GPU nodes " + shapes + " in " + site->origin + ": a CPU counts as " + WeightText(b.cpu) + " GPU" +
            (memory ? ", a GB of memory as " + WeightText(b.mem_gb) + " GPU"
                    : "; memory is not counted (SelectTypeParameters=" + (select ? select->value : "unset") +
                          " does not make it consumable)");
  return b;
}

}  // namespace gpulaunch
