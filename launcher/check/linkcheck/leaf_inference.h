// Which hosts share an uplink, inferred from flows that ran at once
// (`gpulaunch linkcheck --concurrent`). Pure: rates in, leaves out.
//
// The rounds: with hosts h0..h(n-1) in order, round k (1 <= k < n) runs
// every flow h(i) -> h(i+k mod n) at once, so each host sends one flow and
// receives one (no NIC carries two). A flow that gets much less than it got
// alone (below `slowed_below` of its alone rate) shared a link with another
// flow of its round; on a two-tier network that link is an uplink.
//
// The model of a partition into leaves: a flow between two leaves goes up the
// sender's leaf uplink and down the receiver's; it is slowed when another
// flow of its round uses the same uplink in the same direction. The inferred
// partition is the one whose predictions disagree with the fewest observed
// flows (ties: fewer leaves, then the first in a fixed order): every
// partition for up to kExhaustiveHosts hosts, else a local search (merge two
// leaves, or move one host, while that helps) from one leaf per host and
// from one leaf for all, the better end kept. A leaf's uplink figure is the most its flows carried at once
// in one direction, in any round: a lower bound when no round filled it.
//
// What cannot be seen: an uplink at least twice a host's rate never slows a
// flow, so its leaves look like one (right for placement: it is not a
// bottleneck); a host alone on its leaf looks like a host on the others'.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

inline constexpr int kExhaustiveHosts = 10;

struct ConcurrentFlow {
  int from = 0, to = 0;            // host indices
  double alone_gbyte_per_s = 0;    // what the flow got alone (the pairs phase)
  double together_gbyte_per_s = 0; // what it got in its round
  bool concurrent = true;          // false: it did not overlap its round (started late); not used
};

struct InferredLeaves {
  std::vector<int> leaf_of;             // by host index: leaf number, 0.. in order of first host
  std::vector<double> uplink_gbyte_per_s;  // by leaf
  int leaves = 0;
  int flows_used = 0;                   // flows that counted
  int disagreeing = 0;                  // of those, how many the partition does not explain
  bool exhaustive = false;              // every partition was tried
};

// `rounds[k]`: the flows of one round. Hosts are 0..hosts-1.
InferredLeaves InferLeaves(int hosts, const std::vector<std::vector<ConcurrentFlow>>& rounds,
                           double slowed_below = 0.7);

// The flows of round `shift` over `hosts` hosts (from i to i+shift mod n).
std::vector<std::pair<int, int>> ShiftRound(int hosts, int shift);

}  // namespace gpulaunch
