// The pool scheduler: admission and placement as one decision. A queued job
// starts only with a concrete allocation, and its quota terms are committed
// together with it (Schedule applies every decision to its own pool and
// quota book before returning them).
//
// Each Schedule(now):
//   1. orders the queue (QueueOrder): FIFO; by priority with aging (a job
//      gains one level per `aging_s` waited, so streams of higher-priority
//      or smaller jobs cannot starve it); shortest estimated GPU time first;
//      least attained service (Tiresias's discretised 2D-LAS); or Slurm's
//      multifactor priority; ties by submit time, then id;
//   2. starts jobs in that order while they fit (quota and placement);
//   3. when the first job that does not fit is within its team's nominal
//      quota (or of a higher priority class), looks for the cheapest set of
//      victims (borrowed jobs of other teams, or lower-class jobs, that ran
//      at least the grace period) whose removal lets it fit, preempts them
//      and starts it on the GPUs they freed, in the same decision; victims
//      are never of the preemptor's class or above, so preemption cannot
//      loop; jobs within their team's nominal quota are never reclaimed, and
//      victims whose team keeps its guarantee without them go first (a
//      borrowed gang that also holds part of its team's guarantee is taken
//      only when nothing else frees room: it cannot give back half);
//   4. backfills (EASY): later jobs may start if they fit now and do not
//      delay that first job's earliest start (its shadow time, from the
//      running jobs' expected ends), or use only GPUs it will not need; a job
//      within its team's guarantee starts whenever it fits;
//   5. reclaims for every other waiting job within its team's nominal quota
//      that does not fit (as in 3).
// With `preempt_by_service`, a job that does not fit in step 2 may also
// suspend running jobs that the queue order now ranks at least a level below
// it (2D-LAS: a later service level, more GPU time attained; by size: at
// least twice its expected remaining GPU time) and that ran at least the
// grace period: they are checkpointed at that moment (Decision::checkpointed),
// keep their work and their attained service, and go back to the queue.
// With `defragment`, a job that is blocked by the shape of the free GPUs
// rather than their number (enough are free, scattered over partly used
// hosts) is first given room by migrating single-host jobs: each moved job
// is checkpointed and restarted on free GPUs of other partly used hosts,
// which costs it `migration_cost_s`, and no job is moved twice within the
// grace period (so migration cannot loop).
// Every job left waiting has a structured reason (Waiting()). Jobs whose
// queue timeout passed leave the queue first (kExpire).
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policies/pool/gang_placement.h"
#include "policies/pool/gpu_pool.h"
#include "policies/pool/node_health.h"
#include "policies/pool/quota.h"
#include "policies/pool/reclaim_timing.h"

