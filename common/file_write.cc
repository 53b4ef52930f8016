#include "common/file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

namespace gpulaunch {

mode_t CurrentUmask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8) & 0777);
  }
  const mode_t mask = umask(022);  // not thread-safe; only where /proc lacks the line
  umask(mask);
  return mask;
}

Status WriteFileAtomically(const std::string& path, const std::string& bytes, mode_t mode) {
  return WriteFileAtomicallyAt(AT_FDCWD, path, path, bytes, mode);
}

Status WriteFileAtomicallyAt(int dir_fd, const std::string& name, const std::string& shown, const std::string& bytes,
                             mode_t mode) {
  mode &= ~CurrentUmask();
  std::random_device rd;  // a private temporary name, even for concurrent writers of one path
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    tmp = name + ".tmp." + std::to_string(rd()) + std::to_string(rd());
    fd = openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return Unavailable("cannot create a temporary file beside " + shown + " to write it: " + std::strerror(errno));
  size_t done = 0;
  bool ok = true;
  while (ok && done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  const int write_errno = errno;
  ok = ok && fchmod(fd, mode) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok) {
    unlinkat(dir_fd, tmp.c_str(), 0);
    return Unavailable("cannot write " + shown + ": " + std::strerror(write_errno) + " (disk full or not writable?)");
  }
  if (renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlinkat(dir_fd, tmp.c_str(), 0);
    return Unavailable("cannot rename a temporary file to " + shown + ": " + why);
  }
  return Status::Ok();
}

}  // namespace gpulaunch
