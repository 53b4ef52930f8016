#include "slurm/scheduler_timing.h"

#include <cstdint>
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
    }
  }
  return t;
}

}  // namespace gpulaunch
