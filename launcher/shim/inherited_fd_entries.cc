#include "launcher/shim/inherited_fd_entries.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace gpulaunch {

int ForgetInheritedFdEntries(pid_t parent) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd", static_cast<int>(parent));
  DIR* parent_fds = opendir(path);
  if (!parent_fds) return 0;
  const int own = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (own < 0) {
    closedir(parent_fds);
    return 0;
  }
  const int listing = dirfd(parent_fds);
  int looked_up = 0;
  while (const dirent* entry = readdir(parent_fds)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd < 0) continue;  // "." and ".."
    if (fd == own || fd == listing || fcntl(static_cast<int>(fd), F_GETFD) >= 0) continue;  // ours: a live entry
    struct stat st;
    // A failed revalidation drops the cached entry; the lookup then fails.
    fstatat(own, entry->d_name, &st, AT_SYMLINK_NOFOLLOW);
    ++looked_up;
  }
  close(own);
  closedir(parent_fds);
  return looked_up;
}

}  // namespace gpulaunch
