#include "launcher/check/linkcheck/survey_runner.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "launcher/base/control_auth.h"

namespace gpulaunch {
namespace {

// Round `shift` of --concurrent: every host's flow to the host `shift` after
// it, their bandwidth halves begun together after --sync seconds. One size
// (the largest) and few round trips: the round is about bandwidth. Each flow
// sends at least what takes it kRoundFlowSeconds alone, so that a client
// waking a few milliseconds late still overlaps the others (a fast link
// moves --mib-per-size in milliseconds).
constexpr double kRoundFlowSeconds = 1.0;
constexpr uint64_t kMaxRoundFlowBytes = 4ull << 30;
SurveyRound RunRound(const LinkSurvey& survey, int shift, int sync_s, const LinkcheckOptions& o,
                     const HostCommandTarget& target, const std::string& self) {
  const std::vector<std::string>& hosts = survey.hosts;
  LinkcheckOptions round = o;
  round.plan.iterations = std::min(o.plan.iterations, 20);
  round.plan.sizes = {*std::max_element(o.plan.sizes.begin(), o.plan.sizes.end())};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  round.plan.bandwidth_start_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now).count() + int64_t{sync_s} * 1000;
  SurveyRound out{shift, std::vector<LinkResult>(hosts.size())};
  std::vector<std::thread> flows;
  for (const auto& [from, to] : ShiftRound(static_cast<int>(hosts.size()), shift)) {
    LinkcheckOptions flow = round;
    const double alone = AloneGbytePerS(survey, hosts[from], hosts[to]);
    const uint64_t wanted = std::min<uint64_t>(static_cast<uint64_t>(alone * 1e9 * kRoundFlowSeconds), kMaxRoundFlowBytes);
    flow.plan.bytes_per_size = std::max(o.plan.bytes_per_size, (wanted + (1u << 20) - 1) >> 20 << 20);
    flows.emplace_back([&, flow, from = from, to = to] {
      out.results[from] = MeasurePair(hosts[from], hosts[to], flow, target, self);
    });
  }
  for (std::thread& t : flows) t.join();
  return out;
}

}  // namespace

LinkResult MeasurePair(const std::string& from, const std::string& to, const LinkcheckOptions& o,
                       const HostCommandTarget& target, const std::string& self) {
  // The server allows what the client will ask (the same measurement
  // options), and both prove the run's secret, which travels in the
  // environment (ucx_link.h).
  const auto measure = ClientArgs(o);
  std::vector<std::string> server = {self, "--server", "--once"};
  server.insert(server.end(), measure.begin(), measure.end());
  const std::map<std::string, std::string> env = {{kLinkcheckSecretEnv, NewControlSecretHex()}};
  CapturedRun server_run;
  std::thread server_thread([&] {
    server_run = RunOnHost(to, server, *target.engine, o.allow_run_as_root, o.budget_s * 1000, env);
  });
  std::vector<std::string> client = {self, "--client", to};
  const auto client_measure = ClientOnlyArgs(o);
  client.insert(client.end(), client_measure.begin(), client_measure.end());
  const CapturedRun run = RunOnHost(from, client, *target.engine, o.allow_run_as_root, o.budget_s * 1000, env);
  server_thread.join();
  LinkResult r;
  r.from = from;
  r.to = to;
  const size_t open = run.out.find('{'), close = run.out.rfind('}');
  auto parsed = open == std::string::npos || close == std::string::npos
                    ? StatusOr<std::vector<LinkResult>>(InvalidArgument("no results"))
                    : ParseLinkResultsJson(run.out.substr(open, close - open + 1), "results of " + from);
  if (run.timed_out) {
    r.error = "no result within --budget " + std::to_string(o.budget_s) + " s";
  } else if (parsed.ok() && parsed->size() == 1) {
    r = parsed->front();
    r.from = from;
    r.to = to;
  } else {
    // The client's own words (it prints its error), else the engine's.
    r.error = EngineFailureReason(run, *target.engine);
    for (const std::string& line : Split(run.err, '\n')) {
      if (line.find("linkcheck:") != std::string::npos) {
        r.error = std::string(Trim(line.substr(line.find("linkcheck:") + 10)));
        break;
      }
    }
  }
  return r;
}

SurveyRun RunSurvey(const LinkcheckOptions& o, const HostCommandTarget& target, const std::string& self) {
  const std::vector<std::string>& hosts = target.hosts;
  std::vector<std::pair<std::string, std::string>> pairs;
  if (o.pattern == "ring") {
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (hosts.size() == 2 && i == 1) break;  // a ring of two is one link
      pairs.emplace_back(hosts[i], hosts[(i + 1) % hosts.size()]);
    }
  } else {
    for (size_t i = 0; i < hosts.size(); ++i)
      for (size_t j = i + 1; j < hosts.size(); ++j) pairs.emplace_back(hosts[i], hosts[j]);
  }
  SurveyRun out;
  LinkSurvey& survey = out.survey;
  survey.hosts = hosts;
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::cerr << "linkcheck: [" << i + 1 << "/" << pairs.size() << "] " << pairs[i].first << " -> " << pairs[i].second
              << std::endl;
    survey.pairs.push_back(MeasurePair(pairs[i].first, pairs[i].second, o, target, self));
  }
  if (o.shared_memory && o.links != "none") {
    // Two ranks on one host: UCX's own choice of transport (shared memory),
    // whatever --tls says of the network.
    LinkcheckOptions local = o;
    local.ucx = UcxSettings{};
    for (const std::string& h : hosts) {
      std::cerr << "linkcheck: shared memory on " << h << std::endl;
      survey.shared_memory.push_back(MeasurePair(h, h, local, target, self));
    }
  }
  if (o.concurrent) {
    // A round whose flows did not all begin together is run again with
    // twice the time to start (the server waits 30 s at most); the leaves are
    // inferred only from rounds that ran at once.
    bool all_together = true;
    for (int shift = 1; shift < static_cast<int>(hosts.size()); ++shift) {
      int sync_s = o.sync_s;
      for (int attempt = 0;; ++attempt) {
        std::cerr << "linkcheck: at once, round " << shift << "/" << hosts.size() - 1 << " (start in " << sync_s
                  << " s)" << std::endl;
        SurveyRound round = RunRound(survey, shift, sync_s, o, target, self);
        const bool together = std::all_of(round.results.begin(), round.results.end(), BeganWithItsRound);
        if (together || attempt == 2 || sync_s >= kMaxSyncS) {
          all_together &= together;
          survey.rounds.push_back(std::move(round));
          break;
        }
        sync_s = std::min(2 * sync_s, kMaxSyncS);
      }
    }
    out.leaves = all_together ? InferLeaves(static_cast<int>(hosts.size()), ConcurrentFlows(survey)) : InferredLeaves{};
  }
  return out;
}

}  // namespace gpulaunch
