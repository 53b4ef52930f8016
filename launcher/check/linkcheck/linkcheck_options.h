// `gpulaunch linkcheck`'s options (its forms: linkcheck_command.h), parsed
// and checked, and the measurement options again as the arguments of a
// server or client that the --hosts form starts on another host.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/check/linkcheck/ucx_link.h"

namespace gpulaunch {

inline constexpr int kLinkcheckDefaultPort = 13337;
inline constexpr int kMaxSyncS = 24;  // a server waits kPeerDeadline (30 s) for the client's first message

struct LinkcheckOptions {
  bool server = false, once = false, help = false, quick = false, allow_run_as_root = false;
  std::optional<std::string> client;
  std::vector<std::string> host_args;
  std::optional<std::string> hostfile;
  std::string pattern = "ring";
  int port = kLinkcheckDefaultPort;
  UcxSettings ucx;
  LinkPlan plan;
  std::string format = "table";
  std::optional<std::string> save, compare;
  double tolerance_pct = 20;
  int budget_s = 120;
  bool concurrent = false;      // --concurrent: shift rounds, inferred leaves
  int sync_s = 10;              // --sync: seconds for a round's clients to start
  std::string links;            // --links: the link file to write; "none": none
  bool shared_memory = true;    // measure each host's shared memory for the link file
};

// The arguments after `linkcheck`. Usage errors name the option and say
// what to give instead.
StatusOr<LinkcheckOptions> ParseLinkcheckOptions(const std::vector<std::string>& args);
// `gpulaunch linkcheck --help`.
std::string LinkcheckHelp();

// The measurement options again, for a server or client on another host.
std::vector<std::string> ClientArgs(const LinkcheckOptions& o);
// The client's own: the measurement's, and when its round begins sending.
std::vector<std::string> ClientOnlyArgs(const LinkcheckOptions& o);

}  // namespace gpulaunch
