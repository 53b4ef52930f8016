#include "launcher/discovery/hwloc_source.h"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/base/process.h"
#include "launcher/discovery/hwloc_devices.h"
#include "launcher/discovery/nvml_gpus.h"
#include "launcher/discovery/topology_cache.h"
#include "launcher/discovery/ucx_devices.h"

namespace gpulaunch {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

HostTopology Convert(hwloc_topology_t topo) {
  HostTopology host;
  if (const char* hn = HwlocInfo(hwloc_get_root_obj(topo), "HostName")) host.hostname = hn;
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); n;
       n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) {
    host.numa_nodes.push_back(NumaNode{static_cast<int>(n->os_index), PusOf(n->cpuset)});
  }
  for (hwloc_obj_t p = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, nullptr); p;
       p = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, p)) {
    host.packages.push_back(Package{static_cast<int>(p->os_index), PusOf(p->cpuset)});
  }
  auto numa_of_pu = [&](int pu) {
    for (const NumaNode& n : host.numa_nodes)
      if (std::binary_search(n.pus.begin(), n.pus.end(), pu)) return n.os_index;
    return -1;
  };
  // Cores; a topology without Core objects (some trimmed files) uses PUs.
  const hwloc_obj_type_t unit = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t c = hwloc_get_next_obj_by_type(topo, unit, nullptr); c;
       c = hwloc_get_next_obj_by_type(topo, unit, c)) {
    Core core;
    core.logical_index = static_cast<int>(c->logical_index);
    core.pus = PusOf(c->cpuset);
    if (core.pus.empty()) continue;
    core.numa_node = numa_of_pu(core.pus.front());
    for (const Package& p : host.packages)
      if (std::binary_search(p.pus.begin(), p.pus.end(), core.pus.front())) core.package = p.os_index;
    host.cores.push_back(std::move(core));
  }
  AddGpus(topo, host);
  AddNics(topo, host);
  AddGpuLinks(topo, host);
  return host;
}

StatusOr<TopologyPtr> Open() {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) return Internal("hwloc_topology_init failed");
  TopologyPtr topo(t);
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
  return topo;
}

// hwloc's XML of `topo` (with `flags`), or nullopt when hwloc cannot export it.
std::optional<std::string> ExportXml(hwloc_topology_t topo, unsigned long flags) {
  char* buf = nullptr;
  int len = 0;
  if (hwloc_topology_export_xmlbuffer(topo, &buf, &len, flags) != 0) return std::nullopt;
  std::string xml(buf, len > 0 ? static_cast<size_t>(len - 1) : 0);
  hwloc_free_xmlbuffer(topo, buf);
  return xml;
}

// The hwloc v1 XML of this machine as the last DiscoverLocalHost found it,
// for LocalTopologyXmlForEngine; nullopt when that was another input (such
// as HWLOC_XMLFILE) or the cache is off.
std::optional<std::string>& EngineXmlOfThisMachine() {
  static std::optional<std::string> xml;
  return xml;
}

// The cache entry that XML came from; nullopt when discovered live.
std::optional<std::string>& EngineXmlCacheEntry() {
  static std::optional<std::string> path;
  return path;
}

struct LocalTopology {
  HostTopology host;                      // as hwloc gives it (Convert)
  std::optional<std::string> engine_xml;  // this machine as it is: the cache is usable
};

