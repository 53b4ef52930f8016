// `gpulaunch check` (pre-flight): the verdicts on what every host reported
// (host_facts.h) plus what the launch host saw while asking (the clock
// around the probe, name resolution). Pure functions, tested without hosts.
//
// Checks, in table order:
//   reach     the host answered through the engine within the budget
//   clock     its clock against the launch host's: |offset| minus the
//             probe's half round trip must stay within max_clock_skew_s
//   dns       its name resolves, and its address resolves back to it (or to
//             a name that resolves to the same address, e.g. localhost)
//   versions  gpulaunch, MPI, UCX and driver versions equal the majority's
//   mtu       the data interface's MTU (the interface holding the address
//             its name resolves to) equals the majority's
//   nic       that interface is up, at the majority's speed
//   gpus      NVML answers where NVIDIA GPUs are on the bus, sees them all,
//             none at 90 C or more, no uncorrected ECC errors
//   ports     some of gpulaunch's job ports (29500-30499) are free
//   tmp       the temporary directory is writable
//   binary    the job's program and its libraries resolve (with --binary), it
//             links the same MPI on every host, and an engine here starts it
// Swap, memlock and a few sysctls are recorded only (they show in --save and
// --compare).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/check/host_facts.h"

namespace gpulaunch {

struct HostProbe {
  std::string host;
  std::optional<HostFacts> facts;
  std::string error;                    // why there are no facts
  double asked_s = 0, answered_s = 0;   // the launch host's clock around the probe
  std::vector<std::string> addresses;   // its name, resolved on the launch host
  std::string reverse_name;             // the first address, resolved back ("" when it does not)
  bool reverse_confirms = false;        // reverse_name resolves forward to that address again
};

enum class CheckState { kPass, kFail, kSkip };

struct CheckOutcome {
  std::string name;
  CheckState state = CheckState::kSkip;
  std::string detail;
};

struct PreflightHost {
  std::string host;
  std::vector<CheckOutcome> checks;  // every check, in table order
  bool ok() const;
};

struct PreflightOptions {
  double max_clock_skew_s = 1.0;
  bool binary_given = false;
  // Why the engine a launch of --binary would use cannot start the MPI the
  // program links here (ChooseEngine's refusal); empty when it can.
  std::string binary_engine_refusal;
  int max_gpu_temperature_c = 90;
};

std::vector<PreflightHost> EvaluatePreflight(const std::vector<HostProbe>& probes, const PreflightOptions& options);

std::string RenderPreflightTable(const std::vector<PreflightHost>& hosts);
std::string PreflightJson(const std::vector<PreflightHost>& hosts);

// --save: every host's facts; --compare: what changed since.
std::string BaselineJson(const std::vector<HostProbe>& probes);
StatusOr<std::map<std::string, HostFacts>> ParseBaseline(const std::string& text, const std::string& origin);
// "node2: ucx_version 1.13.1 -> 1.14.0", one line per change, hosts in order;
// a host new since the baseline, or gone, says so.
std::vector<std::string> CompareWithBaseline(const std::map<std::string, HostFacts>& baseline,
                                             const std::vector<HostProbe>& probes);

}  // namespace gpulaunch
