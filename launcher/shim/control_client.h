// The shim's end of the control connection (control_protocol.h): connects to
// gpulaunch once, proves it belongs to the job and checks that gpulaunch
// does too (control_auth.h), sends tagged lines, and reads gpulaunch's
// tagged requests. Every failure
// only costs gpulaunch its bookkeeping, never the rank: a send that cannot
// complete within a few seconds is dropped and the connection closed.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/base/control_auth.h"
#include "launcher/base/control_protocol.h"

namespace gpulaunch {

// What the shim proves itself with: the job, its rank, the job's secret.
struct ControlCredentials {
  std::string job_id;
  int rank = -1;
  ControlKey secret{};
};

// How long the handshake may take (gpulaunch answers `hello` at accept,
// which a launching host busy accepting thousands of ranks may delay).
inline constexpr int kControlHandshakeTimeoutMs = 30000;

class ControlClient {
 public:
  ControlClient() = default;
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // `address` is "ADDR:PORT" from the slot table, numeric (IPv4, or IPv6 in
  // brackets): the shim does no name lookup; or "unix:PATH", gpulaunch's
  // socket in its private job directory. False (and a closed client) when it
  // is neither or cannot be reached within 3 s.
  bool Connect(const std::string& address);
  // The handshake on a connected client. An error (and a closed client) when
  // gpulaunch does not answer in time, refuses the proof, or cannot prove
  // that it knows the job's secret: then it is not this job's gpulaunch.
  Status Authenticate(const ControlCredentials& credentials, int timeout_ms = kControlHandshakeTimeoutMs);
  // Connected and authenticated: only then does anything get sent.
  bool connected() const { return fd_ >= 0 && authenticated_; }
  int fd() const { return fd_; }  // poll it for requests
  const std::string& address() const { return address_; }  // the last one connected to, for messages

  bool Send(const ControlMessage& m, const std::string& payload = "");
  // Reads what gpulaunch sent and returns the complete lines; closes the
  // client when gpulaunch went away.
  std::vector<std::string> ReadRequests();
  // Asks gpulaunch for this rank's row of the plan (`slot`, with this host's
  // fingerprint when not empty) and waits up to timeout_ms for the answer:
  // the row text (kHostChangedRow when a host changed since the plan), or an
  // error saying what failed.
  StatusOr<std::string> FetchSlotRow(int rank, const std::string& plan_hash, int timeout_ms,
                                     const std::string& fingerprint = "");
  void Close();
  // The connection's tags, for the check-in the job process seals itself
  // (job_start.h).
  ControlSession& session() { return session_; }

 private:
  bool WriteAll(const std::string& bytes);
  // The next complete line, waiting up to the deadline; nullopt on a timeout
  // or a closed connection.
  std::optional<std::string> NextLine(std::chrono::steady_clock::time_point deadline, size_t max_bytes);
  int fd_ = -1;
  bool authenticated_ = false;
  ControlSession session_;
  std::string address_;
  std::string buffer_;
};

}  // namespace gpulaunch
