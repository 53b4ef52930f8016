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
// sender's leaf uplink and down the receiver's, and the flows of a round on
// one uplink direction share it: each should be slowed, and every other flow
// not. The inferred partition is the one that mispredicts the fewest flows
// (ties: fewer leaves, then the first in a fixed order): every
// partition for up to kExhaustiveHosts hosts, else a local search (merge two
// leaves, or move one host, while that helps) from one leaf per host and
// from one leaf for all, the better end kept.
//
// A leaf's uplink figure is the most its flows carried together in one
// direction, in any round: the bytes they moved over the time from the first
// one's start to the last one's end. When they kept the link busy that is its
// rate (a flow that ends first leaves the others its share, so the last ends
// when the link has moved them all); when they could not fill it, a lower
// bound. It is never more than the link carried, whatever the shares and the
// moments each flow's timed part began (the slowest flow's rate times the
// flows' count was, when one flow's warm-up was starved: 22.1 Mbit/s for a
// 19.1 Mbit/s uplink in one CI run). The ends are read on the clients'
// clocks: their skew (milliseconds under NTP) against flows of a second or more.
//
// What cannot be seen: an uplink that two flows share without either falling
// below `slowed_below` of its alone rate (on the rig, TCP gave one of two
// flows 1.4 times the even share: so from about 1.07 times a host's rate up),
// and so its leaves look like one: right for placement, it is hardly a
// bottleneck. A host alone on its leaf looks like a host on the others'.
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
  // The whole bandwidth half, warm-up included: when it began and ended,
  // seconds after the round's start time (on its client's clock), and the
  // bytes it moved in between.
  double began_s = 0, ended_s = 0, bytes = 0;
};

struct InferredLeaves {
  std::vector<int> leaf_of;             // by host index: leaf number, 0.. in order of first host
  std::vector<double> uplink_gbyte_per_s;  // by leaf
  int leaves = 0;
  int flows_used = 0;                   // flows that counted
  int disagreeing = 0;                  // of those, how many the partition mispredicts
  bool exhaustive = false;              // every partition was tried
};

// `rounds[k]`: the flows of one round. Hosts are 0..hosts-1.
InferredLeaves InferLeaves(int hosts, const std::vector<std::vector<ConcurrentFlow>>& rounds,
                           double slowed_below = 0.75);

// The flows of round `shift` over `hosts` hosts (from i to i+shift mod n).
std::vector<std::pair<int, int>> ShiftRound(int hosts, int shift);

}  // namespace gpulaunch
