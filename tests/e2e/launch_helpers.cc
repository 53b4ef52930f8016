#include "tests/e2e/launch_helpers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace gpulaunch {

CapturedRun Launch(std::vector<std::string> args, int timeout_ms) {
  args.insert(args.begin(), kLaunch);
  // No link file of this machine's user may change a plan (launches read the
  // default one, common/link_table.h): a state folder that does not exist.
  return RunCaptured(args, EnvironmentWith({{"XDG_STATE_HOME", "/nonexistent/gpulaunch-e2e-state"}}), timeout_ms);
}

int ExitCode(const CapturedRun& r) { return WIFEXITED(r.wait_status) ? WEXITSTATUS(r.wait_status) : -1; }

// Starts argv (stdout to /dev/null) and returns its pid, for tests that signal it.
pid_t StartInBackground(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  return pid;
}


int FilesPresent(const std::string& dir, const std::string& prefix, int n) {
  int present = 0;
  for (int r = 0; r < n; ++r) present += fs::exists(fs::path(dir) / (prefix + "." + std::to_string(r)));
  return present;
}

int WaitForFiles(const std::string& dir, const std::string& prefix, int n, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms && FilesPresent(dir, prefix, n) < n; waited += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return FilesPresent(dir, prefix, n);
}

TempDir::TempDir(const std::string& what)
    : path(std::filesystem::temp_directory_path() / ("gl-e2e-" + what + "-" + std::to_string(getpid()))) {
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::map<int, std::map<std::string, std::string>> RankLines(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> ranks;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("rank=", 0) != 0 || line.find(" world=") == std::string::npos) continue;
    std::map<std::string, std::string> kv;
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      const auto eq = w.find('=');
      if (eq != std::string::npos) kv[w.substr(0, eq)] = w.substr(eq + 1);
    }
    ranks[std::stoi(kv["rank"])] = kv;
  }
  return ranks;
}

}  // namespace gpulaunch
