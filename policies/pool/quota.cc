#include "policies/pool/quota.h"

#include <algorithm>

#include "common/strings.h"

namespace gpulaunch::pool {

const char* QuotaVerdictName(QuotaVerdict v) {
  switch (v) {
    case QuotaVerdict::kWithinNominal: return "within nominal quota";
    case QuotaVerdict::kBorrowed: return "borrowing idle quota";
    case QuotaVerdict::kOverBorrowLimit: return "over its borrow limit";
    case QuotaVerdict::kNothingToBorrow: return "no idle quota to borrow";
  }
  return "?";
}

QuotaBook::QuotaBook(std::vector<TeamQuota> teams)
    : teams_(std::move(teams)), used_(teams_.size(), 0), own_(teams_.size(), 0) {}

StatusOr<QuotaBook> QuotaBook::Parse(const std::string& text) {
  std::vector<TeamQuota> teams;
  for (const std::string& entry : Split(text, ',')) {
    const size_t colon = entry.find(':');
    const auto numbers = colon == std::string::npos ? std::vector<std::string>() : Split(entry.substr(colon + 1), '/');
    TeamQuota q;
    q.team = entry.substr(0, colon);
    std::vector<int> v;
    for (const std::string& n : numbers) {
      const auto x = ParseInt(n);
      if (!x || *x < 0 || *x > 10000000) break;
      v.push_back(static_cast<int>(*x));
    }
    if (q.team.empty() || v.size() != numbers.size() || (v.size() != 3 && v.size() != 4)) {
      return InvalidArgument("quota '" + entry + "': give TEAM:GUARANTEE/NOMINAL/BORROW[/LEND], e.g. ml:32/64/32");
    }
    q.guarantee = v[0], q.nominal = v[1], q.borrow_limit = v[2];
    if (v.size() == 4) q.lend_limit = v[3];
    if (q.guarantee > q.nominal) {
      return InvalidArgument("quota '" + entry + "': the guarantee (" + std::to_string(q.guarantee) +
                             ") cannot exceed the nominal quota (" + std::to_string(q.nominal) + ")");
    }
    teams.push_back(q);
  }
  return QuotaBook(std::move(teams));
}

QuotaVerdict QuotaBook::Check(int team, int gpus, int tier_units) const {
  if (!enabled()) return QuotaVerdict::kWithinNominal;
  const size_t me = static_cast<size_t>(team);
  const TeamQuota& q = teams_[me];
  if (used_[me] + gpus > q.nominal + q.borrow_limit) return QuotaVerdict::kOverBorrowLimit;
  if (own_[me] + (tier_units < 0 ? gpus : tier_units) <= q.nominal) return QuotaVerdict::kWithinNominal;
  // Borrowing. Without lend limits only the idle GPUs themselves bound it
  // (placement decides), as in Slurm. With them, the job must be covered by
  // idle nominal (the team's own, and what other teams lend of theirs) and
  // the GPUs in no team's quota, less what all borrowing already takes.
  bool lend_limits = false;
  for (const TeamQuota& t : teams_) lend_limits = lend_limits || t.lend_limit != INT_MAX;
  if (!lend_limits) return QuotaVerdict::kBorrowed;
  int nominal_total = 0;
  for (const TeamQuota& t : teams_) nominal_total += t.nominal;
  int idle = std::max(0, pool_gpus_ - nominal_total), borrowed = 0;
  for (size_t t = 0; t < teams_.size(); ++t) {
    const int idle_nominal = std::max(0, teams_[t].nominal - own_[t]);
    idle += t == me ? idle_nominal : std::min(teams_[t].lend_limit, idle_nominal);
    borrowed += used_[t] - own_[t];
  }
  return gpus <= idle - borrowed ? QuotaVerdict::kBorrowed : QuotaVerdict::kNothingToBorrow;
}

void QuotaBook::Add(int team, int gpus, bool borrowed, int tier_units) {
  if (!enabled()) return;
  used_[static_cast<size_t>(team)] += gpus;
  if (!borrowed) own_[static_cast<size_t>(team)] += tier_units < 0 ? gpus : tier_units;
}

void QuotaBook::Remove(int team, int gpus, bool borrowed, int tier_units) {
  if (!enabled()) return;
  used_[static_cast<size_t>(team)] -= gpus;
  if (!borrowed) own_[static_cast<size_t>(team)] -= tier_units < 0 ? gpus : tier_units;
}

}  // namespace gpulaunch::pool
