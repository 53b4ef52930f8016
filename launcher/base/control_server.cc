#include "launcher/base/control_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launcher/base/control_protocol.h"
#include "launcher/base/host_identity.h"
#include "launcher/base/open_file_limit.h"

namespace gpulaunch {
namespace {

constexpr size_t kMaxLineBytes = 64 * 1024;  // a peer that sends more without a newline is dropped
constexpr size_t kTailLines = 20;

}  // namespace

ControlServer::~ControlServer() { Stop(); }

Status ControlServer::Start(const std::string& bind_addr, const std::string& expected_hash, int world,
                            std::vector<std::string> slot_rows, HostCheck check) {
  if (world > 0) {
    GL_RETURN_IF_ERROR(RaiseOpenFileLimit(static_cast<rlim_t>(world) + kControlServerSpareFiles,
                                          "the job has " + std::to_string(world) +
                                              " ranks and gpulaunch holds one connection per rank: it needs")
                           .status());
  }
  expected_hash_ = expected_hash;
  slot_rows_ = std::move(slot_rows);
  check_ = std::move(check);
  for (const std::string& host : check_.host_of_rank)
    if (check_.expected.count(host)) unverified_.insert(host);
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return Internal("cannot create the check-in socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (inet_pton(AF_INET, bind_addr.c_str(), &addr.sin_addr) != 1) return Internal("bad bind address " + bind_addr);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listen_fd_, 4096) != 0) {
    return Internal("cannot listen for rank check-ins on " + bind_addr);
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return Internal("cannot create the check-in wake-up pipe");
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void ControlServer::Stop() {
  if (thread_.joinable()) {
    Sync();  // what the last ranks sent before they ended belongs in the summary
    stop_ = true;
    [[maybe_unused]] auto n = write(wake_[1], "x", 1);
    thread_.join();
  }
  for (Peer& p : peers_) close(p.fd);
  peers_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    rank_fd_.clear();
  }
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void ControlServer::Serve() {
  while (!stop_) {
    pollfd wake{wake_[0], POLLIN, 0};
    PollOnce(-1);
    if (poll(&wake, 1, 0) == 1) {
      char buf[64];
      while (read(wake_[0], buf, sizeof buf) > 0) {
      }
      uint64_t target;
      {
        std::lock_guard<std::mutex> lock(mu_);
        target = sync_requested_;
      }
      // Everything that was already sent when Sync() asked is taken in.
      for (int pass = 0; pass < 64; ++pass) PollOnce(0);
      std::lock_guard<std::mutex> lock(mu_);
      sync_done_ = target;
      changed_.notify_all();
    }
  }
}

void ControlServer::PollOnce(int timeout_ms) {
  std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  for (const Peer& p : peers_) fds.push_back({p.fd, POLLIN, 0});
  if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  std::vector<Peer> kept;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& peer = peers_[i];
    if (!(fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) || ReadPeer(peer)) {
      kept.push_back(std::move(peer));
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    // Still counted as held: it reached gpulaunch and never got its row.
    std::erase_if(deferred_slots_, [&peer](const std::pair<int, int>& d) { return d.first == peer.fd; });
    if (peer.rank >= 0) {
      rank_fd_.erase(peer.rank);
      stacks_pending_.erase(peer.rank);
      auto it = records_.find(peer.rank);
      if (it != records_.end() && !peer.exit_seen && it->second.refusal.empty()) {
        it->second.lost = true;
        it->second.ended_at = ControlClock::now();
      }
    }
    close(peer.fd);
    changed_.notify_all();
  }
  peers_ = std::move(kept);
  if (fds[0].revents & POLLIN) {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) break;
      DetectVanishedPeer(fd);
      Peer peer;
      peer.fd = fd;
      peers_.push_back(std::move(peer));
    }
  }
}

bool ControlServer::ReadPeer(Peer& peer) {
  char buf[16384];
  const ssize_t n = read(peer.fd, buf, sizeof buf);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  if (n == 0) return false;
  peer.buffer.append(buf, static_cast<size_t>(n));
  size_t pos = 0;
  while (pos < peer.buffer.size()) {
    if (peer.payload_left > 0) {
      const size_t take = std::min(peer.payload_left, peer.buffer.size() - pos);
      std::lock_guard<std::mutex> lock(mu_);
      records_[peer.rank].stacks.append(peer.buffer, pos, take);
      pos += take;
      peer.payload_left -= take;
      if (peer.payload_left == 0) {
        stacks_pending_.erase(peer.rank);
        changed_.notify_all();
      }
      continue;
    }
    const size_t nl = peer.buffer.find('\n', pos);
    if (nl == std::string::npos) break;
    HandleLine(peer, peer.buffer.substr(pos, nl - pos));
    pos = nl + 1;
  }
  peer.buffer.erase(0, pos);
  return peer.buffer.size() <= kMaxLineBytes;
}

void ControlServer::HandleLine(Peer& peer, const std::string& line) {
  const auto m = ParseControlLine(line);
  // A connection speaks for one rank: the one it checked in (or refused) as.
  if (!m || (peer.rank >= 0 && m->rank != peer.rank)) return;
  if (m->kind == ControlMessage::Kind::kSlot) {
    HandleSlot(peer, *m);
    return;
  }
  const bool opens = m->kind == ControlMessage::Kind::kCheckin || m->kind == ControlMessage::Kind::kRefuse;
  if (peer.rank < 0 && !opens) return;
  std::lock_guard<std::mutex> lock(mu_);
  RankRecord& r = records_[m->rank];
  r.rank = m->rank;
  const auto now = ControlClock::now();
  switch (m->kind) {
    case ControlMessage::Kind::kCheckin:
      RecordCheckIn(peer, *m, r, now);
      break;
    case ControlMessage::Kind::kRefuse:
      peer.rank = m->rank;
      r.host = m->host;
      r.refusal = m->text;
      break;
    case ControlMessage::Kind::kBeat:
      r.last_beat = now;
      break;
    case ControlMessage::Kind::kTail:
      r.stderr_tail.push_back(m->text);
      if (r.stderr_tail.size() > kTailLines) r.stderr_tail.erase(r.stderr_tail.begin());
      break;
    case ControlMessage::Kind::kExit:
      peer.exit_seen = true;
      r.ended = true;
      r.ended_at = now;
      r.signaled = m->signaled;
      r.exit_value = m->value;
      r.told_to_stop = m->told_to_stop;
      break;
    case ControlMessage::Kind::kMetric:
      RecordMetric(*m, r, now);
      break;
    case ControlMessage::Kind::kSlot:
      break;  // answered above
    case ControlMessage::Kind::kStacks:
      r.stacks.clear();
      peer.payload_left = m->payload_bytes;
      if (m->payload_bytes == 0) stacks_pending_.erase(m->rank);
      break;
  }
  changed_.notify_all();
}

void ControlServer::RecordCheckIn(Peer& peer, const ControlMessage& m, RankRecord& r, ControlClock::time_point now) {
  peer.rank = m.rank;
  rank_fd_[m.rank] = peer.fd;
  r.pid = m.pid;
  r.world = m.world;
  r.host = m.host;
  r.plan_hash = m.plan_hash;
  r.checked_in = now;
  if (!m.slurm_step.empty()) slurm_steps_.insert(m.slurm_step);
  if (stop_signal_ != 0) {
    // The job is being stopped: this rank checked in too late to be asked.
    const std::string request = "signal " + std::to_string(stop_signal_) + "\n";
    [[maybe_unused]] ssize_t sent = send(peer.fd, request.data(), request.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

void ControlServer::RecordMetric(const ControlMessage& m, RankRecord& r, ControlClock::time_point now) {
  r.last_beat = now;  // a finished step is progress
  auto parsed = ParseStepMetricsJson(m.text, "rank " + std::to_string(m.rank) + " metrics");
  // The connection speaks for its rank, whatever the record says.
  if (!parsed.ok()) {
    ++malformed_metrics_;
  } else if (auto& steps = metrics_[m.rank]; steps.size() < kMaxStepsPerRank) {
    parsed->rank = m.rank;
    steps.push_back(std::move(parsed).value());
  }
}

void ControlServer::HandleSlot(const Peer& peer, const ControlMessage& m) {
  const bool planned = static_cast<size_t>(m.rank) < check_.host_of_rank.size();
  const auto expected = planned ? check_.expected.find(check_.host_of_rank[m.rank]) : check_.expected.end();
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!m.text.empty() && expected != check_.expected.end()) {
      if (m.text == expected->second) {
        unverified_.erase(expected->first);
      } else {
        changed_hosts_.insert(expected->first);
      }
    }
    changed = !changed_hosts_.empty();
  }
  if (!changed && !unverified_.empty()) {
    deferred_slots_.emplace_back(peer.fd, m.rank);
    std::lock_guard<std::mutex> lock(mu_);
    held_ranks_.insert(m.rank);
    return;
  }
  for (const auto& [fd, rank] : deferred_slots_) AnswerSlot(fd, rank, changed);
  deferred_slots_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ranks_.clear();
  }
  AnswerSlot(peer.fd, m.rank, changed);
}

void ControlServer::AnswerSlot(int fd, int rank, bool changed) const {
  const bool known = rank >= 0 && static_cast<size_t>(rank) < slot_rows_.size();
  const std::string answer = "slot " + std::to_string(rank) + " " + (expected_hash_.empty() ? "-" : expected_hash_) +
                             " " + (changed ? "!" : known ? slot_rows_[rank] : "-") + "\n";
  // A fresh connection's send buffer holds a row many times over.
  [[maybe_unused]] ssize_t sent = send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

std::set<int> ControlServer::HeldRanks() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return held_ranks_;
}

std::set<std::string> ControlServer::ChangedHosts() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return changed_hosts_;
}

