// Team GPU quotas with borrowing (the Kueue / YARN capacity-scheduler model):
//   guarantee     GPUs the team always gets within the grace period: borrowed
//                 jobs of other teams are reclaimed for it
//   nominal       its share of the pool; jobs within it are never preempted
//                 by reclaim
//   borrow_limit  how far above nominal it may go on idle GPUs
//   lend_limit    how much of its own idle nominal others may borrow
//                 (simulator only: Slurm lends every idle GPU, so
//                 slurm-config refuses a policy that sets it)
// One meaning of borrowing, Slurm's with the side slurm-config --policy
// writes (docs/slurm.md): a job is within nominal when the team's jobs that
// started within nominal leave room for it (its borrowed jobs do not count:
// on Slurm they run in gl-borrowed, outside the team's partition QOS). Above
// that it is borrowed: it may take whatever GPUs are idle up to nominal +
// borrow_limit, and a team that needs its nominal back reclaims it (after
// the grace period). Lend limits, which Slurm cannot enforce, additionally
// make borrowing wait for other teams' idle, lendable nominal (plus the
// pool's GPUs in no team's nominal) to cover it.
#pragma once

#include <climits>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch::pool {

struct TeamQuota {
  std::string team;
  int guarantee = 0;
  int nominal = 0;
  int borrow_limit = 0;
  int lend_limit = INT_MAX;
};

enum class QuotaVerdict { kWithinNominal, kBorrowed, kOverBorrowLimit, kNothingToBorrow };
const char* QuotaVerdictName(QuotaVerdict v);

class QuotaBook {
 public:
  QuotaBook() = default;  // no quotas: every job is within nominal
  explicit QuotaBook(std::vector<TeamQuota> teams);
  // "a:guarantee/nominal/borrow[/lend],b:..." e.g. "ml:32/64/32,infra:16/64/0".
  static StatusOr<QuotaBook> Parse(const std::string& text);

  bool enabled() const { return !teams_.empty(); }
  int teams() const { return static_cast<int>(teams_.size()); }
  const TeamQuota& quota(int team) const { return teams_[static_cast<size_t>(team)]; }
  int used(int team) const { return enabled() ? used_[static_cast<size_t>(team)] : 0; }
  // What the team's jobs that started within nominal (not borrowed) count
  // against it: their GPUs, or (Slurm's tier billing) their tier units.
  int own(int team) const { return enabled() ? own_[static_cast<size_t>(team)] : 0; }

  // The pool's GPUs: those in no team's nominal quota are lent too.
  void SetPoolGpus(int gpus) { pool_gpus_ = gpus; }

  // Whether `team` may start `gpus` more now, and on what terms. A job
  // counts against nominal as `tier_units` (-1: its GPUs): Slurm's tiers
  // bill a job the largest share of a node it takes, in GPUs
  // (slurm/tier_billing.h), so a CPU-heavy job counts more than its GPUs.
  // The borrow limit counts GPUs.
  QuotaVerdict Check(int team, int gpus, int tier_units = -1) const;
  // `borrowed`: the job started above nominal (Check said kBorrowed).
  void Add(int team, int gpus, bool borrowed, int tier_units = -1);
  void Remove(int team, int gpus, bool borrowed, int tier_units = -1);

 private:
  std::vector<TeamQuota> teams_;
  std::vector<int> used_, own_;
  int pool_gpus_ = 0;
};

}  // namespace gpulaunch::pool
