// The delays of a Slurm cluster that the simulator models (sim --replay
// reads them from the running cluster): how often backfill runs, how long a
// requeued job is held, and how long a reclaim of the pool's borrowed tier
// takes.
#pragma once

#include "slurm/site_conf.h"

namespace gpulaunch {

struct SlurmSchedulerTiming {
  // SchedulerParameters' bf_interval (Slurm's default 30 s): the backfill
  // pass's period.
  double backfill_interval_s = 30;
  // AuthInfo's cred_expire (default 120 s): a job requeued by preemption
  // gets BeginTime = now + this (slurm.conf(5)).
  double requeue_hold_s = 120;
  // The mean reclaim delay from the GraceTime of gl-borrowed, the pool's
  // borrowed tier (slurm-config --policy); -1: the site has no such partition.
  double reclaim_delay_s = -1;
  // That GraceTime itself (victims die at the first time-limit pass after
  // it: pool::ReclaimTiming); -1: no such partition.
  double grace_time_s = -1;
  // The CPU weight of the teams' own tiers' TRESBillingWeights (gl-T
  // partitions; slurm/tier_billing.h): a job counts there as max(GPUs,
  // CPUs x this). 0: GPUs alone.
  double tier_cpu_billing = 0;
};

SlurmSchedulerTiming SchedulerTimingOf(const SiteConf& site);

// The integer value of `key` in a comma-separated "k=v,k2=v2" list (as
// SchedulerParameters and AuthInfo hold them), or -1 when absent or not a
// whole number from 0.
long long OptionValue(const std::string& list, const std::string& key);

}  // namespace gpulaunch
