#include "launcher/check/linkcheck/leaf_inference.h"

#include <algorithm>
#include <map>
#include <set>

namespace gpulaunch {
namespace {

// The flows of one round that a partition puts on one uplink direction
// (groups of two or more share it), keyed by (leaf, up = 0 | down = 1).
std::map<std::pair<int, int>, std::vector<const ConcurrentFlow*>> UplinkGroups(const std::vector<int>& leaf_of,
                                                                               const std::vector<ConcurrentFlow>& round) {
  std::map<std::pair<int, int>, std::vector<const ConcurrentFlow*>> groups;
  for (const ConcurrentFlow& f : round) {
    if (!f.concurrent || f.alone_gbyte_per_s <= 0 || leaf_of[f.from] == leaf_of[f.to]) continue;
    groups[{leaf_of[f.from], 0}].push_back(&f);
    groups[{leaf_of[f.to], 1}].push_back(&f);
  }
  return groups;
}

// GB/s: what the flows moved from the first one's start to the last one's
// end (the header says why not the slowest rate times their count).
double CarriedTogether(const std::vector<const ConcurrentFlow*>& flows) {
  double began = 1e300, ended = 0, bytes = 0;
  for (const ConcurrentFlow* f : flows) {
    began = std::min(began, f->began_s);
    ended = std::max(ended, f->ended_s);
    bytes += f->bytes;
  }
  return ended > began ? bytes / (ended - began) / 1e9 : 0;
}

double Share(const ConcurrentFlow& f) { return f.together_gbyte_per_s / f.alone_gbyte_per_s; }

// How many flows a partition mispredicts: a flow on an uplink direction
// that other flows of its round share should have been slowed, every other
// flow not.
int Disagreements(const std::vector<int>& leaf_of, const std::vector<std::vector<ConcurrentFlow>>& rounds,
                  double slowed_below) {
  int wrong = 0;
  for (const auto& round : rounds) {
    std::set<const ConcurrentFlow*> shared;
    for (const auto& [where, flows] : UplinkGroups(leaf_of, round))
      if (flows.size() > 1) shared.insert(flows.begin(), flows.end());
    for (const ConcurrentFlow& f : round) {
      if (f.concurrent && f.alone_gbyte_per_s > 0) wrong += shared.count(&f) != (Share(f) < slowed_below);
    }
  }
  return wrong;
}

int LeafCount(const std::vector<int>& leaf_of) {
  return leaf_of.empty() ? 0 : *std::max_element(leaf_of.begin(), leaf_of.end()) + 1;
}

// Leaf numbers in order of each leaf's first host, so equal partitions
// compare equal.
std::vector<int> Canonical(const std::vector<int>& leaf_of) {
  std::map<int, int> renumber;
  std::vector<int> out;
  for (int l : leaf_of) out.push_back(renumber.emplace(l, static_cast<int>(renumber.size())).first->second);
  return out;
}

// Better: fewer disagreements, then fewer leaves.
bool Better(int wrong, int leaves, int best_wrong, int best_leaves) {
  return wrong < best_wrong || (wrong == best_wrong && leaves < best_leaves);
}

// Every partition as a restricted growth string (a[0] = 0, a[i] <= max(a[<i]) + 1).
std::vector<int> SearchAll(int n, const std::vector<std::vector<ConcurrentFlow>>& rounds, double slowed_below) {
  std::vector<int> a(n, 0), best = a;
  int best_wrong = Disagreements(a, rounds, slowed_below), best_leaves = 1;
  while (true) {
    int i = n - 1;
    while (i > 0) {
      const int max_before = *std::max_element(a.begin(), a.begin() + i);
      if (a[i] <= max_before) break;
      a[i] = 0;
      --i;
    }
    if (i <= 0) break;
    ++a[i];
    const int wrong = Disagreements(a, rounds, slowed_below), leaves = LeafCount(a);
    if (Better(wrong, leaves, best_wrong, best_leaves)) best = a, best_wrong = wrong, best_leaves = leaves;
  }
  return best;
}

// One improving step from `leaf_of`: the merge of two leaves, of every
// one-host leaf, or the move of one host to another (or a new) leaf, that leaves the fewest disagreements
// (ties: fewer leaves); false when none is better than `leaf_of`.
bool ImproveOnce(std::vector<int>& leaf_of, int& wrong, const std::vector<std::vector<ConcurrentFlow>>& rounds,
                 double slowed_below) {
  const int n = static_cast<int>(leaf_of.size()), leaves = LeafCount(leaf_of);
  std::vector<int> best;
  int best_wrong = wrong, best_leaves = leaves;
  auto consider = [&](std::vector<int> candidate) {
    candidate = Canonical(candidate);
    const int w = Disagreements(candidate, rounds, slowed_below), l = LeafCount(candidate);
    if (Better(w, l, best_wrong, best_leaves)) best = std::move(candidate), best_wrong = w, best_leaves = l;
  };
  for (int a = 0; a < leaves; ++a) {
    for (int b = a + 1; b < leaves; ++b) {
      std::vector<int> merged = leaf_of;
      for (int& l : merged) l = l == b ? a : l;
      consider(std::move(merged));
    }
  }
  // Hosts alone on their leaves, together: a leaf whose every flow leaves it
  // explains as well as many singletons do, and only as a whole.
  std::vector<int> count(leaves, 0);
  for (int l : leaf_of) ++count[l];
  std::vector<int> singles_joined = leaf_of;
  for (int& l : singles_joined) l = count[l] == 1 ? leaves : l;
  consider(std::move(singles_joined));
  for (int h = 0; h < n; ++h) {
    for (int to = 0; to <= leaves; ++to) {
      if (to == leaf_of[h]) continue;
      std::vector<int> moved = leaf_of;
      moved[h] = to;
      consider(std::move(moved));
    }
  }
  if (best.empty()) return false;
  leaf_of = std::move(best);
  wrong = best_wrong;
  return true;
}

// Local search: from one leaf per host and from one leaf for all, improving
// steps while there are any; the better of the two ends.
std::vector<int> SearchLocally(int n, const std::vector<std::vector<ConcurrentFlow>>& rounds, double slowed_below) {
  std::vector<int> best;
  int best_wrong = 0;
  for (bool start_apart : {false, true}) {
    std::vector<int> leaf_of(n, 0);
    if (start_apart)
      for (int h = 0; h < n; ++h) leaf_of[h] = h;
    int wrong = Disagreements(leaf_of, rounds, slowed_below);
    while (ImproveOnce(leaf_of, wrong, rounds, slowed_below)) {
    }
    if (best.empty() || Better(wrong, LeafCount(leaf_of), best_wrong, LeafCount(best))) {
      best = leaf_of;
      best_wrong = wrong;
    }
  }
  return best;
}

}  // namespace

std::vector<std::pair<int, int>> ShiftRound(int hosts, int shift) {
  std::vector<std::pair<int, int>> flows;
  for (int i = 0; i < hosts; ++i) flows.emplace_back(i, (i + shift) % hosts);
  return flows;
}

InferredLeaves InferLeaves(int hosts, const std::vector<std::vector<ConcurrentFlow>>& rounds, double slowed_below) {
  InferredLeaves out;
  if (hosts <= 0) return out;
  out.exhaustive = hosts <= kExhaustiveHosts;
  out.leaf_of = Canonical(out.exhaustive ? SearchAll(hosts, rounds, slowed_below)
                                         : SearchLocally(hosts, rounds, slowed_below));
  out.leaves = LeafCount(out.leaf_of);
  out.disagreeing = Disagreements(out.leaf_of, rounds, slowed_below);
  out.uplink_gbyte_per_s.assign(out.leaves, 0);
  for (const auto& round : rounds) {
    for (const ConcurrentFlow& f : round) out.flows_used += f.concurrent && f.alone_gbyte_per_s > 0;
    for (const auto& [where, flows] : UplinkGroups(out.leaf_of, round)) {
      double& uplink = out.uplink_gbyte_per_s[where.first];
      uplink = std::max(uplink, CarriedTogether(flows));
    }
  }
  if (out.leaves == 1) out.uplink_gbyte_per_s[0] = 0;  // no uplink crossed
  return out;
}

}  // namespace gpulaunch
