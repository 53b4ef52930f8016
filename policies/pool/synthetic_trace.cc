#include "policies/pool/synthetic_trace.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/strings.h"
#include "policies/pool/seeded_rng.h"

namespace gpulaunch::pool {
namespace {

using Rng = SeededRng;

int Size(double u) {
  const std::pair<double, int> mix[] = {{0.45, 1}, {0.02, 2}, {0.08, 4}, {0.40, 8}, {0.03, 16}, {0.015, 32}};
  for (const auto& [share, gpus] : mix) {
    if (u < share) return gpus;
    u -= share;
  }
  return 64;
}

// Datasets come from streams of their own, so a spec with datasets keeps
// every other field of the same spec without them.
void AddDatasets(const SyntheticSpec& spec, std::vector<TraceJob>& jobs) {
  if (spec.datasets <= 0) return;
  Rng sizes(spec.seed ^ 0xda7a5e7ULL), picks(spec.seed ^ 0x5e1ec7ULL);
  std::vector<double> gb, cumulative;
  double total = 0;
  for (int d = 0; d < spec.datasets; ++d) {
    gb.push_back(std::round(kDatasetMinGb * std::pow(kDatasetMaxGb / kDatasetMinGb, sizes.Uniform())));
    total += 1.0 / (d + 1);  // Zipf, exponent 1: dataset d is picked in proportion to 1 / (d + 1)
    cumulative.push_back(total);
  }
  for (TraceJob& j : jobs) {
    const double u = picks.Uniform() * total;
    j.dataset = static_cast<int>(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
    j.dataset = std::min(j.dataset, spec.datasets - 1);
    j.dataset_gb = gb[static_cast<size_t>(j.dataset)];
  }
}

}  // namespace

StatusOr<SyntheticSpec> ParseSyntheticSpec(const std::string& text) {
  SyntheticSpec s;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    const size_t colon = word.find(':');
    const std::string key = word.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : word.substr(colon + 1);
    const auto n = ParseInt(value);
    char* end = nullptr;
    const double x = std::strtod(value.c_str(), &end);
    const bool fraction = !value.empty() && *end == '\0' && x >= 0 && x <= 1;
    if (key == "jobs" && n && *n >= 1 && *n <= 1000000) {
      s.jobs = static_cast<int>(*n);
    } else if (key == "days" && n && *n >= 1 && *n <= 3650) {
      s.days = static_cast<double>(*n);
    } else if (key == "seed" && n && *n >= 0 && *n <= 0xffffffffLL) {
      s.seed = static_cast<uint32_t>(*n);
    } else if (key == "teams" && n && *n >= 0 && *n <= 1000) {
      s.teams = static_cast<int>(*n);
    } else if (key == "users" && n && *n >= 0 && *n <= 100000) {
      s.users = static_cast<int>(*n);
    } else if (key == "high" && fraction) {
      s.high = x;
    } else if (key == "templated" && fraction) {
      s.templated = x;
    } else if (key == "datasets" && n && *n >= 0 && *n <= 100000) {
      s.datasets = static_cast<int>(*n);
    } else {
      return InvalidArgument("synthetic trace '" + text + "': '" + word +
                             "' is not jobs:N, days:N, seed:N, teams:N, users:N, high:FRACTION, templated:FRACTION or "
                             "datasets:N (e.g. \"jobs:2000 days:14 teams:3 users:24 high:0.1\")");
    }
  }
  return s;
}

StatusOr<std::vector<TraceJob>> SyntheticTrace(const SyntheticSpec& spec, const std::vector<ResourceTemplate>& templates) {
  if (spec.templated > 0 && templates.empty()) {
    return InvalidArgument("synthetic trace: templated:" + std::to_string(spec.templated) + " needs --templates");
  }
  Rng rng(spec.seed);
  const double mean_gap = spec.days * 86400 / spec.jobs;
  std::vector<TraceJob> jobs;
  double t = 0;
  for (int i = 0; i < spec.jobs; ++i) {
    t += -std::log(1 - rng.Uniform()) * mean_gap;
    TraceJob j;
    j.id = i;
    j.line = i + 1;
    j.submit = std::floor(t);
    j.duration = std::floor(300 * std::pow(24.0 * 3600 / 300, rng.Uniform()));
    j.gpus = Size(rng.Uniform());
    j.priority = rng.Uniform() < spec.high ? 1 : 0;
    if (spec.users > 0) j.user = rng.Below(spec.users);
    if (spec.teams > 0) j.team = (j.user >= 0 ? j.user : rng.Below(spec.teams)) % spec.teams;
    if (rng.Uniform() < spec.templated) {
      const ResourceTemplate& tpl = templates[static_cast<size_t>(rng.Below(static_cast<int>(templates.size())))];
      j.template_name = tpl.name;
      j.gpus = tpl.gpus;
    }
    jobs.push_back(j);
  }
  GL_RETURN_IF_ERROR(ApplyTemplates(jobs, templates, "synthetic trace"));
  AddDatasets(spec, jobs);
  return jobs;
}

}  // namespace gpulaunch::pool