namespace gpulaunch::pool {

struct PoolJob {
  PoolJob() = default;
  PoolJob(int id_, int team_, int gpus_, int priority_, double submit_, double estimate_)
      : id(id_), team(team_), gpus(gpus_), priority(priority_), submit(submit_), estimate(estimate_) {}
  int id = 0;
  int team = 0;             // index into the quota book (0 without quotas)
  int gpus = 1;
  int tier_units = -1;      // what it counts against its team's nominal (QuotaBook::Check); -1: its GPUs
  int priority = 0;         // class: higher first; higher classes may preempt lower ones
  double submit = 0;
  double estimate = 0;      // expected run time (s) for backfill; 0: unknown (never backfilled ahead of others)
  double limit = 0;         // the time limit the user asked for (s); 0: none given
  // The user: a user's jobs of different priority classes never share a
  // host (-1: no such rule for this job).
  int user = -1;
  int min_leaves = 0;              // fault-domain spread (gang_placement.h)
  bool one_leaf = false;           // every host under one leaf switch
  double min_gpu_memory_gib = 0;   // hosts whose GPUs have at least this memory
  double min_link_gbps = 0;        // hosts with at least this network link
  std::vector<int> data_hosts;     // hosts holding its data: preferred, never required
  int dataset = -1;                // its input dataset (SetDataCaches); -1: none
  // A queue timeout: a job not started this long after its submission leaves
  // the queue (Decision kExpire); 0: it waits as long as it takes. A job that
  // ran and was preempted no longer times out.
  double max_wait_s = 0;
  // GPU-seconds of service it received in earlier runs (before preemptions):
  // what 2D-LAS orders by. Known to any real scheduler; no duration needed.
  double attained_gpu_s = 0;
  // Not started before this time (s): a requeued job's hold
  // (SchedulerConfig::requeue_hold_s). Until then it waits aside and blocks
  // no one, as a Slurm job pending on BeginTime.
  double begin = 0;
};

enum class QueueOrder {
  kFifo,
  kPriorityAging,     // class, then smaller (GPUs x estimate) first, with aging
  kShortestFirst,     // smallest estimated GPU time first (SJF; the oracle with perfect estimates)
  kLeastAttained,     // Tiresias's discretised 2D-LAS: attained GPU time level, then submit time
  kSlurmMultifactor,  // Slurm's priority/multifactor: age and job size factors (SchedulerConfig::slurm)
};
const char* QueueOrderName(QueueOrder o);

// Slurm's priority/multifactor terms that apply to a pool without accounts
// or QOS: priority = age_weight x min(1, waited / max_age_s) + size_weight x
// GPUs / pool GPUs (PriorityFavorSmall=NO: bigger jobs rank higher). slurm.conf
// defaults every weight to 0 (which is FIFO); these are the weights of the
// configuration example in Slurm's multifactor priority documentation, and
// PriorityMaxAge's default of 7 days.
struct SlurmPriorityWeights {
  double age_weight = 1000;
  double size_weight = 1000;
  double max_age_s = 7 * 86400;
};

// Whole hosts held for one team's jobs during [start, end). Before the
// window, other jobs may use those hosts only if their estimate ends before
// it starts (backfill respects the reservation); during it only the team's
// jobs may start there. Jobs already there when it starts keep running.
struct PoolReservation {
  std::string name;
  int team = 0;
  std::vector<int> hosts;
  double start = 0, end = 0;
};

struct SchedulerConfig {
  PlacementStyle style = PlacementStyle::kTopology;
  QueueOrder order = QueueOrder::kPriorityAging;
  bool backfill = true;
  // Backfill only in a pass at least this many seconds after the last
  // backfilling pass (Slurm's bf_interval: its backfill sleeps that long after
  // each cycle and then runs at the next change, while its main pass stops at
  // the first job that does not fit); 0: in every pass.
  double backfill_interval_s = 0;
  // When backfill last ran before the first submission (s, on the trace's
  // clock; a real cluster's timer: sdiag's last backfill cycle). Default:
  // long ago, so the first pass backfills.
  double backfill_last_pass_s = -std::numeric_limits<double>::infinity();
  // Greedy order: a job that does not fit is passed over and later ones
  // start whenever they fit, with no reservation for it (Tiresias's
  // simulator); off: the first blocked job blocks, bar backfill.
  bool skip_blocked = false;
  // With quotas, queue as Slurm runs the pool's partitions (docs/slurm.md):
  // first every job that fits its team's nominal (its tier-1 partition
  // gl-T, where it may reclaim), then every job above nominal (the shared
  // gl-borrowed); a job blocked for GPUs blocks, bar backfill, only later
  // jobs of its own partition (its team's, or the borrowed tier), a job
  // held by its team's limits (partition QOS, account) blocks no one, and
  // reclaim may take its own team's borrowed jobs too. Off: one queue in the
  // policy's order, whose first blocked job blocks everyone, and reclaim
  // takes only other teams' borrowed jobs. (Quotas count as Slurm's tiers
  // either way: QuotaBook.)
  bool slurm_tiers = false;
  bool preempt = true;
  double aging_s = 3600;        // one priority level per this much waiting
  // Smaller jobs first: a job gains log2(size_reference / its size) levels
  // (at least 0), its size being GPUs x estimated seconds (GPUs alone when
  // there is no estimate), so a short 1-GPU job starts ahead of a week-long
  // 64-GPU one that arrived at the same time, until aging lifts the big one
  // (0: off).
  double size_reference = 0;
  // A job whose size is unknown (no estimate, or a limit of at least
  // `uninformative_limit_s`: the site's maximum, which users ask for when
  // they do not know) is sized as if it ran twice as long as it has run so
  // far, at least `unknown_run_s`: under heavy-tailed run times the longer
  // a job has run, the longer it is likely to go on (the reasoning of LAS).
  double uninformative_limit_s = 0;  // 0: every limit informs
  double unknown_run_s = 3600;
  double grace_s = 300;         // a job may be preempted only after running this long
  bool defragment = false;      // migrate single-host jobs to make room (see above)
  // kLeastAttained: the service levels' upper bounds in GPU-seconds (level 0
  // below the first, the last level unbounded). Tiresias's simulator example
  // is one threshold of 3,600; two give the medium trace's mix (a minute to
  // weeks on 1 to 64 GPUs) a middle level for the hours-long jobs.
  std::vector<double> service_levels_gpu_s = {3600, 36000};
  bool preempt_by_service = false;  // suspend running jobs ranked a level lower (see above)
  // kTopology placement: put a job where its expected end meets the host's
  // other jobs' ends (needs estimates); off for plain tree placement.
  bool align_ends = true;
  SlurmPriorityWeights slurm;
  double migration_cost_s = 120;  // a migrated job's checkpoint, move and restart
  // A job requeued by preemption (not a checkpointed suspension) may start
  // again only this long after: Slurm holds it for the job credential's
  // lifetime (AuthInfo cred_expire, default 120 s). 0: at once.
  double requeue_hold_s = 0;
  // When a preempted job is killed and its GPUs come free (the simulator
  // starts the preemptor then; a requeued victim's hold runs from the kill).
  ReclaimTiming reclaim;
  QuotaBook quotas;             // empty: no quotas
};

struct Decision {
  enum class Kind { kStart, kPreempt, kMigrate, kExpire };
  Kind kind = Kind::kStart;
  int job = 0;
  Allocation allocation;        // kStart and kMigrate: where; kPreempt: what it gave back
  Allocation previous;          // kMigrate: where it ran before
  bool borrowed = false;        // kStart: above its team's nominal quota (reclaimable)
  bool backfilled = false;
  int preempted_by = -1;        // kPreempt and kMigrate: the job that needed the GPUs
  bool checkpointed = false;    // kPreempt: suspended with a checkpoint; it keeps its work
};

// Why a job waits: the constraint, what is short, and what blocks it.
struct WaitReason {
  int job = 0;
  std::string constraint;       // "quota", "placement", "queue", "hold"
  std::string detail;           // e.g. "needs 16 GPUs on 2 whole hosts; 9 free, largest free host has 4"
};

struct RunningJob {
  PoolJob job;
  Allocation allocation;
  double start = 0;
  bool borrowed = false;
  double delay = 0;             // added to its expected end by migrations
  double moved_at = -1e300;     // its last migration
  double reclaim_until = -1e300;  // it preempted: when its victims' GPUs are free (ReclaimTiming)
  // When it is expected to end (infinity without an estimate).
  double ExpectedEnd() const;
};

class Scheduler {
 public:
  Scheduler(GpuPool pool, SchedulerConfig config);

