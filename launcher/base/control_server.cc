#include "launcher/base/control_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/strings.h"
#include "launcher/base/fd_io.h"
#include "launcher/base/open_file_limit.h"
#include "launcher/base/process_tree.h"

namespace gpulaunch {
namespace {

constexpr size_t kMaxLineBytes = 64 * 1024;  // a peer that sends more without a newline is dropped
constexpr size_t kMaxHandshakeBytes = 512;   // `auth` is about 140 bytes
constexpr size_t kTailLines = 20;
constexpr int kAcceptPauseMs = 100;          // after EMFILE and the like
constexpr int kSendWaitMs = 1000;

// Whether an accepted TCP connection comes from this host: its source
// address is the address it reached (no name lookup).
bool FromThisHost(int fd) {
  sockaddr_storage self{}, peer{};
  socklen_t self_len = sizeof self, peer_len = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 || self.ss_family != peer.ss_family) {
    return false;
  }
  if (self.ss_family == AF_INET) {
    return reinterpret_cast<sockaddr_in&>(self).sin_addr.s_addr == reinterpret_cast<sockaddr_in&>(peer).sin_addr.s_addr;
  }
  return false;
}

bool SameUser(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid();
}

}  // namespace

struct ControlServer::Peer {
  int fd = -1;
  bool local = false;             // connected from this host
  bool authenticated = false;
  std::string server_nonce;
  ControlClock::time_point deadline{};  // to authenticate by
  int rank = -1;                  // once authenticated
  ControlSession session;
  std::string buffer;             // bytes not yet parsed
  std::string stacks_header;      // a `stacks` line whose payload is still arriving
  std::string payload;
  size_t payload_left = 0;
  bool stacks_wanted = false;
  bool slot_asked = false, checked_in = false, refused = false, exit_seen = false;
};

ControlServer::ControlServer() = default;

ControlServer::~ControlServer() {
  Stop();
  for (const auto& [rank, fd] : pidfds_) close(fd);
  pidfds_.clear();
}

Status ControlServer::Start(ControlServerOptions options) {
  o_ = std::move(options);
  if (o_.ancestor == 0) o_.ancestor = getpid();
  if (o_.world > 0) {
    GL_RETURN_IF_ERROR(RaiseOpenFileLimit(static_cast<rlim_t>(o_.world) + kControlServerSpareFiles,
                                          "the job has " + std::to_string(o_.world) +
                                              " ranks and gpulaunch holds one connection per rank: it needs")
                           .status());
  }
  for (const std::string& host : o_.check.host_of_rank)
    if (o_.check.expected.count(host)) unverified_.insert(host);
  if (!o_.unix_path.empty()) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (o_.unix_path.size() >= sizeof addr.sun_path) {
      return Internal("the control socket path " + o_.unix_path + " is too long; set TMPDIR to a shorter folder");
    }
    std::memcpy(addr.sun_path, o_.unix_path.c_str(), o_.unix_path.size() + 1);
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listen_fd_, 4096) != 0) {
      return Internal("cannot listen for rank check-ins on " + o_.unix_path + ": " + std::strerror(errno));
    }
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    if (inet_pton(AF_INET, o_.bind_addr.c_str(), &addr.sin_addr) != 1 || addr.sin_addr.s_addr == INADDR_ANY) {
      return Internal("bad control address '" + o_.bind_addr + "': a numeric address of this host, never 0.0.0.0");
    }
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listen_fd_, 4096) != 0) {
      return Internal("cannot listen for rank check-ins on " + o_.bind_addr + ": " + std::strerror(errno));
    }
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return Internal("cannot create the check-in wake-up pipe");
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

std::string ControlServer::address() const {
  return o_.unix_path.empty() ? o_.bind_addr + ":" + std::to_string(port_) : "unix:" + o_.unix_path;
}

void ControlServer::Stop() {
  if (thread_.joinable()) {
    Sync();  // what the last ranks sent before they ended belongs in the summary
    stop_ = true;
    [[maybe_unused]] auto n = write(wake_[1], "x", 1);
    thread_.join();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    rank_peer_.clear();
    deferred_slots_.clear();
  }
  for (auto& p : peers_) close(p->fd);
  peers_.clear();
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  if (!o_.unix_path.empty()) unlink(o_.unix_path.c_str());
}

void ControlServer::Serve() {
  while (!stop_) {
    pollfd wake{wake_[0], POLLIN, 0};
    PollOnce(NextPollTimeoutMs());
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

int ControlServer::NextPollTimeoutMs() const {
  ControlClock::time_point next = ControlClock::time_point::max();
  for (const auto& p : peers_)
    if (!p->authenticated) next = std::min(next, p->deadline);
  if (accept_paused_until_ != ControlClock::time_point{}) next = std::min(next, accept_paused_until_);
  if (next == ControlClock::time_point::max()) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - ControlClock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left + 1, 0, 60000));
}

