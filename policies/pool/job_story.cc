#include "policies/pool/job_story.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>

#include "policies/pool/gang_placement.h"

namespace gpulaunch::pool {
namespace {

std::string Hours(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  return buf;
}

}  // namespace

void JobStory::Tell(double now, const std::string& what) {
  lines_.push_back(Hours(now - origin_) + " (submit +" + Hours(now - job_.submit) + "): " + what);
}

void JobStory::BeforePass(const GpuPool& pool) {
  free_before_.clear();
  for (int h = 0; h < static_cast<int>(pool.hosts().size()); ++h) free_before_.push_back(pool.free_on(h));
}

// Where it went, with what each host and leaf had free before the pass, and
// for a one-host job the other hosts that could have taken it.
std::string JobStory::Placement(const Decision& d, const GpuPool& pool) const {
  std::string where;
  std::map<int, int> leaf_free;
  for (int h = 0; h < static_cast<int>(pool.hosts().size()); ++h)
    leaf_free[pool.hosts()[h].leaf] += free_before_[static_cast<size_t>(h)];
  std::map<int, bool> leaves_used;
  for (const HostShare& s : d.allocation.shares) {
    const PoolHost& host = pool.hosts()[static_cast<size_t>(s.host)];
    where += (where.empty() ? "" : ", ") + host.name + " (took " + std::to_string(std::popcount(s.gpus)) + " of " +
             std::to_string(free_before_[static_cast<size_t>(s.host)]) + " free)";
    leaves_used[host.leaf] = true;
  }
  for (const auto& [leaf, used] : leaves_used)
    where += "; leaf " + std::to_string(leaf) + " had " + std::to_string(leaf_free[leaf]) + " GPUs free";
  if (d.allocation.hosts() == 1) {
    const int gpus = std::popcount(d.allocation.shares[0].gpus);
    int others = 0, fewest = 1 << 30, most = 0;
    for (int h = 0; h < static_cast<int>(pool.hosts().size()); ++h) {
      const int free = free_before_[static_cast<size_t>(h)];
      if (h == d.allocation.shares[0].host || free < gpus || !pool.usable(h)) continue;
      ++others;
      fewest = std::min(fewest, free);
      most = std::max(most, free);
    }
    where += others ? "; " + std::to_string(others) + " other hosts could take it, with " + std::to_string(fewest) +
                          (most > fewest ? " to " + std::to_string(most) : "") + " GPUs free"
                    : "; no other host could take it";
  }
  return where;
}

void JobStory::Decided(const Decision& d, double now, const Scheduler& s, const DataCache* cache, double copy_s) {
  last_wait_.clear();  // whatever it waits for next is news
  if (d.kind == Decision::Kind::kPreempt) {
    return Tell(now, "preempted for job " + std::to_string(d.preempted_by) +
                         (d.checkpointed ? ": suspended with a checkpoint, its work kept" : ": its run is lost"));
  }
  if (d.kind == Decision::Kind::kExpire) return Tell(now, "left the queue: its queue timeout passed");
  const GpuPool& pool = s.pool();
  std::string data;
  if (cache && job_.dataset >= 0) {
    const auto& holders = cache->holders()[static_cast<size_t>(job_.dataset)];
    int cached = 0;
    for (const HostShare& share : d.allocation.shares)
      cached += std::count(holders.begin(), holders.end(), share.host) > 0 ? 1 : 0;
    data = "; dataset " + std::to_string(job_.dataset) + " cached on " + std::to_string(cached) + " of its hosts" +
           (copy_s > 0 ? ", copying takes " + Hours(copy_s) : "");
  }
  const std::string verb = d.kind == Decision::Kind::kMigrate ? "moved to " : "started on ";
  Tell(now, verb + Placement(d, pool) + ": " + std::to_string(LeavesOf(pool, d.allocation)) + " leaf switches, " +
                std::to_string(d.allocation.hosts()) + " hosts (fewest possible: " +
                std::to_string(MinLeaves(pool, job_.gpus)) + " and " + std::to_string(MinHosts(pool, job_.gpus)) +
                "), placement " + PlacementStyleName(s.config().style) + (d.backfilled ? ", backfilled" : "") +
                (d.borrowed ? ", on borrowed quota" : "") + data);
}

void JobStory::Waits(const Scheduler& s, double now) {
  const std::vector<WaitReason> waiting = s.Waiting(now);
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (waiting[i].job != job_.id) continue;
    const std::string state = waiting[i].constraint + " " + std::to_string(i);
    if (state == last_wait_) return;
    const bool same_constraint =
        !last_wait_.empty() && last_wait_.substr(0, last_wait_.find(' ')) == waiting[i].constraint;
    if (same_constraint && now - last_wait_at_ < 6 * 3600) return;
    last_wait_ = state;
    last_wait_at_ = now;
    const PoolJob* job = nullptr;
    for (const PoolJob& q : s.queue()) job = q.id == job_.id ? &q : job;
    char key[64];
    std::snprintf(key, sizeof key, "%.6g", job ? s.EffectivePriority(*job, now) : 0.0);
    const QuotaBook& q = s.quotas();
    const std::string quota = q.enabled() && job ? "; team " + q.quota(job->team).team + " holds " +
                                                       std::to_string(q.used(job->team)) + " GPUs of nominal " +
                                                       std::to_string(q.quota(job->team).nominal)
                                                 : "";
    Tell(now, "waits at position " + std::to_string(i + 1) + " of " + std::to_string(waiting.size()) +
                  " (queue order " + QueueOrderName(s.config().order) + ", key " + key +
                  (job ? ", estimate " + (job->estimate > 0 ? Hours(job->estimate) : std::string("none")) : "") +
                  quota + "); " + waiting[i].constraint + ": " + waiting[i].detail);
    return;
  }
}

void JobStory::Ended(double now, bool by_limit, double work_left_s) {
  Tell(now, by_limit ? "its time limit ended it (" + Hours(work_left_s) + " of work left)" : "finished");
}

}  // namespace gpulaunch::pool
