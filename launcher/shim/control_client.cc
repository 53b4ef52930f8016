#include "launcher/shim/control_client.h"

#include "launcher/base/fd_io.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr int kConnectTimeoutMs = 3000;
constexpr int kSendTimeoutMs = 5000;

// "ADDR:PORT" with a numeric IPv4 address, or "[ADDR]:PORT" with IPv6: what
// gpulaunch advertises (a local interface's address), so no name lookup.
bool ParseNumericAddress(const std::string& address, sockaddr_storage& out, socklen_t& len) {
  if (address.rfind("unix:", 0) == 0) {
    auto* un = reinterpret_cast<sockaddr_un*>(&out);
    const std::string path = address.substr(5);
    if (path.empty() || (path[0] != '/' && path[0] != '@') || path.size() >= sizeof un->sun_path) return false;
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, path.c_str(), path.size() + 1);
    len = sizeof(sockaddr_un);
    if (path[0] == '@') {  // Linux's abstract namespace (control_server.h)
      un->sun_path[0] = '\0';
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
    }
    return true;
  }
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 >= address.size()) return false;
  std::string host = address.substr(0, colon);
  char* end = nullptr;
  const long port = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535) return false;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

}  // namespace

ControlClient::~ControlClient() { Close(); }

void ControlClient::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  authenticated_ = false;
  buffer_.clear();
}

bool ControlClient::Connect(const std::string& address) {
  Close();
  sockaddr_storage peer{};
  socklen_t peer_len = 0;
  if (!ParseNumericAddress(address, peer, peer_len)) return false;
  const int fd = socket(peer.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  bool ok = false;
  if (fd >= 0 && (connect(fd, reinterpret_cast<const sockaddr*>(&peer), peer_len) == 0 || errno == EINPROGRESS)) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = poll(&p, 1, kConnectTimeoutMs) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  if (!ok) {
    if (fd >= 0) close(fd);
    return false;
  }
  if (peer.ss_family != AF_UNIX) ConfigureControlSocket(fd);
  fd_ = fd;
  address_ = address;
  return true;
}

std::optional<std::string> ControlClient::NextLine(std::chrono::steady_clock::time_point deadline, size_t max_bytes) {
  while (fd_ >= 0) {
    if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (buffer_.size() > max_bytes) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n > 0) {
      buffer_.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      break;
    }
  }
  Close();
  return std::nullopt;
}

Status ControlClient::Authenticate(const ControlCredentials& c, int timeout_ms) {
  if (fd_ < 0) return Unavailable("not connected to gpulaunch");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const std::string where = "gpulaunch at " + address_;
  const std::optional<std::string> hello = NextLine(deadline, 256);
  const std::string greeting = hello.value_or("");
  Words in(greeting);  // views into `greeting`
  const auto word = in.Next(), version = in.Next(), server_nonce = in.Next();
  if (!hello || word != "hello" || !server_nonce || server_nonce->size() != kControlNonceHexChars) {
    Close();
    return Unavailable(hello ? where + " does not speak the control protocol" : "no greeting from " + where + " within " +
                                   std::to_string(timeout_ms / 1000) + " s");
  }
  if (version != kControlProtocolVersion) {
    Close();
    return FailedPrecondition(where + " speaks control protocol " + std::string(*version) + ", this shim " +
                              kControlProtocolVersion + ": install the same gpulaunch on every host");
  }
  const std::string client_nonce = NewControlNonceHex();
  const std::string auth = "auth " + std::to_string(c.rank) + " " + client_nonce + " " +
                           ControlProof(c.secret, ControlSide::kClient, c.job_id, c.rank, *server_nonce, client_nonce) +
                           "\n";
  if (!SendAll(fd_, auth.data(), auth.size(), kSendTimeoutMs)) {
    Close();
    return Unavailable(where + " closed the connection before the handshake");
  }
  const std::optional<std::string> welcome = NextLine(deadline, 256);
  if (!welcome) {
    return Unavailable(where + " refused this rank's proof (another job's gpulaunch, or rank " + std::to_string(c.rank) +
                       " already connected)");
  }
  const std::string want = ControlProof(c.secret, ControlSide::kServer, c.job_id, c.rank, *server_nonce, client_nonce);
  if (welcome->rfind("welcome ", 0) != 0 || !ControlProofsEqual(welcome->substr(8), want)) {
    Close();
    return FailedPrecondition("the server at " + address_ +
                            " could not prove that it is this job's gpulaunch (it does not know the job's secret)");
  }
  session_ = ControlSession(c.secret, ControlSide::kClient, c.job_id, c.rank, *server_nonce, client_nonce);
  authenticated_ = true;
  return Status::Ok();
}

