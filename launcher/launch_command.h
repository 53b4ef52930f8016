// The launch command: everything `gpulaunch` does when its first argument is
// not a subcommand's name. Returns the exit code (docs/launch.md "Exit codes").
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

int RunLaunchCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
