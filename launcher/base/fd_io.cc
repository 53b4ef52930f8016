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

bool SendAll(int fd, const void* data, size_t n, int writable_wait_ms) {
  return Loop(data, n, [fd, writable_wait_ms](const char* p, size_t k) {
    for (;;) {
      const ssize_t w = send(fd, p, k, MSG_NOSIGNAL);
      if (w >= 0 || errno != EAGAIN || writable_wait_ms <= 0) return w;
      pollfd room{fd, POLLOUT, 0};
      if (poll(&room, 1, writable_wait_ms) != 1) {
        errno = EAGAIN;  // a timeout sets none
        return w;
      }
    }
  });
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
