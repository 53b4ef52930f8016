// The control server's view of one connection, and the bounds both halves
// of the server apply: control_server.cc (the socket loop: accept, read,
// drop) and control_server_messages.cc (the handshake and every message).
// Internal to launcher/base.
#pragma once

#include <cstddef>
#include <string>

#include "launcher/base/control_server.h"

namespace gpulaunch {

inline constexpr size_t kMaxControlLineBytes = 64 * 1024;  // a peer that sends more without a newline is dropped
inline constexpr size_t kMaxHandshakeBytes = 512;          // `auth` is about 140 bytes
inline constexpr size_t kStderrTailLines = 20;
inline constexpr int kControlSendWaitMs = 1000;
inline constexpr size_t kRejectedAddressesKept = 16;  // distinct addresses named in the notes

struct ControlServer::Peer {
  int fd = -1;
  std::string address;            // where it connected from ("another user" on a Unix socket)
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

}  // namespace gpulaunch
