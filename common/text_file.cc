// The bounded readers of strings.h: ReadTextFile, ReadFileOrEmpty and
// ReadTextLines, bounded in size (kMaxTextFileBytes), in content (a NUL
// byte ends the read) and in time (kInputSilenceMs of silence).
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "common/strings.h"

namespace gpulaunch {

namespace {

// A file descriptor opened for reading, closed when it goes. Opened
// non-blocking, so that a FIFO without a writer cannot hold the open, and
// read with a bound in time as well as size: a FIFO or a device that keeps
// silent for kInputSilenceMs fails the read (errno ETIMEDOUT); a FIFO whose
// writer has not opened it yet is waited for as long.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)) {
    struct stat about {};
    fifo_ = fd_ >= 0 && fstat(fd_, &about) == 0 && S_ISFIFO(about.st_mode);
  }
  ~ReadOnlyFile() {
    if (fd_ >= 0) close(fd_);
  }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  bool is_open() const { return fd_ >= 0; }

  // The size of a regular file; 0 for anything else (a pipe, /proc).
  uint64_t RegularFileSize() const {
    struct stat about {};
    return fstat(fd_, &about) == 0 && S_ISREG(about.st_mode) ? static_cast<uint64_t>(about.st_size) : 0;
  }

  // Up to `size` bytes into `buffer`, retried when a signal interrupts:
  // 0 at the end of the file, -1 on an error (ETIMEDOUT: silent for
  // kInputSilenceMs, or a FIFO that no writer opened within it).
  ssize_t Read(char* buffer, size_t size) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kInputSilenceMs);
    for (;;) {
      const ssize_t got = read(fd_, buffer, size);
      if (got > 0) {
        seen_data_ = true;
        return got;
      }
      if (got < 0 && errno == EINTR) continue;
      // End of file. A FIFO reads as ended before its writer opens it: wait
      // for one, within the same bound.
      if (got == 0 && !(fifo_ && !seen_data_)) return 0;
      if (got < 0 && errno != EAGAIN) return -1;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        errno = ETIMEDOUT;
        return -1;
      }
      if (got == 0) {
        usleep(20 * 1000);  // no writer yet: poll would report the hang-up at once
        continue;
      }
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return -1;
    }
  }

  // Everything from here to the end, or up to `limit` bytes and one more
  // (so that the caller sees it was over); false when a read failed.
  bool ReadRest(std::string& out, uint64_t limit = kMaxTextFileBytes) {
    char block[1 << 16];
    while (out.size() <= limit) {
      const ssize_t got = Read(block, sizeof block);
      if (got < 0) return false;
      if (got == 0) return true;
      out.append(block, static_cast<size_t>(got));
    }
    return true;
  }

 private:
  int fd_;
  bool fifo_ = false;
  bool seen_data_ = false;
};

// Checks that `path` names a readable file gpulaunch may read whole (without
// std::filesystem, which would bring the stream library into the shim):
// NotFound when it cannot be opened, InvalidArgument for a directory or a
// file over kMaxTextFileBytes. `file` is left open on it.
Status CheckTextFile(const std::string& path, const std::string& what, const ReadOnlyFile& file) {
  struct stat about {};
  if (stat(path.c_str(), &about) == 0 && S_ISDIR(about.st_mode)) {
    return InvalidArgument(what + " '" + path + "' is a directory; give the file in it");
  }
  if (!file.is_open()) return NotFound("cannot read " + what + " '" + path + "': check the path and its permissions");
  const uint64_t size = file.RegularFileSize();
  if (size > kMaxTextFileBytes) {
    return InvalidArgument(what + " '" + path + "' is " + std::to_string(size) + " bytes, over the " +
                           std::to_string(kMaxTextFileBytes) + " gpulaunch reads: is it the right file?");
  }
  return Status::Ok();
}

}  // namespace

