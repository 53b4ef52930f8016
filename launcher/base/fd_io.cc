#include "launcher/base/fd_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace gpulaunch {
namespace {

template <typename Op>
bool Loop(const void* data, size_t n, Op op) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = op(p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

bool WriteAll(int fd, const void* data, size_t n) {
  return Loop(data, n, [fd](const char* p, size_t k) { return write(fd, p, k); });
}

bool SendAll(int fd, const void* data, size_t n) {
  return Loop(data, n, [fd](const char* p, size_t k) { return send(fd, p, k, MSG_NOSIGNAL); });
}

bool ReadExact(int fd, void* data, size_t n, int timeout_ms) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace gpulaunch