// This machine's topology: from its cache entry when that is current
// (topology_cache.h), without starting hwloc, else discovered live and kept
// for the next launch.
StatusOr<LocalTopology> LoadLocal() {
  const std::optional<std::string> cache = TopologyCachePath();
  if (cache) {
    if (std::optional<CachedTopology> entry = ReadCachedTopology(*cache)) {
      EngineXmlCacheEntry() = *cache;
      return LocalTopology{std::move(entry->host), std::move(entry->engine_xml)};
    }
    // An entry of ours that is there but does not read back (cut short,
    // edited, corrupt) is dropped, said once, and rebuilt below.
    if (DropCachedTopology(*cache)) {
      std::cerr << "gpulaunch: warning: the topology cache entry " << *cache
                << " could not be read back; dropped it, discovering this host again\n";
    }
  }
  EngineXmlCacheEntry().reset();
  GL_ASSIGN_OR_RETURN(TopologyPtr topo, Open());
  // The OpenGL and OpenCL plugins add only OS devices this launcher does not
  // read (GPUs come from their PCI devices, names and UUIDs from NVML), and
  // they are the slow part of I/O discovery: the first probes X displays, the
  // second initialises every installed OpenCL driver. HWLOC_COMPONENTS, when
  // set, still decides.
  for (const char* plugin : {"gl", "opencl"}) {
    hwloc_topology_set_components(topo.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, plugin);
  }
  if (hwloc_topology_load(topo.get()) != 0) return Internal("hwloc could not read this machine's topology");
  LocalTopology local{Convert(topo.get()), std::nullopt};
  if (cache) {
    local.engine_xml = ExportXml(topo.get(), HWLOC_TOPOLOGY_EXPORT_XML_FLAG_V1);
    if (local.engine_xml) StoreCachedTopology(*cache, CachedTopology{local.host, *local.engine_xml});
  }
  return local;
}

}  // namespace

void SkipUnusedHwlocPlugins() {
  if (HasEnv("HWLOC_PLUGINS_BLACKLIST") || HasEnv("HWLOC_COMPONENTS")) return;
  SetEnvForThisProcessAndEngine("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl");
}

StatusOr<HostTopology> DiscoverLocalHost() {
  GL_ASSIGN_OR_RETURN(LocalTopology local, LoadLocal());
  HostTopology host = std::move(local.host);
  EngineXmlOfThisMachine() = std::move(local.engine_xml);
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) == 0) host.hostname = name;
  // Link speeds from sysfs: InfiniBand "rate" ("100 Gb/sec (4X EDR)"), else
  // the net device's "speed" (Mb/s).
  for (Nic& n : host.nics) {
    const auto colon = n.name.find(':');
    const std::string dev = n.name.substr(0, colon);
    const std::string port = colon == std::string::npos ? "1" : n.name.substr(colon + 1);
    std::ifstream rate("/sys/class/infiniband/" + dev + "/ports/" + port + "/rate");
    std::ifstream speed("/sys/class/net/" + dev + "/speed");
    double gbit = 0, mbit = 0;
    if (rate >> gbit) n.gbps = gbit / 8;
    else if (speed >> mbit && mbit > 0) n.gbps = mbit / 8000;
  }
  // Keep only NICs UCX can drive (ucx_info -d), when UCX is installed.
  if (!host.nics.empty()) {
    if (const auto ucx = QueryUcxDevices()) {
      std::erase_if(host.nics, [&](const Nic& n) { return !ucx->count(n.name); });
    }
  }
  // NVML knows UUIDs and memory that Debian's hwloc (no NVML plugin) lacks.
  const std::vector<NvmlGpu> nvml = QueryNvmlGpus();
  for (const NvmlGpu& n : nvml) {
    for (Gpu& g : host.gpus) {
      if (g.pci_bus_id != n.pci_bus_id) continue;
      g.uuid = n.uuid;
      g.model = n.name;
      g.memory_bytes = n.memory_bytes;
    }
  }
  // Where Slurm's tree puts this host, when this process runs in a step.
  host.slurm_topology_addr = EnvOr("SLURM_TOPOLOGY_ADDR", "");
  host.slurm_topology_pattern = EnvOr("SLURM_TOPOLOGY_ADDR_PATTERN", "");
  return host;
}

StatusOr<HostTopology> LoadHwlocXmlFile(const std::string& path) {
  GL_ASSIGN_OR_RETURN(std::string xml, ReadTextFile(path, "topology file"));
  return LoadHwlocXmlText(xml, path);
}

