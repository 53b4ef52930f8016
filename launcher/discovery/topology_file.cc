#include "launcher/discovery/topology_file.h"

#include "common/strings.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/nccl_topology.h"

namespace gpulaunch {

StatusOr<HostTopology> LoadTopologyFile(const std::string& path) {
  GL_ASSIGN_OR_RETURN(std::string xml, ReadTextFile(path, "topology file"));
  return LoadTopologyText(xml, path);
}

StatusOr<HostTopology> LoadTopologyText(const std::string& xml, const std::string& origin) {
  if (LooksLikeNcclTopology(xml)) return LoadNcclTopologyText(xml, origin);
  return LoadHwlocXmlText(xml, origin);
}

}  // namespace gpulaunch