  void Submit(const PoolJob& job);
  // A job's expected run time changed (it resumes from a checkpoint after a
  // preemption): queued, or already started again in the same pass.
  Status SetEstimate(int job, double estimate);
  // The job ended: its GPUs and quota go back.
  Status Finish(int job);
  // A queued job leaves the queue (a preempted job that ended on its own
  // before it was killed is not requeued).
  Status Withdraw(int job);
  // The GPUs a victim of `victim`'s preemption still holds, beyond those its
  // preemptor took, come free now (it ended on its own before its kill).
  // Until then, or until the kill (ReclaimTiming::KilledAt), no one gets
  // them: the victim still runs there.
  void ReleaseHeld(int victim);
  // Decisions taken now, already applied to the pool.
  StatusOr<std::vector<Decision>> Schedule(double now);
  // The next backfill pass after `now` while jobs wait and backfill runs on
  // a timer; infinity otherwise.
  double NextBackfillPass(double now) const;
  std::vector<WaitReason> Waiting(double now) const;
  // When the next running job's attained service reaches a level's bound
  // (kLeastAttained: the queue order may change then); infinity otherwise.
  double NextServiceLevelChange(double now) const;
  // The service level of `gpu_s` attained GPU-seconds (0 first).
  int ServiceLevel(double gpu_s) const;
  // Where each dataset is cached now (by dataset: host indices), owned by
  // the caller and read at each placement: a job's dataset's hosts are
  // preferred like its data_hosts. Null: no caches known.
  void SetDataCaches(const std::vector<std::vector<int>>* hosts_by_dataset) { data_caches_ = hosts_by_dataset; }
  // The queue order's key for `job` now: higher goes first (ties: submit
  // time, then id).
  double EffectivePriority(const PoolJob& job, double now) const;

