// `gpulaunch sim --explain JOB`: one job's story, told as the simulation
// runs: each change in why it waits (its place in the queue, the queue
// order's key, its estimate, its team's quota, the constraint with its
// numbers), where it went and what else it could have had, what suspended
// it, and how it ended. The reasons are the Scheduler's own (Waiting()), the
// ones a user of a real pool is given.
#pragma once

#include <string>
#include <vector>

#include "policies/pool/data_cache.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/scheduler.h"

namespace gpulaunch::pool {

class JobStory {
 public:
  // `origin`: the first submission, the story's clock.
  JobStory(const TraceJob& job, double origin) : job_(job), origin_(origin) {}
  int job() const { return job_.id; }

  // Before a scheduling pass: what each host has free, the choices the pass has.
  void BeforePass(const GpuPool& pool);
  // A decision of the pass about this job. `cache`: null without the
  // locality model; `copy_s`: the time its start spends copying its dataset.
  void Decided(const Decision& d, double now, const Scheduler& s, const DataCache* cache, double copy_s);
  // After the pass, while it waits: why, told again when what holds it back
  // changes, and when its place in the queue changed, at most every 6 hours.
  void Waits(const Scheduler& s, double now);
  // Its last run ended: done, or cut by its time limit with `work_left_s` to do.
  void Ended(double now, bool by_limit, double work_left_s);

  const std::vector<std::string>& lines() const { return lines_; }

 private:
  void Tell(double now, const std::string& what);
  std::string Placement(const Decision& d, const GpuPool& pool) const;

  TraceJob job_;
  double origin_ = 0;
  std::vector<int> free_before_;  // by host, before this pass
  std::string last_wait_;         // the last wait told: constraint and queue position
  double last_wait_at_ = 0;
  std::vector<std::string> lines_;
};

}  // namespace gpulaunch::pool
