#include "launcher/check/linkcheck/link_socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "launcher/base/fd_io.h"

namespace gpulaunch {

bool SendBlob(int fd, const std::string& blob) {
  const uint32_t n = static_cast<uint32_t>(blob.size());
  return SendAll(fd, &n, sizeof n) && SendAll(fd, blob.data(), blob.size());
}

StatusOr<std::string> RecvBlob(int fd, const std::string& what) {
  uint32_t n = 0;
  if (!ReadExact(fd, &n, sizeof n, 30000) || n > (1u << 20)) return Unavailable("the peer did not send its " + what);
  std::string blob(n, '\0');
  if (!ReadExact(fd, blob.data(), n, 30000)) return Unavailable("the peer did not send its " + what);
  return blob;
}

int ConnectWithRetry(const std::string& host, int port, int timeout_ms, std::string& error) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
    if (rc != 0) {
      error = "cannot resolve " + host + ": " + gai_strerror(rc);
      return -1;
    }
    int fd = socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool connected = fd >= 0 && connect(fd, list->ai_addr, list->ai_addrlen) == 0;
    freeaddrinfo(list);
    if (connected) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    error = "cannot connect to " + host + ":" + std::to_string(port) + ": " + std::strerror(errno) +
            " (is 'gpulaunch linkcheck --server' running there?)";
    if (fd >= 0) close(fd);
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace gpulaunch