namespace {

// Where an XML text stops being well-formed: "line N: why", or "" when it is.
// hwloc's own parser message goes to stderr without the file; this names the
// line for the user.
std::string XmlStructureError(const std::string& xml) {
  std::vector<std::pair<std::string, int>> open;  // element name, line
  int line = 1;
  for (size_t i = 0; i < xml.size(); ++i) {
    if (xml[i] == '\n') ++line;
    if (xml[i] != '<') continue;
    const int start_line = line;
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) return "line " + std::to_string(start_line) + ": '<' is never closed by '>'";
    for (size_t k = i; k < end; ++k) line += xml[k] == '\n';
    const std::string tag = xml.substr(i + 1, end - i - 1);
    i = end;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1, tag.find_first_of(" \t\r\n") - 1);
      if (open.empty() || open.back().first != name) {
        return "line " + std::to_string(start_line) + ": </" + name + "> closes " +
               (open.empty() ? std::string("nothing") :
                               "<" + open.back().first + "> opened on line " + std::to_string(open.back().second));
      }
      open.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;  // <empty/>
    open.push_back({tag.substr(0, tag.find_first_of(" \t\r\n")), start_line});
  }
  if (!open.empty()) {
    return "line " + std::to_string(open.back().second) + ": <" + open.back().first + "> is never closed";
  }
  return "";
}

}  // namespace

StatusOr<HostTopology> LoadHwlocXmlText(const std::string& xml, const std::string& origin) {
  if (const std::string why = XmlStructureError(xml); !why.empty()) {
    return InvalidArgument(origin + ":" + why.substr(5) + "; re-export it with `lstopo-no-graphics --of xml FILE`");
  }
  if (xml.find("<topology") == std::string::npos) {
    return InvalidArgument(origin + ":1: not an hwloc XML topology (no <topology> element); export one with "
                           "`lstopo-no-graphics --of xml FILE`");
  }
  GL_ASSIGN_OR_RETURN(TopologyPtr topo, Open());
  if (hwloc_topology_set_xmlbuffer(topo.get(), xml.data(), static_cast<int>(xml.size()) + 1) != 0 ||
      hwloc_topology_load(topo.get()) != 0) {
    return InvalidArgument(origin + ": hwloc cannot load this XML (its parser message, if any, is above); "
                           "re-export it with `lstopo-no-graphics --of xml FILE`");
  }
  HostTopology host = Convert(topo.get());
  if (host.cores.empty()) return InvalidArgument(origin + ": the topology has no cores or PUs");
  // gpulaunch-probe appends the devices UCX accepts on that host.
  static const std::string kUcxMarker = "<!-- gpulaunch-ucx-devices:";
  if (const auto at = xml.find(kUcxMarker); at != std::string::npos) {
    const auto end = xml.find("-->", at);
    std::istringstream words(xml.substr(at + kUcxMarker.size(), end - at - kUcxMarker.size()));
    std::set<std::string> ucx;
    for (std::string w; words >> w;) ucx.insert(w);
    std::erase_if(host.nics, [&](const Nic& n) { return !ucx.count(n.name); });
  }
  static const std::string kSlurmMarker = "<!-- gpulaunch-slurm-topology:";
  if (const auto at = xml.find(kSlurmMarker); at != std::string::npos) {
    const auto end = xml.find("-->", at);
    std::istringstream words(xml.substr(at + kSlurmMarker.size(), end - at - kSlurmMarker.size()));
    words >> host.slurm_topology_addr >> host.slurm_topology_pattern;
  }
  return host;
}

std::optional<std::string> LocalTopologyXmlForEngine() { return EngineXmlOfThisMachine(); }

std::optional<std::string> LocalTopologyCacheEntry() { return EngineXmlCacheEntry(); }

StatusOr<std::string> ExportLocalHwlocXml() {
  GL_ASSIGN_OR_RETURN(TopologyPtr topo, Open());
  if (hwloc_topology_load(topo.get()) != 0) return Internal("hwloc could not read this machine's topology");
  std::optional<std::string> xml = ExportXml(topo.get(), 0);
  if (!xml) return Internal("hwloc XML export failed");
  return *xml;
}

}  // namespace gpulaunch