bool ControlClient::WriteAll(const std::string& bytes) {
  if (fd_ >= 0 && !SendAll(fd_, bytes.data(), bytes.size(), kSendTimeoutMs)) Close();
  return fd_ >= 0;
}

bool ControlClient::Send(const ControlMessage& m, const std::string& payload) {
  if (!connected()) return false;
  std::string line = FormatControlLine(m);
  if (line.empty()) return false;
  line.pop_back();  // the newline: the tag goes before it
  return WriteAll(session_.Seal(line, payload) + payload);
}

StatusOr<std::string> ControlClient::FetchSlotRow(int rank, const std::string& plan_hash, int timeout_ms,
                                                  const std::string& fingerprint) {
  ControlMessage ask;
  ask.kind = ControlMessage::Kind::kSlot;
  ask.rank = rank;
  ask.text = fingerprint;
  if (!Send(ask)) return Unavailable("gpulaunch's control connection closed before the rank's slot was asked");
  const std::string prefix = "slot " + std::to_string(rank) + " ";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // The answer comes first on a fresh connection; nothing else is asked before it.
  if (const std::optional<std::string> sealed = NextLine(deadline, 64 * 1024)) {
    const std::optional<std::string_view> opened = session_.Open(*sealed);
    if (!opened) {
      Close();
      return FailedPrecondition("gpulaunch's answer about the rank's slot failed its tag: something between this host "
                              "and gpulaunch altered it");
    }
    const std::string line(*opened);
    if (line.rfind(prefix, 0) != 0) return Internal("gpulaunch sent '" + Excerpt(line) + "' instead of the rank's slot");
    const std::string rest = line.substr(prefix.size());
    const size_t space = rest.find(' ');
    if (space == std::string::npos) return Internal("gpulaunch sent a malformed slot answer");
    if (rest.substr(0, space) != plan_hash) {
      return FailedPrecondition("gpulaunch serves plan " + rest.substr(0, space) + " but this rank was started for plan " +
                                plan_hash);
    }
    const std::string row = rest.substr(space + 1);
    if (row == "-") return FailedPrecondition("the plan has no rank " + std::to_string(rank));
    return row;
  }
  return Unavailable("no answer from gpulaunch about the rank's slot within " + std::to_string(timeout_ms / 1000) +
                     " s: gpulaunch stopped answering, or it still waits for the first rank of a host it planned "
                     "from its cache to confirm that host (docs/launch.md, \"Cached remote topologies\")");
}

std::vector<std::string> ControlClient::ReadRequests() {
  std::vector<std::string> lines;
  char buf[512];
  const ssize_t n = fd_ >= 0 ? read(fd_, buf, sizeof buf) : 0;
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    Close();
    return lines;
  }
  if (n > 0) buffer_.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
    const std::optional<std::string_view> opened = session_.Open(std::string_view(buffer_).substr(0, nl));
    if (!opened) {  // not gpulaunch's: nothing more on this connection is believed
      Close();
      return lines;
    }
    lines.emplace_back(*opened);
    buffer_.erase(0, nl + 1);
  }
  if (buffer_.size() > 4096) Close();
  return lines;
}

}  // namespace gpulaunch
