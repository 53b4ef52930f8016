#include "slurm/scheduler_timing.h"

#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "common/strings.h"
#include "slurm/policy_slurm_side.h"

namespace gpulaunch {

long long OptionValue(const std::string& list, const std::string& key) {
  for (const std::string& item : Split(list, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || AsciiLower(Trim(item.substr(0, eq))) != AsciiLower(key)) continue;
    const std::optional<int64_t> n = ParseInt(Trim(item.substr(eq + 1)));
    return n && *n >= 0 && *n <= 100000000 ? *n : -1;
  }
  return -1;
}

SlurmSchedulerTiming SchedulerTimingOf(const SiteConf& site) {
  SlurmSchedulerTiming t;
  if (const SiteConfValue* sp = site.Find("SchedulerParameters")) {
    if (const long long every = OptionValue(sp->value, "bf_interval"); every > 0) t.backfill_interval_s = every;
  }
  if (const SiteConfValue* auth = site.Find("AuthInfo")) {
    if (const long long hold = OptionValue(auth->value, "cred_expire"); hold >= 0) t.requeue_hold_s = hold;
  }
  if (const SitePartition* borrowed = site.FindPartition("gl-borrowed")) {
    const auto it = borrowed->fields.find("gracetime");
    const std::optional<int64_t> grace = it == borrowed->fields.end() ? std::optional<int64_t>(0) : ParseInt(it->second);
    if (grace && *grace >= 0 && *grace <= 100000000) {
      t.reclaim_delay_s = SlurmMeanReclaimDelayForGraceTime(static_cast<int>(*grace));
      t.grace_time_s = static_cast<double>(*grace);
    }
  }
  for (const SitePartition& p : site.partitions) {
    if (!StartsWith(p.name, "gl-") || p.name == "gl-borrowed") continue;
    const auto it = p.fields.find("tresbillingweights");
    if (it == p.fields.end()) continue;
    for (const std::string& item : Split(it->second, ',')) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos || AsciiLower(Trim(item.substr(0, eq))) != "cpu") continue;
      char* end = nullptr;
      const std::string v(Trim(item.substr(eq + 1)));
      const double w = std::strtod(v.c_str(), &end);
      if (end && *end == '\0' && w > 0 && w <= 1e6) t.tier_cpu_billing = std::max(t.tier_cpu_billing, w);
    }
  }
  return t;
}

}  // namespace gpulaunch