  // Holds `hosts` whole hosts (under one leaf when one has them) for `team`
  // during [start, end); the hosts it holds are in the reservation returned.
  StatusOr<PoolReservation> Reserve(const std::string& name, int team, int hosts, double start, double end);

  // Applies node health at `now`: only healthy hosts get new work; every job
  // with GPUs on a bad host ends (returned, to be failed or requeued by the
  // caller); its GPUs on other hosts are free at once, those on the bad host
  // only when that host's lease expires.
  StatusOr<std::vector<int>> ApplyHealth(const NodeHealth& health, double now);

  const GpuPool& pool() const { return pool_; }
  GpuPool& mutable_pool() { return pool_; }
  const QuotaBook& quotas() const { return config_.quotas; }
  const SchedulerConfig& config() const { return config_; }
  const std::map<int, RunningJob>& running() const { return running_; }
  const std::vector<PoolJob>& queue() const { return queue_; }
  const std::vector<PoolReservation>& reservations() const { return reservations_; }

 private:
  std::vector<PoolJob> Ordered(double now) const;
  // Starts `job` now if quota and placement allow; nullopt otherwise.
  std::optional<Decision> TryStart(const PoolJob& job, double now);
  using RunningJobs = std::vector<const RunningJob*>;
  // Preempts the cheapest victims that let `job` fit, and starts it.
  StatusOr<std::vector<Decision>> TryPreempt(const PoolJob& job, double now);
  // A job of `team` preempted and waits for its victims' GPUs, and the
  // reclaim timing lets no other job of the team pick victims meanwhile
  // in this pass (ReclaimTiming::one_at_a_time).
  bool ReclaimHeldBack(int team, double now) const;
  // Suspends running jobs a level or more below `job` in the queue order
  // (2D-LAS: a later service level) so that it fits.
  StatusOr<std::vector<Decision>> TryPreemptByService(const PoolJob& job, double now);
  // A running job's queue-order key as if it were queued now: its service
  // so far, and what its estimate has left.
  double RunningPriority(const RunningJob& r, double now) const;
  // Takes `victims` off their GPUs back to the queue, then starts `job`.
  StatusOr<std::vector<Decision>> PreemptFor(const PoolJob& job, const RunningJobs& victims, bool checkpointed,
                                             double now);
  // TryPreempt's steps: the running jobs `job` may preempt, cheapest first
  // (`reclaims`: it is within its team's nominal quota, so borrowed jobs of
  // other teams are fair game); and the fewest of them that let it fit
  // (nullopt when even all of them would not).
  RunningJobs PreemptionCandidates(const PoolJob& job, bool reclaims, double now) const;
  StatusOr<std::optional<RunningJobs>> FewestVictims(const PoolJob& job, const RunningJobs& candidates,
                                                     double now) const;
  // Migrates single-host jobs so that `job`, blocked by the shape of the
  // free GPUs, fits; then starts it. Empty when no such moves exist.
  StatusOr<std::vector<Decision>> TryDefragment(const PoolJob& job, double now);
  // TryDefragment's steps. Moves `jobs` (smallest first, each into another
  // partly used host) in `trial` until `to_move` GPUs are free on host `h`;
  // false when they cannot all be placed, with `trial` and `moved` unchanged.
  StatusOr<bool> TryClearHost(int h, int to_move, std::vector<const RunningJob*> jobs,
                              const std::vector<bool>& cleared, double now, GpuPool& trial,
                              std::map<int, Allocation>& moved) const;
  // Makes the moves worked out in a trial pool, then starts `job`.
  StatusOr<std::vector<Decision>> CommitMigrations(const PoolJob& job, const std::map<int, Allocation>& moved,
                                                   double now);
  double ShadowTime(const PoolJob& head, double now, int* extra) const;
  // Schedule()'s steps: drop the jobs waiting past their max wait; start a
  // job in queue order (placed, after migrations, or after preemptions;
  // empty when it must wait); backfill behind the first blocked job; and
  // preempt for every job still owed its team's nominal quota.
  std::vector<Decision> ExpireOverdue(double now);
  StatusOr<std::vector<Decision>> StartInOrder(const PoolJob& job, double now);
  struct BackfillWindow {
    double shadow = 0;  // when the first blocked job is expected to start
    int extra = 0;      // GPUs a job may take even when it ends after `shadow`
  };
  std::optional<Decision> TryBackfill(const PoolJob& job, double now, BackfillWindow& window);
  Status ReclaimNominalQuotas(double now, std::vector<Decision>& out);
  // SchedulerConfig::slurm_tiers' pass: both tiers in turn (scheduler_tiers.cc).
  Status ScheduleTiers(double now, bool may_backfill, std::vector<Decision>& out);
  // When each host's running jobs are expected to end (-infinity: none),
  // cached until running jobs change (busy_until_ cleared).
  const std::vector<double>& BusyUntil() const;
  // The running jobs by their queue-order key at `now`, lowest first
  // (RunningPriority), cached until running jobs change or time moves.
  const std::vector<std::pair<double, const RunningJob*>>& RankedRunning(double now) const;
  // The lowest priority class among running jobs (INT_MAX: none), cached.
  int LowestRunningClass() const;
  // Running jobs changed: drops the caches above.
  void RunningChanged() {
    busy_until_.clear();
    ranked_running_valid_ = false;
    lowest_running_class_.reset();
  }
  // The job's hard and soft placement constraints in the pool as it is now.
  GangConstraints ConstraintsFor(const PoolJob& job, double now) const;
  Status Commit(const PoolJob& job, const Allocation& a, bool borrowed, double now);

