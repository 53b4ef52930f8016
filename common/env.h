// Environment access through a function, so code that reads the environment
// contract is tested with fake environments.
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>

namespace gpulaunch {

using EnvLookup = std::function<const char*(const char* name)>;

inline EnvLookup ProcessEnv() {
  return [](const char* name) { return std::getenv(name); };
}

}  // namespace gpulaunch
