#include "common/output_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/strings.h"

namespace gpulaunch {
namespace {

// Only its owner (or root) may change what a name in `dir_fd` points to.
bool OnlyOwnerWrites(int dir_fd) {
  struct stat about {};
  if (fstat(dir_fd, &about) != 0) return false;
  return (about.st_mode & (S_IWGRP | S_IWOTH)) == 0 || (about.st_uid == 0 && (about.st_mode & S_IWOTH) == 0);
}

std::string Shown(const std::vector<std::string>& parts, size_t upto, bool absolute) {
  std::string out = absolute ? "/" : "";
  for (size_t i = 0; i <= upto; ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

}  // namespace

StatusOr<OutputDir> OutputDir::Open(const std::string& path) {
  if (path.empty()) return InvalidArgument("empty output folder path");
  const bool absolute = path[0] == '/';
  std::vector<std::string> parts;
  for (const std::string& p : Split(path, '/'))
    if (!p.empty() && p != ".") parts.push_back(p);
  int fd = open(absolute ? "/" : ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Unavailable("cannot open " + std::string(absolute ? "/" : "the working folder") + ": " + std::strerror(errno));
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const std::string shown = Shown(parts, i, absolute);
    bool made = false;
    int next = openat(fd, parts[i].c_str(), O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(fd, parts[i].c_str(), 0777) != 0 && errno != EEXIST) {
        const std::string why = std::strerror(errno);
        close(fd);
        return Unavailable("cannot create the folder " + shown + ": " + why);
      }
      made = true;
      next = openat(fd, parts[i].c_str(), O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0 && (errno == ELOOP || errno == ENOTDIR)) {
      struct stat about {};
      const bool is_link = fstatat(fd, parts[i].c_str(), &about, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(about.st_mode);
      if (is_link && !last && !made && OnlyOwnerWrites(fd)) {
        // A link of the system's (or the user's own), in a folder nobody else can change.
        next = openat(fd, parts[i].c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
      } else {
        close(fd);
        return InvalidArgument(
            is_link ? shown + " is a symbolic link" +
                          (last ? std::string(": gpulaunch writes its output only into a real folder")
                                : std::string(" in a folder others may write")) +
                          "; someone may have planted it there. Remove it, or give a folder of your own"
                    : shown + " is not a folder; give a folder (it is made when missing)");
      }
    }
    if (next < 0) {
      const std::string why = std::strerror(errno);
      close(fd);
      return Unavailable("cannot open the folder " + shown + ": " + why);
    }
    close(fd);
    fd = next;
    if (last) {
      struct stat about {};
      if (fstat(fd, &about) == 0 && about.st_uid != geteuid() && about.st_uid != 0 &&
          (about.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (about.st_mode & S_ISVTX) == 0) {
        close(fd);
        return InvalidArgument(shown + " belongs to another user (uid " + std::to_string(about.st_uid) +
                               ") and others may write it; give a folder of your own");
      }
    }
  }
  return OutputDir(path, fd);
}

OutputDir::OutputDir(OutputDir&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }

OutputDir& OutputDir::operator=(OutputDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

OutputDir::~OutputDir() {
  if (fd_ >= 0) close(fd_);
}

Status OutputDir::WriteFile(const std::string& name, const std::string& bytes, mode_t mode) const {
  if (name.empty() || name.find('/') != std::string::npos) return InvalidArgument("bad file name '" + name + "'");
  return WriteFileAtomicallyAt(fd_, name, path_ + "/" + name, bytes, mode);
}

}  // namespace gpulaunch
