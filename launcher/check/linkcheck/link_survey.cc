#include "launcher/check/linkcheck/link_survey.h"

#include <algorithm>
#include <cstdio>

#include "common/strings.h"

namespace gpulaunch {
namespace {

std::string Rate(double gbyte_per_s) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g Gb/s", gbyte_per_s * 8);
  return buf;
}

// The message size the rounds measured (their one size).
uint64_t RoundSize(const LinkResult& r) { return r.bandwidth.empty() ? 0 : r.bandwidth.back().message_bytes; }

}  // namespace

double AloneGbytePerS(const LinkSurvey& s, const std::string& from, const std::string& to, uint64_t size) {
  double best = 0;
  for (const LinkResult& p : s.pairs) {
    if ((p.from == from && p.to == to) || (p.from == to && p.to == from)) {
      const double r = LinkGbytePerS(p, size);
      best = best == 0 ? r : std::min(best, r);
    }
  }
  return best;
}

double LinkGbytePerS(const LinkResult& link, uint64_t message_bytes) {
  if (!link.error.empty()) return 0;
  double best = 0;
  for (const BandwidthSample& b : link.bandwidth) {
    const double r = b.gbps() / 8;
    if (message_bytes != 0 && b.message_bytes == message_bytes) return r;
    best = std::max(best, r);
  }
  return best;
}

bool BeganWithItsRound(const LinkResult& r) {
  const double seconds = r.bandwidth.empty() ? 0 : r.bandwidth.back().seconds;
  return r.error.empty() && r.started_late_ms >= 0 && r.ended_ms > r.started_late_ms &&
         r.started_late_ms / 1000 <= seconds / 20;
}

std::vector<std::vector<ConcurrentFlow>> ConcurrentFlows(const LinkSurvey& s) {
  const int n = static_cast<int>(s.hosts.size());
  std::vector<std::vector<ConcurrentFlow>> rounds;
  for (const SurveyRound& round : s.rounds) {
    std::vector<ConcurrentFlow> flows;
    const auto pairs = ShiftRound(n, round.shift);
    for (size_t i = 0; i < pairs.size() && i < round.results.size(); ++i) {
      const LinkResult& r = round.results[i];
      ConcurrentFlow f;
      f.from = pairs[i].first;
      f.to = pairs[i].second;
      const uint64_t size = RoundSize(r);
      f.together_gbyte_per_s = LinkGbytePerS(r, size);
      f.alone_gbyte_per_s = AloneGbytePerS(s, s.hosts[f.from], s.hosts[f.to], size);
      f.concurrent = BeganWithItsRound(r);
      f.began_s = r.started_late_ms / 1000;
      f.ended_s = r.ended_ms / 1000;
      for (const BandwidthSample& b : r.bandwidth) f.bytes += static_cast<double>(b.warmup_bytes + b.total_bytes);
      flows.push_back(f);
    }
    rounds.push_back(std::move(flows));
  }
  return rounds;
}

bool LeavesFit(const InferredLeaves& l) {
  return l.flows_used > 0 && l.disagreeing <= kMaxLeafMisfit * l.flows_used;
}

LinkTable SurveyTable(const LinkSurvey& s, const InferredLeaves* leaves, const std::string& measured_at) {
  LinkTable t;
  t.measured_at = measured_at;
  for (const LinkResult& p : s.pairs) {
    const double rate = LinkGbytePerS(p);
    if (rate > 0 && p.from != p.to) t.AddPair(p.from, p.to, {rate, p.rtt_median_us / 2});
  }
  for (const LinkResult& m : s.shared_memory) {
    const double rate = LinkGbytePerS(m);
    if (rate > 0) t.shared_memory[m.from] = {rate, m.rtt_median_us / 2};
  }
  if (leaves && leaves->leaves > 0 && LeavesFit(*leaves)) {
    for (int l = 0; l < leaves->leaves; ++l) {
      MeasuredLeaf leaf{"leaf" + std::to_string(l + 1), {}, leaves->uplink_gbyte_per_s[l]};
      for (size_t h = 0; h < s.hosts.size(); ++h)
        if (leaves->leaf_of[h] == l) leaf.hosts.push_back(s.hosts[h]);
      t.leaves.push_back(std::move(leaf));
    }
  }
  return t;
}

std::vector<std::string> DescribeSurvey(const LinkSurvey& s, const InferredLeaves* leaves) {
  std::vector<std::string> out;
  for (const LinkResult& m : s.shared_memory) {
    out.push_back("shared memory on " + m.from + ": " +
                  (m.error.empty() ? Rate(LinkGbytePerS(m)) + " (" + Join(m.transports, ",") + ")" : "FAILED: " + m.error));
  }
  const auto flows = ConcurrentFlows(s);
  for (size_t k = 0; k < s.rounds.size(); ++k) {
    std::vector<std::string> cells;
    for (size_t i = 0; i < flows[k].size(); ++i) {
      const ConcurrentFlow& f = flows[k][i];
      const LinkResult& r = s.rounds[k].results[i];
      char late[64] = "";
      if (!f.concurrent && r.error.empty()) std::snprintf(late, sizeof late, " (began %.0f ms late: not used)", r.started_late_ms);
      cells.push_back(s.hosts[f.from] + "->" + s.hosts[f.to] + " " +
                      (r.error.empty() ? Rate(f.together_gbyte_per_s) + " of " + Rate(f.alone_gbyte_per_s) + late
                                       : "FAILED: " + r.error));
    }
    out.push_back("at once, round " + std::to_string(s.rounds[k].shift) + ": " + Join(cells, ", "));
  }
  if (leaves && leaves->flows_used > 0) {
    std::vector<std::string> cells;
    for (int l = 0; l < leaves->leaves; ++l) {
      std::vector<std::string> names;
      for (size_t h = 0; h < s.hosts.size(); ++h)
        if (leaves->leaf_of[h] == l) names.push_back(s.hosts[h]);
      cells.push_back("leaf" + std::to_string(l + 1) + ": " + Join(names, ",") +
                      (leaves->leaves > 1 ? " (uplink " + Rate(leaves->uplink_gbyte_per_s[l]) + ")" : ""));
    }
    out.push_back("leaves: " + Join(cells, " | ") + " (from " + std::to_string(leaves->flows_used) +
                  " flows at once" + (leaves->leaves == 1 ? "; no uplink slowed the flows that shared it)" : ")"));
    if (leaves->disagreeing > 0) {
      out.push_back("warning: " + std::to_string(leaves->disagreeing) + " of the " +
                    std::to_string(leaves->flows_used) + " flows do not fit these leaves" +
                    (leaves->exhaustive ? "" : " (a local search: more than " + std::to_string(kExhaustiveHosts) + " hosts)") +
                    (LeavesFit(*leaves) ? "" : "; not saved (more than a tenth: flows that a busy CPU rather than an uplink "
                                               "slowed look so)") +
                    "; measure again, or give the tree with --network");
    }
  } else if (leaves) {
    out.push_back("leaves: not inferred: a round's flows did not all run at once (each round was tried with --sync "
                  "doubled twice; give a larger --sync)");
  }
  return out;
}

}  // namespace gpulaunch
