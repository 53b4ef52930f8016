// What `gpulaunch check` learns on each host (gathered there by
// `gpulaunch-probe facts`, sent back as one JSON document): identity, the
// clock, versions, network interfaces, GPUs as NVML sees them, free ports, a
// writable temporary directory, the job's binary, and kernel settings worth
// recording. Pure data plus its JSON form; the verdicts are preflight.h's.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace gpulaunch {

struct NetInterfaceFacts {
  std::string name;
  std::string state;              // operstate: "up", "down", "unknown"
  int mtu = 0;
  int speed_mbps = -1;            // -1 when the driver does not say
  std::vector<std::string> ipv4;  // addresses on it
};

struct GpuFacts {
  std::string bus_id, uuid, name;
  uint64_t memory_bytes = 0;
  int temperature_c = -1;
  int64_t ecc_uncorrected = -1;
};

// A GPU's nearest data NIC as hwloc shows the host (policies/nic_choice.h).
struct GpuNicFacts {
  std::string gpu;   // PCI bus id
  std::string nic;   // "mlx5_0:1"
  std::string path;  // its path type: "PIX" ... "SYS" (policies/path_type.h)
};

struct HostFacts {
  std::string host;               // the name gpulaunch asked it by
  std::string hostname;           // what it calls itself
  double time_s = 0;              // its clock (CLOCK_REALTIME) when it answered
  std::string gpulaunch_version, mpi_version, ucx_version, driver_version;
  std::vector<NetInterfaceFacts> interfaces;
  int hwloc_gpus = 0;             // GPUs hwloc sees on the PCI bus
  bool nvml = false;              // NVML answered
  std::vector<GpuFacts> gpus;     // as NVML sees them
  std::vector<GpuNicFacts> gpu_nics;  // per hwloc GPU in PCI order; empty without data NICs
  int free_ports = 0;             // bindable ports in kJobPortFirst..kJobPortLast
  std::string tmp_dir, tmp_error; // the temporary directory, and why it is not writable
  std::string binary, binary_error;  // the job's program as resolved there, and what is wrong with it
  // The MPI the program links there (launcher/engine/program_mpi.h): "Open
  // MPI (libmpi.so.40)", "MPICH ABI (...) (libmpich.so.12)", or "none" with
  // the reason; empty without --binary.
  std::string binary_mpi;
  std::map<std::string, std::string> recorded;  // swap, memlock, sysctls: recorded, not judged
};

// The ports gpulaunch may give MASTER_PORT to a job whose rank 0 is remote.
inline constexpr int kJobPortFirst = 29500, kJobPortLast = 30499;

Json HostFactsToJson(const HostFacts& facts);
StatusOr<HostFacts> HostFactsFromJson(const Json& json, const std::string& origin);

// Gathers this host's facts; `binary` (may be empty) is resolved like execvp
// would, then checked for missing libraries (ldd).
HostFacts GatherHostFacts(const std::string& host, const std::string& binary);

// gpulaunch-probe's `facts` mode: args after "facts" are HOST [BINARY]. It
// prints the JSON between kFactsBegin and kFactsEnd lines, so whatever else
// the engine prints does not get in the way of ParseFactsOutput.
inline constexpr const char* kFactsBegin = "<gpulaunch-facts>";
inline constexpr const char* kFactsEnd = "</gpulaunch-facts>";
int RunFactsProbe(const std::vector<std::string>& args);
StatusOr<HostFacts> ParseFactsOutput(const std::string& output, const std::string& origin);

}  // namespace gpulaunch
