// Helpers shared by the pool's tests (pool_test, scheduler_test,
// simulator_test): pools from a cluster spec, allocations, a FIFO scheduler
// configuration and a job tied to a data host.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "policies/pool/gpu_pool.h"
#include "policies/pool/scheduler.h"

namespace gpulaunch::pool::pool_testing {

inline GpuPool Pool(const std::string& spec) {
  auto p = GpuPool::FromSpec(spec);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

// GPUs `mask` of host `host`.
inline Allocation On(int host, uint64_t mask) { return Allocation{{HostShare{host, mask}}}; }

inline SchedulerConfig Config(PlacementStyle style = PlacementStyle::kTopology) {
  SchedulerConfig c;
  c.style = style;
  c.order = QueueOrder::kFifo;
  c.grace_s = 10;
  return c;
}

// Job `id` of `gpus` GPUs submitted at `submit`, running 1000 s, its data on `host`.
inline PoolJob On(int id, int gpus, double submit, int host) {
  PoolJob j{id, 0, gpus, 0, submit, 1000};
  j.data_hosts = {host};
  return j;
}

}  // namespace gpulaunch::pool::pool_testing
