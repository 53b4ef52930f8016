// Writing a whole file so that a reader never sees half of it, and so that
// nobody else can aim the write: the bytes go to a new temporary name beside
// the target, created exclusively and without following a symlink
// (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), the final mode is set on that
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

Status WriteFileAtomically(const std::string& path, const std::string& bytes, mode_t mode = 0644);

}  // namespace gpulaunch
