// What `gpulaunch linkcheck --hosts` turns its measurements into: the link
// file the placement model reads (common/link_table.h), and the lines that
// tell the user what it found. Pure: results in, table and text out.
#pragma once

#include <string>
#include <vector>

#include "common/link_table.h"
#include "launcher/check/linkcheck/leaf_inference.h"
#include "launcher/check/linkcheck/link_result.h"

namespace gpulaunch {

// A link's bandwidth for the model: the best of its message sizes (or the
// given size's when it has one), in GB/s; 0 when it failed.
double LinkGbytePerS(const LinkResult& link, uint64_t message_bytes = 0);

// One round of --concurrent: results[i] is host i's flow (ShiftRound).
struct SurveyRound {
  int shift = 0;
  std::vector<LinkResult> results;
};

struct LinkSurvey {
  std::vector<std::string> hosts;      // in the order given
  std::vector<LinkResult> pairs;       // the --pattern runs
  std::vector<LinkResult> shared_memory;  // from == to
  std::vector<SurveyRound> rounds;     // --concurrent
};

// What the pair got alone, either direction (the slower when both were
// measured), at `message_bytes` when measured at that size; 0 when unknown.
double AloneGbytePerS(const LinkSurvey& survey, const std::string& from, const std::string& to,
                      uint64_t message_bytes = 0);

// Whether a flow of a round overlapped the others: it was measured, says
// when its bandwidth half began and ended, and began it no later than a
// twentieth of its own duration after the round's start time (clients that
// were ready wake within milliseconds).
bool BeganWithItsRound(const LinkResult& flow);

// The flows of the rounds with what each got alone (from `pairs`, either
// direction) and whether it overlapped its round (BeganWithItsRound).
std::vector<std::vector<ConcurrentFlow>> ConcurrentFlows(const LinkSurvey& survey);

// Leaves that mispredict more of the flows than this are not saved: no tree
// is better than a wrong one (flows that a busy CPU slowed, not an uplink,
// look like that).
inline constexpr double kMaxLeafMisfit = 0.1;
bool LeavesFit(const InferredLeaves& leaves);

// The link file's content: measured pairs and shared memory, and the leaves
// inferred from the rounds when they fit (named leaf1, leaf2, ... in host
// order).
LinkTable SurveyTable(const LinkSurvey& survey, const InferredLeaves* leaves, const std::string& measured_at);

// Lines for the user: shared memory per host, each round's flows against
// their alone rates, the leaves and how well they fit.
std::vector<std::string> DescribeSurvey(const LinkSurvey& survey, const InferredLeaves* leaves);

}  // namespace gpulaunch