void ControlServer::PollOnce(int timeout_ms) {
  const auto now_before = ControlClock::now();
  const bool room = peers_.size() < static_cast<size_t>(std::max(o_.world, 1) + kControlConnectionSlack);
  const bool accepting = room && now_before >= accept_paused_until_;
  // A full house or a pause leaves the listening socket out of the poll: it
  // stays readable, and polling it would spin.
  std::vector<pollfd> fds = {{accepting ? listen_fd_ : -1, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  for (const auto& p : peers_) fds.push_back({p->fd, POLLIN, 0});
  const int ready = poll(fds.data(), fds.size(), timeout_ms);
  const auto now = ControlClock::now();
  std::vector<std::unique_ptr<Peer>> kept;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& peer = *peers_[i];
    const bool readable = ready > 0 && (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR));
    const bool late = !peer.authenticated && now >= peer.deadline;
    if (!late && (!readable || ReadPeer(peer))) {
      kept.push_back(std::move(peers_[i]));
      continue;
    }
    if (late || !peer.authenticated) {
      std::lock_guard<std::mutex> lock(mu_);
      ++rejected_;
    }
    DropPeer(peer);
  }
  peers_ = std::move(kept);
  if (now >= accept_paused_until_) accept_paused_until_ = {};
  if (ready > 0 && (fds[0].revents & POLLIN)) Accept();
}

void ControlServer::Accept() {
  const size_t most = static_cast<size_t>(std::max(o_.world, 1) + kControlConnectionSlack);
  while (peers_.size() < most) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_until_ = ControlClock::now() + std::chrono::milliseconds(kAcceptPauseMs);
      }
      return;
    }
    const bool unix_socket = !o_.unix_path.empty();
    if (unix_socket && !SameUser(fd)) {
      close(fd);
      std::lock_guard<std::mutex> lock(mu_);
      ++rejected_;
      continue;
    }
    if (!unix_socket) ConfigureControlSocket(fd);
    auto peer = std::make_unique<Peer>();
    peer->fd = fd;
    peer->local = unix_socket || FromThisHost(fd);
    peer->server_nonce = NewControlNonceHex();
    peer->deadline = ControlClock::now() + std::chrono::milliseconds(o_.auth_timeout_ms);
    const std::string hello = std::string("hello ") + kControlProtocolVersion + " " + peer->server_nonce + "\n";
    if (!SendAll(fd, hello.data(), hello.size())) {
      close(fd);
      continue;
    }
    peers_.push_back(std::move(peer));
  }
}

void ControlServer::DropPeer(Peer& peer) {
  std::lock_guard<std::mutex> lock(mu_);
  // A held slot request stays counted as held: it reached gpulaunch and never got its row.
  std::erase(deferred_slots_, &peer);
  if (peer.authenticated) {
    if (auto it = rank_peer_.find(peer.rank); it != rank_peer_.end() && it->second == &peer) rank_peer_.erase(it);
    stacks_pending_.erase(peer.rank);
    auto it = records_.find(peer.rank);
    if (it != records_.end() && !peer.exit_seen && it->second.refusal.empty()) {
      it->second.lost = true;
      it->second.ended_at = ControlClock::now();
    }
  }
  close(peer.fd);
  peer.fd = -1;
  changed_.notify_all();
}

bool ControlServer::ReadPeer(Peer& peer) {
  char buf[16384];
  const ssize_t n = read(peer.fd, buf, sizeof buf);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  if (n == 0) return false;
  peer.buffer.append(buf, static_cast<size_t>(n));
  size_t pos = 0;
  bool ok = true;
  while (ok && pos < peer.buffer.size()) {
    if (peer.payload_left > 0) {
      const size_t take = std::min(peer.payload_left, peer.buffer.size() - pos);
      peer.payload.append(peer.buffer, pos, take);
      pos += take;
      peer.payload_left -= take;
      if (peer.payload_left > 0) continue;
      ok = HandleLine(peer, peer.stacks_header);
      continue;
    }
    const size_t nl = peer.buffer.find('\n', pos);
    if (nl == std::string::npos) break;
    const std::string line = peer.buffer.substr(pos, nl - pos);
    pos = nl + 1;
    ok = peer.authenticated ? HandleLine(peer, line) : HandleHello(peer, line);
  }
  peer.buffer.erase(0, pos);
  if (!ok) {
    std::lock_guard<std::mutex> lock(mu_);
    ++rejected_;
    return false;
  }
  return peer.buffer.size() <= (peer.authenticated ? kMaxLineBytes : kMaxHandshakeBytes);
}

// `auth <rank> <client nonce> <proof>`: the rank is the job's, not yet
// claimed by another connection, and the proof is right.
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
  return SendAll(peer.fd, welcome.data(), welcome.size(), kSendWaitMs);
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
  const auto now = ControlClock::now();
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
      if (r.stderr_tail.size() > kTailLines) r.stderr_tail.erase(r.stderr_tail.begin());
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
  if (!SendAll(peer.fd, sealed.data(), sealed.size(), kSendWaitMs)) shutdown(peer.fd, SHUT_RDWR);
}

}  // namespace gpulaunch
