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

QuotaVerdict QuotaBook::Check(int team, int gpus) const {
  if (!enabled()) return QuotaVerdict::kWithinNominal;
  const size_t me = static_cast<size_t>(team);
  const TeamQuota& q = teams_[me];
  const int after = used_[me] + gpus;
  if (slurm_tiers_ ? after <= q.nominal + q.borrow_limit && own_[me] + gpus <= q.nominal : after <= q.nominal) {
    return QuotaVerdict::kWithinNominal;
  }
  if (after > q.nominal + q.borrow_limit) return QuotaVerdict::kOverBorrowLimit;
  // The new borrowing must be covered by other teams' idle, lendable quota
  // and the GPUs in no team's quota, less what others' borrowing uses. In
  // tiers, what is borrowed is what runs outside nominal (used - own), and
  // without lend limits only the GPUs themselves bound it.
  bool lend_limits = false;
  for (const TeamQuota& t : teams_) lend_limits = lend_limits || t.lend_limit != INT_MAX;
  if (slurm_tiers_ && !lend_limits) return QuotaVerdict::kBorrowed;
  auto nominal_use = [&](size_t t) { return slurm_tiers_ ? own_[t] : std::min(used_[t], teams_[t].nominal); };
  const int more = slurm_tiers_ ? gpus : after - std::max(q.nominal, used_[me]);
  int nominal_total = 0;
  for (const TeamQuota& t : teams_) nominal_total += t.nominal;
  int idle_elsewhere = std::max(0, pool_gpus_ - nominal_total), borrowed_elsewhere = 0;
  for (size_t t = 0; t < teams_.size(); ++t) {
    if (t == me) continue;
    idle_elsewhere += std::min(teams_[t].lend_limit, std::max(0, teams_[t].nominal - nominal_use(t)));
    borrowed_elsewhere += std::max(0, used_[t] - nominal_use(t));
  }
  if (slurm_tiers_) borrowed_elsewhere += used_[me] - own_[me];  // its own borrowing takes idle quota too
  return more <= idle_elsewhere - borrowed_elsewhere ? QuotaVerdict::kBorrowed : QuotaVerdict::kNothingToBorrow;
}

void QuotaBook::Add(int team, int gpus, bool borrowed) {
  if (!enabled()) return;
  used_[static_cast<size_t>(team)] += gpus;
  if (!borrowed) own_[static_cast<size_t>(team)] += gpus;
}

void QuotaBook::Remove(int team, int gpus, bool borrowed) {
  if (!enabled()) return;
  used_[static_cast<size_t>(team)] -= gpus;
  if (!borrowed) own_[static_cast<size_t>(team)] -= gpus;
}

}  // namespace gpulaunch::pool
