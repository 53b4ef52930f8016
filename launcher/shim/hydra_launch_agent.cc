#include "launcher/shim/hydra_launch_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/fd_io.h"

extern char** environ;

namespace gpulaunch {
namespace {

constexpr const char* kHeaderTag = "GLENV1 ";
// OpenSSH's options that take an argument (ssh(1)); every other letter is a flag.
constexpr std::string_view kSshOptionsWithArgument = "BbcDEeFIiJLlmOoPpQRSWw";

int Fail(const std::string& why) {
  std::fprintf(stderr, "gpulaunch-shim: %s\n", why.c_str());
  return kExitLaunchFailure;
}

// The header line from fd 0, read a byte at a time so that nothing after it
// is taken from the proxy's standard input.
StatusOr<std::string> ReadHeaderLine(int fd) {
  std::string line;
  char c = 0;
  while (line.size() < 64) {
    if (!ReadExact(fd, &c, 1, kEnvironmentBlockTimeoutMs)) {
      return Unavailable("no environment from gpulaunch-hydra-ssh on standard input within " +
                         std::to_string(kEnvironmentBlockTimeoutMs / 1000) + " s");
    }
    if (c == '\n') return line;
    line += c;
  }
  return InvalidArgument("standard input does not start with gpulaunch-hydra-ssh's environment header");
}

// Copies fd `from` to `to` until either end closes.
void Relay(int from, int to) {
  char buf[65536];
  for (;;) {
    const ssize_t n = read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || !WriteAll(to, buf, static_cast<size_t>(n))) return;
  }
}

}  // namespace

std::string EncodeEnvironmentBlock(const std::vector<std::string>& assignments) {
  std::string entries;
  for (const std::string& a : assignments) {
    entries += a;
    entries += '\0';
  }
  return kHeaderTag + std::to_string(entries.size()) + "\n" + entries;
}

StatusOr<size_t> ParseEnvironmentHeader(const std::string& line) {
  if (line.rfind(kHeaderTag, 0) != 0) {
    return InvalidArgument("standard input does not start with gpulaunch-hydra-ssh's environment header");
  }
  const std::string digits = line.substr(std::strlen(kHeaderTag));
  const std::optional<int64_t> n = ParseInt(digits);
  if (!n || *n < 0 || static_cast<unsigned long long>(*n) > kMaxEnvironmentBlockBytes) {
    return InvalidArgument("the environment block's size '" + digits + "' is not a number of bytes up to " +
                           std::to_string(kMaxEnvironmentBlockBytes));
  }
  return static_cast<size_t>(*n);
}

StatusOr<std::map<std::string, std::string>> DecodeEnvironmentEntries(const std::string& entries) {
  std::map<std::string, std::string> env;
  size_t start = 0;
  while (start < entries.size()) {
    size_t end = entries.find('\0', start);
    if (end == std::string::npos) return InvalidArgument("the environment block's last entry has no terminating NUL");
    const std::string entry = entries.substr(start, end - start);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("the environment block holds an entry that is not NAME=VALUE");
    }
    env[entry.substr(0, eq)] = entry.substr(eq + 1);
    start = end + 1;
  }
  return env;
}

StatusOr<SshCommand> ParseSshArguments(const std::vector<std::string>& args) {
  SshCommand cmd;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;
    cmd.options.push_back(a);
    for (size_t k = 1; k < a.size(); ++k) {
      if (kSshOptionsWithArgument.find(a[k]) == std::string_view::npos) continue;
      if (k + 1 == a.size()) {  // the argument is the next word
        if (i + 1 >= args.size()) return InvalidArgument("ssh option " + a + " lacks its argument");
        cmd.options.push_back(args[++i]);
      }
      break;  // the rest of this word is the option's argument
    }
  }
  if (i >= args.size()) return InvalidArgument("no host in the ssh command Hydra gave: " + Join(args, " "));
  cmd.destination = args[i];
  cmd.remote.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  if (cmd.remote.empty()) return InvalidArgument("no remote command in the ssh command Hydra gave for " + args[i]);
  return cmd;
}

