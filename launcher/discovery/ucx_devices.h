// The network devices UCX can use here, from `ucx_info -d`, so that a NIC
// chosen for UCX_NET_DEVICES is one UCX accepts (hwloc may list a port UCX
// cannot drive, e.g. one that is down or lacks its driver).
#pragma once

#include <optional>
#include <set>
#include <string>

namespace gpulaunch {

// Device names in `ucx_info -d` output ("#      Device: mlx5_0:1").
std::set<std::string> ParseUcxDevices(const std::string& ucx_info_output);

// Runs ucx_info -d (5 s limit); nullopt when it is missing or fails.
std::optional<std::set<std::string>> QueryUcxDevices();

}  // namespace gpulaunch
