// ISO 8601 UTC timestamps for what gpulaunch writes (the summary, the node
// table): "2026-11-30T12:34:56Z", or with milliseconds "…:56.789Z".
#pragma once

#include <chrono>
#include <string>

namespace gpulaunch {

std::string UtcTimestamp(std::chrono::system_clock::time_point t, bool milliseconds = false);

}  // namespace gpulaunch
