// Writing a whole file so that a reader never sees half of it, and so that
// nobody else can aim the write: the bytes go to a new temporary name beside
// the target, created exclusively and without following a symlink
// (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), the final mode (`mode` less the
// process's umask, as open(2) and cp(1) apply it) is set on that
// descriptor (fchmod, never by name), and the file is then renamed over the
// target: an atomic replace on one filesystem, which replaces a symlink at
// the target itself rather than writing through it. A file planted under the
// temporary name makes the write fail (a fresh random name is tried a few
// times), never reused. On failure nothing is left behind.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/status.h"

namespace gpulaunch {

// Modes for `mode`: kPlainFileMode for files anyone the user allows may read
// (0666 less the umask), kScriptMode for scripts, kPrivateFileMode for files
// that may hold job output (summaries with stderr tails, profiles,
// checkpoints): 0600 whatever the umask.
inline constexpr mode_t kPlainFileMode = 0666;
inline constexpr mode_t kScriptMode = 0777;
inline constexpr mode_t kPrivateFileMode = 0600;

Status WriteFileAtomically(const std::string& path, const std::string& bytes, mode_t mode = kPlainFileMode);
// The same for `name` relative to the folder descriptor `dir_fd` (openat,
// renameat); `shown` is the path errors name.
Status WriteFileAtomicallyAt(int dir_fd, const std::string& name, const std::string& shown, const std::string& bytes,
                             mode_t mode = kPlainFileMode);

// This process's umask, read without changing it (/proc/self/status; the
// umask(2) round trip where /proc does not say).
mode_t CurrentUmask();

}  // namespace gpulaunch
