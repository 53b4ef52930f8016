// Test helpers for the control channel (control_auth.h): a server's options
// on loopback with a fixed test secret, a shim client that joins as a rank,
// and a raw peer that speaks bytes as an attacker would.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "launcher/base/control_server.h"
#include "launcher/shim/control_client.h"

namespace gpulaunch::testing_control {

inline constexpr const char* kTestJob = "gl-test";

inline ControlKey TestKey() { return *DecodeControlSecret(std::string(64, 'a')); }

inline ControlServerOptions Options(int world, std::vector<std::string> rows = {}, HostCheck check = {}) {
  ControlServerOptions o;
  o.bind_addr = "127.0.0.1";
  o.job_id = kTestJob;
  o.secret = TestKey();
  o.expected_hash = "H";
  o.world = world;
  o.slot_rows = std::move(rows);
  o.check = std::move(check);
  return o;
}

// Connects to the server and proves itself as `rank`, as a shim does.
inline bool Join(ControlClient& client, const ControlServer& server, int rank, const ControlKey& key = TestKey()) {
  return client.Connect(server.address()) && client.Authenticate({kTestJob, rank, key}, 10000).ok();
}

// A plain TCP connection to 127.0.0.1:port that sends and reads raw bytes.
class RawPeer {
 public:
  explicit RawPeer(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawPeer() {
    if (fd_ >= 0) close(fd_);
  }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;
  bool ok() const { return fd_ >= 0; }
  bool Send(const std::string& bytes) { return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()); }
  // The next line (without its newline), "" when none came within `ms`, or
  // "<closed>" once the server closed the connection.
  std::string Line(int ms = 5000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) != 1) return "";
      char buf[4096];
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) return "<closed>";
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }
  // The server nonce from the greeting ("hello v2 NONCE").
  std::string Nonce() {
    const std::string hello = Line();
    return hello.size() > 9 ? hello.substr(9) : "";
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace gpulaunch::testing_control
