#include "slurm/kill_wait.h"

#include <algorithm>
#include <string>

#include "common/strings.h"

namespace gpulaunch {

std::optional<int> ParseKillWaitSeconds(std::string_view text) {
  for (const std::string& line : Split(text, '\n')) {
    const std::string_view t = Trim(line);
    if (t.rfind("KillWait", 0) != 0) continue;
    const size_t eq = t.find('=');
    if (eq == std::string_view::npos || Trim(t.substr(0, eq)) != "KillWait") continue;
    const std::vector<std::string> words = Split(Trim(t.substr(eq + 1)), ' ');
    if (words.empty()) return std::nullopt;
    const auto seconds = ParseInt(words[0]);
    if (!seconds || *seconds < 0 || *seconds > 86400) return std::nullopt;
    return static_cast<int>(*seconds);
  }
  return std::nullopt;
}

std::string ParseProctrackType(std::string_view text) {
  for (const std::string& line : Split(text, '\n')) {
    const std::string_view t = Trim(line);
    const size_t eq = t.find('=');
    if (eq == std::string_view::npos || Trim(t.substr(0, eq)) != "ProctrackType") continue;
    return std::string(Trim(t.substr(eq + 1)));
  }
  return "";
}

int KillGraceWithinKillWait(int wanted_ms, int kill_wait_s) {
  const int room_ms = std::max(1, kill_wait_s - kStopMarginS) * 1000;
  return std::min(wanted_ms, room_ms);
}

}  // namespace gpulaunch