  GpuPool pool_;
  SchedulerConfig config_;
  std::vector<PoolJob> queue_;
  std::map<int, RunningJob> running_;
  struct Lease {
    HostShare share;
    double expiry;
  };
  std::vector<Lease> leases_;  // GPUs of lost jobs still held on bad hosts
  std::vector<PoolReservation> reservations_;
  double last_backfill_ = 0;  // the last backfilling pass (SchedulerConfig::backfill_interval_s)
  bool backfill_pass_ = false;  // this pass backfills (Schedule)
  // Preempted jobs' GPUs that their preemptor did not take, held until the
  // kill (ReleaseHeld).
  struct HeldUntilKill {
    int victim;
    Allocation gpus;
    double until;
  };
  std::vector<HeldUntilKill> held_;
  // After a preemption decided `now` that started a job on `started`: the
  // victims' other GPUs (in `preempted`) are held until their kill.
  Status HoldUntilKill(const std::vector<Decision>& preempted, const Allocation& started, double now);
  Status ReleaseHeldUntil(double now);
  mutable std::vector<double> busy_until_;  // BusyUntil()'s cache; empty: stale
  mutable std::vector<std::pair<double, const RunningJob*>> ranked_running_;  // RankedRunning()'s cache
  mutable double ranked_running_at_ = 0;
  mutable bool ranked_running_valid_ = false;
  mutable std::optional<int> lowest_running_class_;
  const std::vector<std::vector<int>>* data_caches_ = nullptr;
};

}  // namespace gpulaunch::pool
