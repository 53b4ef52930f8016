// What the end-to-end tests share: running the real gpulaunch binary, and
// finding what it left behind.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "launcher/base/process.h"
#include "tests/testing/process_scan.h"

namespace gpulaunch {

using testing::ProcessesWith;
using testing::WaitUntilGone;

inline const std::string kBin = GL_BIN_DIR;
inline const std::string kLaunch = kBin + "/gpulaunch";

// gpulaunch with `args`, to completion (killed after timeout_ms).
CapturedRun Launch(std::vector<std::string> args, int timeout_ms = 120000);
int ExitCode(const CapturedRun& r);  // -1 when it did not exit normally

// Waiting on events, not on the clock: a test waits for what it needs (files
// written, processes gone) and gives up only after a cap far beyond any
// healthy run on a loaded 2-core machine. Bounds that are the feature itself
// (a job gone within --kill-grace + 2 s) are measured from their event.
inline constexpr int kStartMs = 120000;         // ranks up and ready
inline constexpr int kGoneAfterExitMs = 30000;  // the engine's children reaped after gpulaunch exited

// Starts argv (stdout to /dev/null) and returns its pid, for tests that signal it.
pid_t StartInBackground(const std::vector<std::string>& argv);

// How many of DIR/PREFIX.0 .. DIR/PREFIX.(n-1) exist.
int FilesPresent(const std::string& dir, const std::string& prefix, int n);

// Waits up to `timeout_ms` until all n files exist; returns how many do.
int WaitForFiles(const std::string& dir, const std::string& prefix, int n, int timeout_ms);

// A private directory under /tmp, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& what);
  ~TempDir();
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// env_dump's lines "rank=R world=W key=value ...", as their key=value pairs by rank.
std::map<int, std::map<std::string, std::string>> RankLines(const std::string& out);

// The whole file, empty when it cannot be read.
std::string ReadText(const std::string& path);

}  // namespace gpulaunch
