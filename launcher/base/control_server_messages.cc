// The control server's handshake and messages: what a connection may say,
// once and in which order, and what it changes in the job's records
// (control_server.h states the contract).
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/strings.h"
#include "launcher/base/control_server.h"
#include "launcher/base/control_server_peer.h"
#include "launcher/base/fd_io.h"
#include "launcher/base/process_tree.h"

namespace gpulaunch {

bool ControlServer::HandleHello(Peer& peer, const std::string& line) {
  Words in(line);
  const auto word = in.Next();
  const auto rank = in.NextInt<int>();
  const auto nonce = in.Next(), proof = in.Next();
  if (word != "auth" || !rank || !nonce || !proof || in.Next() || *rank < 0 || *rank >= o_.world ||
      nonce->size() != kControlNonceHexChars || nonce->find_first_not_of("0123456789abcdef") != std::string::npos) {
    return false;
  }
  const std::string want =
      ControlProof(o_.secret, ControlSide::kClient, o_.job_id, *rank, peer.server_nonce, *nonce);
  if (!ControlProofsEqual(want, *proof)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (!authenticated_.insert(*rank).second) return false;  // a rank speaks on one connection, once
  peer.authenticated = true;
  peer.rank = *rank;
  peer.session = ControlSession(o_.secret, ControlSide::kServer, o_.job_id, *rank, peer.server_nonce, *nonce);
  rank_peer_[*rank] = &peer;
  const std::string welcome =
      "welcome " + ControlProof(o_.secret, ControlSide::kServer, o_.job_id, *rank, peer.server_nonce, *nonce) + "\n";
  return SendAll(peer.fd, welcome.data(), welcome.size(), kControlSendWaitMs);
}

bool ControlServer::HandleLine(Peer& peer, const std::string& sealed) {
  if (peer.payload_left == 0 && peer.stacks_header.empty()) {
    // A stack dump's tag covers its payload: take the payload in first.
    // Only a "stacks" line is read before its tag is checked.
    const std::string_view unsealed = ControlSession::Unsealed(sealed);
    const auto header = unsealed.rfind("stacks ", 0) == 0 ? ParseControlLine(std::string(unsealed))
                                                           : std::optional<ControlMessage>();
    if (header && header->kind == ControlMessage::Kind::kStacks) {
      bool asked;
      {
        std::lock_guard<std::mutex> lock(mu_);
        asked = stacks_pending_.count(peer.rank) > 0;
      }
      if (header->rank != peer.rank || header->payload_bytes > kMaxStackBytes) return false;
      peer.stacks_wanted = asked;  // an answer after CollectStacks gave up is read and dropped
      peer.stacks_header = sealed;
      peer.payload.clear();
      peer.payload_left = header->payload_bytes;
      if (peer.payload_left > 0) return true;
    }
  }
  const bool stacks = !peer.stacks_header.empty();
  const std::string header = stacks ? std::move(peer.stacks_header) : std::string();  // `sealed` may be it
  peer.stacks_header.clear();
  const auto line = peer.session.Open(stacks ? header : sealed, peer.payload);
  if (!line) return false;
  auto m = ParseControlLine(std::string(*line));
  if (!m || m->rank != peer.rank) return false;  // a connection speaks for its own rank only
  if (stacks) {
    std::lock_guard<std::mutex> lock(mu_);
    if (peer.stacks_wanted) records_[peer.rank].stacks = EscapeControlBytes(peer.payload, /*keep_newlines=*/true);
    stacks_pending_.erase(peer.rank);
    peer.payload.clear();
    changed_.notify_all();
    return true;
  }
  return HandleMessage(peer, *m);
}

bool ControlServer::HandleMessage(Peer& peer, const ControlMessage& m) {
  using Kind = ControlMessage::Kind;
  if (m.kind == Kind::kSlot) {
    if (peer.slot_asked) return false;
    peer.slot_asked = true;
    HandleSlot(peer, m);
    return true;
  }
  int pidfd = -1;
  if (m.kind == Kind::kCheckin || m.kind == Kind::kRefuse) {
    if (peer.checked_in || peer.refused) return false;
    // Outside the lock: reads /proc. Only a process gpulaunch started counts.
    if (m.kind == Kind::kCheckin && peer.local) pidfd = PidfdIfDescendant(m.pid, o_.ancestor);
  }
  if (m.kind == Kind::kExit && peer.exit_seen) return false;
  std::lock_guard<std::mutex> lock(mu_);
  RankRecord& r = records_[m.rank];
  r.rank = m.rank;
  // Dated by the pass that read it, as a connection that closed in the
  // same pass is: arrival order within a pass says nothing of cause.
  const auto now = pass_time_ == ControlClock::time_point{} ? ControlClock::now() : pass_time_;
  switch (m.kind) {
    case Kind::kCheckin:
      peer.checked_in = true;
      RecordCheckIn(peer, m, r, pidfd, now);
      break;
    case Kind::kRefuse:
      peer.refused = true;
      r.host = m.host;
      r.refusal = m.text;
      break;
    case Kind::kBeat:
      r.last_beat = now;
      break;
    case Kind::kSingleton:
      r.mpi_singleton = true;
      break;
    case Kind::kTail:
      r.stderr_tail.push_back(m.text);
      if (r.stderr_tail.size() > kStderrTailLines) r.stderr_tail.erase(r.stderr_tail.begin());
      break;
    case Kind::kExit:
      peer.exit_seen = true;
      r.ended = true;
      r.ended_at = now;
      r.signaled = m.signaled;
      r.exit_value = m.value;
      r.told_to_stop = m.told_to_stop;
      break;
    case Kind::kMetric:
      if (o_.keep_metrics) RecordMetric(m, r, now);
      break;
    case Kind::kHelper:
      ++r.helpers_total;
      if (r.helpers.size() < kMaxHelpersKept) r.helpers.push_back({m.pid, m.text, m.value, m.signaled});
      break;
    case Kind::kSlot:
    case Kind::kStacks:
      break;  // answered above
  }
  changed_.notify_all();
  return true;
}

void ControlServer::RecordCheckIn(Peer& peer, const ControlMessage& m, RankRecord& r, int pidfd,
                                  ControlClock::time_point now) {
  r.pid = m.pid;
  r.world = m.world;
  r.host = m.host;
  r.plan_hash = m.plan_hash;
  r.in_cgroup = m.in_cgroup;
  r.checked_in = now;
  if (pidfd >= 0) pidfds_[m.rank] = pidfd;
  if (!m.slurm_step.empty() && !o_.slurm_job_id.empty() && m.slurm_step.rfind(o_.slurm_job_id + ".", 0) == 0) {
    slurm_steps_.insert(m.slurm_step);
  }
  // The job is being stopped: this rank checked in too late to be asked.
  if (stop_signal_ != 0) SendTo(peer, "signal " + std::to_string(stop_signal_));
  // The last rank in: every rank still connected hears that all have
  // started, those whose job already ended (and wait for this) included.
  if (++checked_in_ == o_.world) {
    for (const auto& [rank, p] : rank_peer_)
      if (p->checked_in) SendTo(*p, "started");
  }
}

void ControlServer::RecordMetric(const ControlMessage& m, RankRecord& r, ControlClock::time_point now) {
  r.last_beat = now;  // a finished step is progress
  auto parsed = ParseStepMetricsJson(m.text, "rank " + std::to_string(m.rank) + " metrics");
  // The connection speaks for its rank, whatever the record says.
  if (!parsed.ok() || parsed->groups.size() > kMaxStepGroups) {
    ++malformed_metrics_;
  } else if (auto& steps = metrics_[m.rank]; steps.size() < kMaxStepsPerRank) {
    parsed->rank = m.rank;
    steps.push_back(std::move(parsed).value());
  }
}

void ControlServer::HandleSlot(Peer& peer, const ControlMessage& m) {
  const bool planned = static_cast<size_t>(m.rank) < o_.check.host_of_rank.size();
  const auto expected = planned ? o_.check.expected.find(o_.check.host_of_rank[m.rank]) : o_.check.expected.end();
  std::lock_guard<std::mutex> lock(mu_);
  if (!m.text.empty() && expected != o_.check.expected.end()) {
    if (m.text == expected->second) {
      unverified_.erase(expected->first);
    } else {
      changed_hosts_.insert(expected->first);
    }
  }
  const bool changed = !changed_hosts_.empty();
  if (!changed && !unverified_.empty()) {
    deferred_slots_.push_back(&peer);
    held_ranks_.insert(m.rank);
    return;
  }
  for (Peer* waiting : deferred_slots_) AnswerSlot(*waiting, changed);
  deferred_slots_.clear();
  held_ranks_.clear();
  AnswerSlot(peer, changed);
}

void ControlServer::AnswerSlot(Peer& peer, bool changed) {
  const int rank = peer.rank;
  const bool known = rank >= 0 && static_cast<size_t>(rank) < o_.slot_rows.size();
  SendTo(peer, "slot " + std::to_string(rank) + " " + (o_.expected_hash.empty() ? "-" : o_.expected_hash) + " " +
                   (changed ? kHostChangedRow : known ? o_.slot_rows[rank] : "-"));
}

void ControlServer::SendTo(Peer& peer, const std::string& line) {
  const std::string sealed = peer.session.Seal(line);
  // A connection that cannot take a short line within a second is broken:
  // shut it, and the serving thread drops it.
  if (!SendAll(peer.fd, sealed.data(), sealed.size(), kControlSendWaitMs)) shutdown(peer.fd, SHUT_RDWR);
}

}  // namespace gpulaunch
