// Environment access: the one place that reads this process's environment.
// Code that reads the environment contract takes an EnvLookup, so it is
// tested with fake environments; the rest asks through the helpers below.
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gpulaunch {

using EnvLookup = std::function<const char*(const char* name)>;

inline EnvLookup ProcessEnv() {
  return [](const char* name) { return std::getenv(name); };
}

// The value of `name` here; nullopt when it is unset (set but empty is "").
inline std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  if (!value) return std::nullopt;
  return std::string(value);
}

// True when `name` is set, to anything (empty included).
inline bool HasEnv(const char* name) { return std::getenv(name) != nullptr; }

// The value of `name`, or `fallback` when it is unset.
inline std::string EnvOr(const char* name, std::string fallback) {
  return GetEnv(name).value_or(std::move(fallback));
}

// True when `name` is set to exactly `value`.
inline bool EnvIs(const char* name, std::string_view value) {
  const char* v = std::getenv(name);
  return v && value == v;
}

// A file descriptor handed down in `name` (a decimal number from 3 to 65535,
// as gpulaunch's shim passes its pipes); -1 when unset or malformed.
inline int DescriptorFromEnv(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return -1;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  return *end == '\0' && v >= 3 && v < 65536 ? static_cast<int>(v) : -1;
}

}  // namespace gpulaunch
