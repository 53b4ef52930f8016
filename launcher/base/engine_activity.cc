#include "launcher/base/engine_activity.h"

#include <poll.h>
#include <unistd.h>

#include <string>

#include "common/strings.h"

namespace gpulaunch {

EngineActivity::EngineActivity(pid_t pid) : pid_(pid) {}

std::optional<EngineActivity::Counters> EngineActivity::Read() const {
  const std::string proc = "/proc/" + std::to_string(pid_);
  const std::string stat = ReadFileOrEmpty(proc + "/stat");
  if (stat.empty()) return std::nullopt;
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime and stime fields 14 and 15.
  const auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return std::nullopt;
  Words fields(std::string_view(stat).substr(close_paren + 1));
  Counters c;
  int i = 3;
  for (std::optional<std::string_view> field = fields.Next(); field && i <= 15; field = fields.Next(), ++i) {
    if (i == 14 || i == 15) c.cpu_ticks += static_cast<uint64_t>(ParseInt(*field).value_or(0));
  }
  const std::string io = ReadFileOrEmpty(proc + "/io");
  Words io_fields(io);
  for (std::optional<std::string_view> key = io_fields.Next(); key; key = io_fields.Next()) {
    const std::optional<int64_t> value = io_fields.NextInt<int64_t>();
    if (!value) break;
    if (key == "rchar:" || key == "wchar:") c.io_bytes += static_cast<uint64_t>(*value);
  }
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