namespace {

// Why a read stopped early: more than kMaxTextFileBytes, or a NUL byte on
// line `line`.
Status EndlessInput(const std::string& path, const std::string& what) {
  return InvalidArgument(what + " '" + path + "' holds more than the " + std::to_string(kMaxTextFileBytes) +
                         " bytes gpulaunch reads (a pipe or a device that never ends?): is it the right file?");
}
Status SilentInput(const std::string& path, const std::string& what, size_t line) {
  return InvalidArgument(path + ":" + std::to_string(line) + ": nothing arrived for " +
                         std::to_string(kInputSilenceMs / 1000) + " s (a FIFO or a pipe without a writer, or a " +
                         "device that does not answer?): give gpulaunch a " + what + " it can read to the end");
}
Status BinaryInput(const std::string& path, const std::string& what, size_t line) {
  return InvalidArgument(path + ":" + std::to_string(line) + ": a NUL byte, which no " + what +
                         " holds: is it a binary file or a device?");
}

}  // namespace

StatusOr<std::string> ReadTextFile(const std::string& path, const std::string& what) {
  ReadOnlyFile file(path);
  GL_RETURN_IF_ERROR(CheckTextFile(path, what, file));
  std::string text;
  char block[1 << 16];
  for (;;) {  // block by block, so that a NUL byte or an endless input stops the read early
    const ssize_t got = file.Read(block, sizeof block);
    if (got < 0 && errno == ETIMEDOUT) {
      return SilentInput(path, what, 1 + static_cast<size_t>(std::count(text.begin(), text.end(), '\n')));
    }
    if (got < 0) return NotFound("cannot read " + what + " '" + path + "': " + std::strerror(errno));
    if (got == 0) break;
    const std::string_view chunk(block, static_cast<size_t>(got));
    if (const size_t nul = chunk.find('\0'); nul != std::string_view::npos) {
      const auto lines_before = std::count(text.begin(), text.end(), '\n') +
                                std::count(chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(nul), '\n');
      return BinaryInput(path, what, 1 + static_cast<size_t>(lines_before));
    }
    if (text.size() + chunk.size() > kMaxTextFileBytes) return EndlessInput(path, what);
    text.append(chunk);
  }
  return text;
}

std::string ReadFileOrEmpty(const std::string& path) {
  ReadOnlyFile file(path);
  std::string text;
  if (!file.is_open() || !file.ReadRest(text)) return "";
  return text;
}

StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path, const std::string& what,
                                                 size_t max_line_bytes) {
  ReadOnlyFile file(path);
  GL_RETURN_IF_ERROR(CheckTextFile(path, what, file));
  std::vector<std::string> lines(1);
  std::vector<char> block(1 << 20);
  uint64_t total = 0;
  for (;;) {
    const ssize_t read = file.Read(block.data(), block.size());
    if (read < 0 && errno == ETIMEDOUT) return SilentInput(path, what, lines.size());
    if (read < 0) return NotFound("cannot read " + what + " '" + path + "': " + std::strerror(errno));
    if (read == 0) break;
    const size_t got = static_cast<size_t>(read);
    total += got;
    if (total > kMaxTextFileBytes) return EndlessInput(path, what);
    for (size_t i = 0; i < got; ++i) {
      if (block[i] == '\0') return BinaryInput(path, what, lines.size());
      if (block[i] == '\n') {
        if (!lines.back().empty() && lines.back().back() == '\r') lines.back().pop_back();
        lines.emplace_back();
        continue;
      }
      lines.back() += block[i];
      if (lines.back().size() > max_line_bytes) {
        return InvalidArgument(path + ":" + std::to_string(lines.size()) + ": a line longer than the " +
                               std::to_string(max_line_bytes) + " bytes a " + what + " line may hold (" +
                               Excerpt(lines.back()) + "): is it the right file?");
      }
    }
  }
  if (!lines.back().empty() && lines.back().back() == '\r') lines.back().pop_back();
  if (lines.back().empty()) lines.pop_back();
  return lines;
}

}  // namespace gpulaunch