void ControlServer::Sync() {
  if (!thread_.joinable() || stop_) return;
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = ++sync_requested_;
  [[maybe_unused]] auto n = write(wake_[1], "s", 1);
  changed_.wait_for(lock, std::chrono::milliseconds(1000), [&] { return sync_done_ >= target; });
}

int ControlServer::CheckedIn() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [rank, r] : records_) n += r.pid > 0;
  return n;
}

std::set<int> ControlServer::LocalPids() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int> pids;
  for (const auto& [rank, r] : records_)
    if (r.pid > 0 && !r.ended && IsLocalHost(r.host)) pids.insert(r.pid);
  return pids;
}

std::set<std::string> ControlServer::SlurmSteps() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return slurm_steps_;
}

std::set<int> ControlServer::HashMismatches() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int> out;
  for (const auto& [rank, r] : records_)
    if (r.pid > 0 && r.plan_hash != expected_hash_) out.insert(rank);
  return out;
}

std::map<int, RankRecord> ControlServer::Records() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

std::map<int, std::vector<StepMetrics>> ControlServer::Metrics() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

int ControlServer::MalformedMetrics() {
  std::lock_guard<std::mutex> lock(mu_);
  return malformed_metrics_;
}

void ControlServer::CollectStacks(const std::set<int>& ranks, int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  for (int rank : ranks) {
    auto it = rank_fd_.find(rank);
    if (it == rank_fd_.end()) continue;
    records_[rank].stacks.clear();
    if (write(it->second, "stacks\n", 7) == 7) stacks_pending_.insert(rank);
  }
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return stacks_pending_.empty(); });
  stacks_pending_.clear();
}

bool ControlServer::SignalAllRanks(int sig, int world) {
  Sync();
  const std::string request = "signal " + std::to_string(sig) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  int known = 0;
  for (const auto& [rank, r] : records_) {
    if (r.pid <= 0 || rank >= world) continue;
    ++known;
    if (r.ended) continue;
    auto it = rank_fd_.find(rank);
    if (it != rank_fd_.end()) send(it->second, request.data(), request.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  // Remembered only when the shims carry the stop; with no rank known the
  // engine does, and a rank must not hear the same stop twice.
  if (known > 0) stop_signal_ = sig;
  return known > 0;
}

}  // namespace gpulaunch
