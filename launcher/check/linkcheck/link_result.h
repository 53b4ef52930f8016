// What `gpulaunch linkcheck` measures on one link, and how results are
// shown, saved and compared. Pure values and functions (no UCX), so the
// report and the baseline comparison are tested without a network.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/stats.h"
#include "common/status.h"

namespace gpulaunch {

struct BandwidthSample {
  uint64_t message_bytes = 0;
  uint64_t total_bytes = 0;
  double seconds = 0;
  // Sent before the timed part (the window the server acknowledges first):
  // moved in the bandwidth half's time, not in `seconds`.
  uint64_t warmup_bytes = 0;
  double gbps() const { return seconds > 0 ? static_cast<double>(total_bytes) * 8 / seconds / 1e9 : 0; }
  double mibs() const { return seconds > 0 ? static_cast<double>(total_bytes) / (1 << 20) / seconds : 0; }
};

struct LinkResult {
  std::string from, to;                 // client host, server host
  std::vector<std::string> transports;  // UCX's lanes, "tcp/eth0", "posix/memory", ...
  // 8-byte ping-pong, microseconds. Round trips are measured; one-way is half.
  int iterations = 0;
  double rtt_median_us = 0, rtt_p99_us = 0;
  std::vector<BandwidthSample> bandwidth;  // by message size
  std::string error;                       // the link could not be measured
  // With a start time (linkcheck --concurrent): how late the bandwidth half
  // began, milliseconds; negative when no start time was given.
  double started_late_ms = -1;
  // With a start time: when the bandwidth half ended (the server had
  // acknowledged its last message), milliseconds after the start time, on
  // the client's clock; negative without one.
  double ended_ms = -1;
};

std::string LinkResultsJson(const std::vector<LinkResult>& links);
StatusOr<std::vector<LinkResult>> ParseLinkResultsJson(const std::string& text, const std::string& origin);
std::string RenderLinkTable(const std::vector<LinkResult>& links);

// Links more than `tolerance_pct` worse than the baseline's same link
// (from -> to): higher median latency, or lower bandwidth at a size. One
// line each: "node1 -> node2: bandwidth 4 MiB 9.12 Gbps, 31% below 13.2".
std::vector<std::string> CompareLinks(const std::vector<LinkResult>& baseline, const std::vector<LinkResult>& now,
                                      double tolerance_pct);

}  // namespace gpulaunch
