#include "launcher/discovery/nvml_gpus.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gpulaunch {
namespace {

// ABI-stable subset of nvml.h (NVML keeps these layouts across versions).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

// NVML reports "00000000:1A:00.0"; hwloc "0000:1a:00.0".
std::string NormaliseBusId(const char* raw) {
  std::string s(raw);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto colon = s.find(':');
  if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);
  return s;
}

}  // namespace

std::vector<NvmlGpu> QueryNvmlGpus() { return QueryNvml().gpus; }

NvmlReport QueryNvml() {
  NvmlReport report;
  std::vector<NvmlGpu>& out = report.gpus;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return report;
  auto sym = [&](const char* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<nvmlReturn_t (*)()>(sym("nvmlShutdown"));
  auto count = reinterpret_cast<nvmlReturn_t (*)(unsigned*)>(sym("nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto pci = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*)>(sym("nvmlDeviceGetPciInfo_v3"));
  auto uuid = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(sym("nvmlDeviceGetUUID"));
  auto name = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(sym("nvmlDeviceGetName"));
  auto mem = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(sym("nvmlDeviceGetMemoryInfo"));
  // nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU = 0, &c);
  // nvmlDeviceGetTotalEccErrors(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0, &n).
  auto temperature = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>(sym("nvmlDeviceGetTemperature"));
  auto ecc = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*)>(
      sym("nvmlDeviceGetTotalEccErrors"));
  auto driver = reinterpret_cast<nvmlReturn_t (*)(char*, unsigned)>(sym("nvmlSystemGetDriverVersion"));
  // The library stays loaded: NVML keeps allocations past nvmlShutdown,
  // and unloading it turns them into leaks of an unknown module.
  if (!init || !shutdown || !count || !handle || !pci || init() != 0) return report;
  report.available = true;
  char version[96] = {0};
  if (driver && driver(version, sizeof version) == 0) report.driver_version = version;
  unsigned n = 0;
  if (count(&n) == 0) {
    for (unsigned i = 0; i < n; ++i) {
      nvmlDevice_t dev = nullptr;
      nvmlPciInfo_t info;
      std::memset(&info, 0, sizeof info);
      if (handle(i, &dev) != 0 || pci(dev, &info) != 0) continue;
      NvmlGpu g;
      g.pci_bus_id = NormaliseBusId(info.busId);
      char buf[96] = {0};
      if (uuid && uuid(dev, buf, sizeof buf) == 0) g.uuid = buf;
      std::memset(buf, 0, sizeof buf);
      if (name && name(dev, buf, sizeof buf) == 0) g.name = buf;
      nvmlMemory_t m{};
      if (mem && mem(dev, &m) == 0) g.memory_bytes = m.total, g.memory_used_bytes = m.used;
      unsigned celsius = 0;
      if (temperature && temperature(dev, 0, &celsius) == 0) g.temperature_c = static_cast<int>(celsius);
      unsigned long long errors = 0;
      if (ecc && ecc(dev, 1, 0, &errors) == 0) g.ecc_uncorrected = static_cast<int64_t>(errors);
      out.push_back(std::move(g));
    }
  }
  shutdown();
  return report;
}

}  // namespace gpulaunch
