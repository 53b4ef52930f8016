#include "launcher/base/engine_activity.h"

#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace gpulaunch {

EngineActivity::EngineActivity(pid_t pid) : pid_(pid) {}

std::optional<EngineActivity::Counters> EngineActivity::Read() const {
  const std::string proc = "/proc/" + std::to_string(pid_);
  std::ifstream stat_file(proc + "/stat");
  std::string stat;
  if (!std::getline(stat_file, stat)) return std::nullopt;
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime and stime fields 14 and 15.
  const auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close_paren + 1));
  std::string field;
  Counters c;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) c.cpu_ticks += std::strtoull(field.c_str(), nullptr, 10);
  }
  std::ifstream io_file(proc + "/io");
  std::string key;
  uint64_t value = 0;
  while (io_file >> key >> value)
    if (key == "rchar:" || key == "wchar:") c.io_bytes += value;
  return c;
}

bool EngineActivity::Sample() {
  const std::optional<Counters> now = Read();
  const bool changed = !last_ || !now || !(*now == *last_);
  last_ = now;
  return changed || OutputBlocked(STDOUT_FILENO) || OutputBlocked(STDERR_FILENO);
}

bool OutputBlocked(int fd) {
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, 0) < 0) return false;
  return (p.revents & (POLLOUT | POLLERR | POLLHUP | POLLNVAL)) == 0;
}

}  // namespace gpulaunch