std::vector<std::string> HydraProxySshArgv(const std::string& ssh_program, const SshCommand& command,
                                           const std::string& shim) {
  std::vector<std::string> argv = {ssh_program};
  argv.insert(argv.end(), command.options.begin(), command.options.end());
  argv.push_back(command.destination);
  // ssh joins the remote words with spaces for the remote shell: the shim's
  // path is quoted, Hydra's words are as Hydra wrote them.
  argv.push_back(ShellQuote(shim));
  argv.push_back(kHydraProxyFlag);
  argv.insert(argv.end(), command.remote.begin(), command.remote.end());
  return argv;
}

int RunHydraSshAgent(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  StatusOr<SshCommand> command = ParseSshArguments(args);
  if (!command.ok()) return Fail(command.status().message());
  char self[4096];
  const ssize_t self_len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (self_len <= 0) return Fail(std::string("cannot tell where gpulaunch-shim is: ") + std::strerror(errno));
  self[self_len] = '\0';
  // The user's own ssh for Hydra, unless it names this agent.
  std::string ssh = EnvOr("HYDRA_LAUNCHER_EXEC", "");
  const size_t slash = ssh.rfind('/');
  if (ssh.empty() || ssh.substr(slash == std::string::npos ? 0 : slash + 1) == kHydraSshAgentName) ssh = "ssh";
  std::vector<std::string> assignments;
  for (char** e = environ; *e; ++e) assignments.emplace_back(*e);
  const std::string block = EncodeEnvironmentBlock(assignments);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Fail(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t relay = fork();
  if (relay < 0) return Fail(std::string("fork: ") + std::strerror(errno));
  if (relay == 0) {
    // The block first, then what Hydra writes to "ssh"; ends with ssh.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
    signal(SIGPIPE, SIG_IGN);
    close(pipe_fds[0]);
    if (WriteAll(pipe_fds[1], block.data(), block.size())) Relay(0, pipe_fds[1]);
    _exit(0);
  }
  close(pipe_fds[1]);
  if (dup2(pipe_fds[0], 0) < 0) return Fail(std::string("dup2: ") + std::strerror(errno));
  close(pipe_fds[0]);
  std::vector<std::string> ssh_argv = HydraProxySshArgv(ssh, *command, self);
  std::vector<char*> cargv;
  for (std::string& a : ssh_argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  const int err = errno;
  Fail("cannot run " + ssh + ": " + std::strerror(err));
  return err == ENOENT ? kExitNotFound : kExitCannotExecute;
}

int RunHydraProxyWithEnvironment(int argc, char** argv) {
  if (argc < 3) return Fail(std::string("usage: gpulaunch-shim ") + kHydraProxyFlag + " PROXY [ARGS...]");
  StatusOr<std::string> header = ReadHeaderLine(0);
  if (!header.ok()) return Fail(header.status().message());
  StatusOr<size_t> size = ParseEnvironmentHeader(*header);
  if (!size.ok()) return Fail(size.status().message());
  std::string entries(*size, '\0');
  if (*size > 0 && !ReadExact(0, entries.data(), *size, kEnvironmentBlockTimeoutMs)) {
    return Fail("the environment block from gpulaunch-hydra-ssh ended early");
  }
  StatusOr<std::map<std::string, std::string>> env = DecodeEnvironmentEntries(entries);
  if (!env.ok()) return Fail(env.status().message());
  for (const auto& [name, value] : *env) setenv(name.c_str(), value.c_str(), 1);
  execvp(argv[2], argv + 2);
  const int err = errno;
  Fail(std::string("cannot run ") + argv[2] + ": " + std::strerror(err));
  return err == ENOENT ? kExitNotFound : kExitCannotExecute;
}

}  // namespace gpulaunch
