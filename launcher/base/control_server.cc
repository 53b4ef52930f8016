#include "launcher/base/control_server.h"
#include "launcher/base/control_server_peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "common/strings.h"
#include "launcher/base/fd_io.h"
#include "launcher/base/host_names.h"
#include "launcher/base/open_file_limit.h"
#include "launcher/base/process_tree.h"

namespace gpulaunch {
namespace {

constexpr int kAcceptPauseMs = 100;          // after EMFILE and the like
constexpr int kAcceptsPerPass = 64;

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
    // "@NAME": Linux's abstract namespace (no file; SO_PEERCRED still
    // refuses every other user at accept, before it takes a slot).
    const bool abstract = o_.unix_path[0] == '@';
    std::memcpy(addr.sun_path, o_.unix_path.c_str(), o_.unix_path.size() + 1);
    if (abstract) addr.sun_path[0] = '\0';
    const socklen_t addr_len = abstract ? static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + o_.unix_path.size())
                                        : static_cast<socklen_t>(sizeof addr);
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0 ||
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
  if (!o_.unix_path.empty() && o_.unix_path[0] != '@') unlink(o_.unix_path.c_str());
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
  // Always accepting, but after EMFILE and the like (Accept makes room by
  // closing the oldest stranger); a pause leaves the listening socket out of
  // the poll: it stays readable, and polling it would spin.
  const bool accepting = now_before >= accept_paused_until_;
  std::vector<pollfd> fds = {{accepting ? listen_fd_ : -1, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  for (const auto& p : peers_) fds.push_back({p->fd, POLLIN, 0});
  const int ready = poll(fds.data(), fds.size(), timeout_ms);
  const auto now = ControlClock::now();
  pass_time_ = now;  // what this pass hears is dated alike (RankToBlame breaks the tie)
  std::vector<std::unique_ptr<Peer>> kept;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& peer = *peers_[i];
    const bool readable = ready > 0 && (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR));
    const bool late = !peer.authenticated && now >= peer.deadline;
    if (!late && (!readable || ReadPeer(peer))) {
      kept.push_back(std::move(peers_[i]));
      continue;
    }
    if (late || !peer.authenticated) NoteRejected(peer.address);
    DropPeer(peer);
  }
  peers_ = std::move(kept);
  if (now >= accept_paused_until_) accept_paused_until_ = {};
  if (ready > 0 && (fds[0].revents & POLLIN)) Accept();
}

void ControlServer::Accept() {
  const size_t most = static_cast<size_t>(std::max(o_.world, 1) + kControlConnectionSlack);
  // Bounded per pass, so that a flood cannot keep the loop from reading the
  // ranks' connections.
  for (int taken = 0; taken < kAcceptsPerPass; ++taken) {
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&from), &from_len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_until_ = ControlClock::now() + std::chrono::milliseconds(kAcceptPauseMs);
      }
      return;
    }
    const bool unix_socket = !o_.unix_path.empty();
    const std::string address = unix_socket ? "another user" : AddressText(reinterpret_cast<sockaddr*>(&from));
    if (unix_socket && !SameUser(fd)) {
      close(fd);
      NoteRejected(address);
      continue;
    }
    // A full house: the stranger that has waited longest without proving
    // itself goes, so that strangers can never keep a rank out (a rank
    // answers the greeting at once; a stranger that never does is always
    // the oldest soon).
    if (peers_.size() >= most) EvictOldestStranger();
    if (!unix_socket) ConfigureControlSocket(fd);
    auto peer = std::make_unique<Peer>();
    peer->fd = fd;
    peer->address = address;
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

void ControlServer::EvictOldestStranger() {
  const auto oldest = std::find_if(peers_.begin(), peers_.end(), [](const auto& p) { return !p->authenticated; });
  if (oldest == peers_.end()) return;
  NoteRejected((*oldest)->address);
  DropPeer(**oldest);
  peers_.erase(oldest);
}

void ControlServer::NoteRejected(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_;
  if (rejected_from_.count(address) || rejected_from_.size() < kRejectedAddressesKept) ++rejected_from_[address];
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
      it->second.ended_at = pass_time_ == ControlClock::time_point{} ? ControlClock::now() : pass_time_;
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
  return peer.buffer.size() <= (peer.authenticated ? kMaxControlLineBytes : kMaxHandshakeBytes);
}

// `auth <rank> <client nonce> <proof>`: the rank is the job's, not yet
// claimed by another connection, and the proof is right.
}  // namespace gpulaunch
