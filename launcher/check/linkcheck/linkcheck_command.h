// `gpulaunch linkcheck`: link latency and bandwidth over UCX (ucx_link.h).
//
//   gpulaunch linkcheck --server [--port P] [--once] [--tls T] [--nic DEV]
//   gpulaunch linkcheck --client HOST [--port P] [measurement options]
//   gpulaunch linkcheck --hosts LIST | --hostfile FILE [--pattern ring|pairs]
//
// The last form runs, for each pair in turn, the server on one host and the
// client on the other through the engine (mpirun, or srun in an
// allocation), and gathers the results. --format json, --save FILE and
// --compare FILE [--tolerance PCT] (flag links more than PCT% worse) work in
// the client and --hosts forms. Exit 0, 1 when a link failed or got worse,
// 2 for usage errors.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

int RunLinkcheckCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
