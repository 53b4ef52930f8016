// How the job's environment reaches Hydra's proxies on other hosts without
// passing through Hydra's control port, which any peer that reaches it may
// read (docs/security.md, "Hydra").
//
// gpulaunch starts mpiexec.hydra with -genvnone (Hydra forwards no
// variable) and `-launcher ssh -launcher-exec BIN/gpulaunch-hydra-ssh`, a
// second name of the shim. Hydra runs it as it would run ssh
// (`gpulaunch-hydra-ssh -x HOST "/path/hydra_pmi_proxy" ARGS...`, the
// environment Hydra's own), and the agent:
//   - runs the real ssh (HYDRA_LAUNCHER_EXEC if the user named one, else
//     ssh) with the same options and host, and the remote command prefixed
//     by `gpulaunch-shim --hydra-proxy`;
//   - writes its whole environment (the job's, the control secret included)
//     first into ssh's standard input, then relays its own standard input
//     (what Hydra forwards to rank 0) after it.
// On the other host `gpulaunch-shim --hydra-proxy CMD...` reads that block,
// sets every variable in it, and execs CMD with the rest of its standard
// input untouched: the proxy, and every rank it starts, inherit the job's
// environment as they did when Hydra forwarded it. The block travels only in
// ssh's authenticated and encrypted channel and lands in processes of the
// job's user (/proc/PID/environ: owner only).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/base/hydra_agent_names.h"

namespace gpulaunch {

// The most the block may hold, and how long the remote side waits for it.
inline constexpr size_t kMaxEnvironmentBlockBytes = 16u << 20;
inline constexpr int kEnvironmentBlockTimeoutMs = 30000;

// "GLENV1 <n>\n" and n bytes: each "NAME=VALUE" followed by a NUL.
std::string EncodeEnvironmentBlock(const std::vector<std::string>& assignments);
// Parses the n bytes after the header back into NAME -> VALUE; an entry
// without '=' or with an empty name is an error.
StatusOr<std::map<std::string, std::string>> DecodeEnvironmentEntries(const std::string& entries);
// The byte count of a header line ("GLENV1 <n>", without its newline), at
// most kMaxEnvironmentBlockBytes.
StatusOr<size_t> ParseEnvironmentHeader(const std::string& line);

// An ssh command line as Hydra writes it, cut where ssh cuts it: the options
// (with their arguments), the destination, and the remote command's words.
struct SshCommand {
  std::vector<std::string> options;
  std::string destination;
  std::vector<std::string> remote;
};
StatusOr<SshCommand> ParseSshArguments(const std::vector<std::string>& args);

// The ssh argv the agent runs: `ssh_program OPTIONS DEST 'SHIM' --hydra-proxy REMOTE...`.
std::vector<std::string> HydraProxySshArgv(const std::string& ssh_program, const SshCommand& command,
                                           const std::string& shim);

// The two sides, as the shim's main() runs them; each returns only on an
// error (an exit code, having said why on stderr).
int RunHydraSshAgent(int argc, char** argv);
int RunHydraProxyWithEnvironment(int argc, char** argv);

}  // namespace gpulaunch
