// The shim's end of the control connection (control_protocol.h): connects to
// gpulaunch once, sends lines, and reads gpulaunch's requests. Every failure
// only costs gpulaunch its bookkeeping, never the rank: a send that cannot
// complete within a few seconds is dropped and the connection closed.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/base/control_protocol.h"

namespace gpulaunch {

class ControlClient {
 public:
  ControlClient() = default;
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // `address` is "ADDR:PORT" from the slot table, numeric (IPv4, or IPv6 in
  // brackets): the shim does no name lookup. False (and a closed client)
  // when it is not numeric or cannot be reached within 3 s.
  bool Connect(const std::string& address);
  bool connected() const { return fd_ >= 0; }
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

 private:
  bool WriteAll(const std::string& bytes);
  int fd_ = -1;
  std::string address_;
  std::string buffer_;
};

}  // namespace gpulaunch
