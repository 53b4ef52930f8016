#include "launcher/base/child_environment.h"

#include <cstdlib>
#include <optional>
#include <set>

#include "common/env.h"
#include "common/strings.h"

extern char** environ;

namespace gpulaunch {

namespace {

// Set only once, before threads (SetEnvForThisProcessOnly); read afterwards.
std::set<std::string>& OwnVariables() {
  static std::set<std::string> names;
  return names;
}

// The subset of OwnVariables() the engine gets too, with their values.
std::map<std::string, std::string>& EngineVariables() {
  static std::map<std::string, std::string> values;
  return values;
}

}  // namespace

void SetEnvForThisProcessOnly(const std::string& name, const std::string& value) {
  setenv(name.c_str(), value.c_str(), 1);
  OwnVariables().insert(name);
}

void SetEnvForThisProcessAndEngine(const std::string& name, const std::string& value) {
  SetEnvForThisProcessOnly(name, value);
  EngineVariables()[name] = value;
}

std::map<std::string, std::string> EngineOnlyEnvironment(const std::map<std::string, std::string>& engine_env,
                                                         const std::map<std::string, std::string>& for_engine) {
  std::map<std::string, std::string> added;
  const std::map<std::string, std::string>& own = EngineVariables();
  for (const auto* settings : {&own, &for_engine}) {
    for (const auto& [name, value] : *settings)
      if (!engine_env.count(name)) added.emplace(name, value);
  }
  std::string names;
  for (const auto& [name, value] : added) names += (names.empty() ? "" : ",") + name;
  if (!names.empty()) added[kEngineOnlyEnv] = names;
  return added;
}

void DropEngineOnlyEnvironment() {
  const std::optional<std::string> names = GetEnv(kEngineOnlyEnv);
  if (!names) return;
  for (const std::string& name : Split(*names, ','))
    if (!name.empty()) unsetenv(name.c_str());
  unsetenv(kEngineOnlyEnv);
}

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  const std::set<std::string>& own = OwnVariables();
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (!overrides.count(key) && !own.count(key)) env.push_back(kv);
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

}  // namespace gpulaunch
