#include "launcher/job/job_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/file_write.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOwnerFile = "owner";

// "PID START" of the gpulaunch that made `dir`, read without following a link.
std::optional<std::pair<pid_t, unsigned long long>> ReadOwner(const fs::path& dir) {
  const int fd = open((dir / kOwnerFile).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[64] = {0};
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return std::nullopt;
  const std::vector<std::string> words = Split(Trim(std::string_view(buf, static_cast<size_t>(n))), ' ');
  if (words.size() != 2) return std::nullopt;
  const auto pid = ParseInt(words[0]);
  const auto start = ParseInt(words[1]);
  if (!pid || *pid <= 0 || !start || *start < 0) return std::nullopt;
  return std::make_pair(static_cast<pid_t>(*pid), static_cast<unsigned long long>(*start));
}

}  // namespace

std::optional<unsigned long long> ProcessStartTime(pid_t pid) {
  const std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  // After "PID (comm)": state is field 3, the start time field 22.
  const std::vector<std::string> fields = Split(Trim(std::string_view(stat).substr(paren + 1)), ' ');
  if (fields.size() < 20) return std::nullopt;
  const auto start = ParseInt(fields[19]);
  if (!start || *start < 0) return std::nullopt;
  return static_cast<unsigned long long>(*start);
}

int RemoveStaleJobFolders(const fs::path& tmp) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(tmp, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("gpulaunch.", 0) != 0 || name.size() != std::string("gpulaunch.XXXXXX").size()) continue;
    struct stat about {};
    if (lstat(entry.path().c_str(), &about) != 0 || !S_ISDIR(about.st_mode) || about.st_uid != geteuid() ||
        (about.st_mode & 0777) != 0700) {
      continue;  // not a job folder of ours
    }
    const auto owner = ReadOwner(entry.path());
    if (!owner) continue;  // being made, or another version's
    const auto started = ProcessStartTime(owner->first);
    if (started && *started == owner->second) continue;  // its gpulaunch lives
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
    removed += rm ? 0 : 1;
  }
  return removed;
}

StatusOr<fs::path> MakeJobFolder(const fs::path& tmp) {
  RemoveStaleJobFolders(tmp);
  std::string dir = (tmp / "gpulaunch.XXXXXX").string();
  if (!mkdtemp(dir.data())) {
    return Internal("cannot create a job folder under " + tmp.string() + ": " + std::strerror(errno) +
                    "; set TMPDIR to a writable folder");
  }
  const auto start = ProcessStartTime(getpid());
  const std::string owner = std::to_string(getpid()) + " " + std::to_string(start.value_or(0)) + "\n";
  if (Status s = WriteFileAtomically((fs::path(dir) / kOwnerFile).string(), owner, kPrivateFileMode); !s.ok()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    return s;
  }
  return fs::path(dir);
}

}  // namespace gpulaunch
