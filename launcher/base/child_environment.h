// The environment gpulaunch's children get: this process's own, less what was
// set for this process alone, plus overrides; and the settings meant for the
// engine's process that its ranks drop before the job starts.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpulaunch {

// This process's environment with `overrides` applied, as "K=V" strings,
// without what SetEnvForThisProcessOnly set: the environment children get.
std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& overrides);

// setenv() for this process's own libraries, kept out of EnvironmentWith so
// that no engine, rank or tool started from here inherits it. Not
// thread-safe (setenv): call it at the start of main, before any thread.
void SetEnvForThisProcessOnly(const std::string& name, const std::string& value);

// Names, comma-separated, of the variables in the engine's environment that
// are there for the engine's own process only: the shim removes each of
// them, and this one, before the job starts (DropEngineOnlyEnvironment), so
// the job sees the environment it would have had without them.
inline constexpr const char* kEngineOnlyEnv = "GPULAUNCH_ENGINE_ONLY";

// SetEnvForThisProcessOnly, and the same setting for the engine gpulaunch
// starts (EngineOnlyEnvironment), never for the job. Same caveat.
void SetEnvForThisProcessAndEngine(const std::string& name, const std::string& value);

// What the engine's environment adds for the engine alone: each variable set
// with SetEnvForThisProcessAndEngine, and each of `for_engine` (the engine's
// own settings for this job), that `engine_env` (what the engine gets
// otherwise) does not already set (a value given for the job wins and
// reaches it), and kEngineOnlyEnv naming them; empty when there is none.
std::map<std::string, std::string> EngineOnlyEnvironment(const std::map<std::string, std::string>& engine_env,
                                                         const std::map<std::string, std::string>& for_engine = {});

// In a rank's process: removes what kEngineOnlyEnv names, and it.
void DropEngineOnlyEnvironment();

}  // namespace gpulaunch
