// linkcheck's TCP control socket: how the client and server exchange UCP
// worker addresses, the test plan and small messages before and around the
// measurements. Blobs are a 4-byte length and the bytes; every wait has a
// deadline, so a peer that vanishes is an error, not a hang.
#pragma once

#include <unistd.h>

#include <string>

#include "common/status.h"

namespace gpulaunch {

// Closes the descriptor it holds when it goes.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool SendBlob(int fd, const std::string& blob);
// At most 1 MiB; `what` names it in the error.
StatusOr<std::string> RecvBlob(int fd, const std::string& what);

// A TCP connection (TCP_NODELAY) to host:port, retried every 100 ms until
// timeout_ms; -1 with `error` saying why.
int ConnectWithRetry(const std::string& host, int port, int timeout_ms, std::string& error);

}  // namespace gpulaunch
