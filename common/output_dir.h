// A folder gpulaunch writes its outputs into (--profile-dir, slurm-config
// --out, the link file's folder), made and held so that nobody else can aim
// the writes: a link planted in place of the folder, or of any folder on the
// way that gpulaunch makes or that sits in a folder others may write (/tmp,
// a shared output folder), is refused with a clear error, never followed.
//
// Open() walks the path from its start one component at a time with openat:
// a missing component is made (mkdirat, 0777 less the umask) and opened
// O_DIRECTORY|O_NOFOLLOW; an existing symbolic link is followed only where
// its parent is a folder only its owner (or root) can write, as /tmp -> ...
// links of the system are; the last component is never a link, and when it
// already exists and belongs to another user it must not be writable by
// others. Files are then written relative to the held descriptor
// (WriteFileAtomicallyAt), so a folder swapped for a link after Open()
// changes nothing.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/file_write.h"
#include "common/status.h"

namespace gpulaunch {

class OutputDir {
 public:
  // InvalidArgument, naming the component and why, for a planted link, a
  // component that is not a folder, or a folder of another user that others
  // may write; Unavailable when a folder cannot be made.
  static StatusOr<OutputDir> Open(const std::string& path);

  OutputDir(OutputDir&& other) noexcept;
  OutputDir& operator=(OutputDir&& other) noexcept;
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;
  ~OutputDir();

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // WriteFileAtomically for `name` (no '/') in this folder.
  Status WriteFile(const std::string& name, const std::string& bytes, mode_t mode = kPlainFileMode) const;

 private:
  OutputDir(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace gpulaunch
