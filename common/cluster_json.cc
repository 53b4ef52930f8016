#include "common/cluster_json.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "common/json.h"
#include "common/json_reader.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

// Bounds on what a real machine has, so nonsense is refused, not modelled.
constexpr int64_t kMaxIndex = 1 << 20;      // PUs, cores, NUMA nodes, packages
constexpr double kMaxGbps = 1e6;            // a link or NIC, in Gb/s
constexpr double kMaxGpuBytes = 1ull << 50;  // 1 PiB of GPU memory

Json Ids(const std::vector<int>& ids) { return Json(FormatIdList(ids)); }

Json Strings(const std::vector<std::string>& v) {
  Json a = Json::Array();
  for (const auto& s : v) a.Push(Json(s));
  return a;
}

using Reader = JsonReader;

// Packages and NUMA nodes share one shape: {"os_index": N, "pus": "0-3,8"}.
template <typename PuSet>
Json PuSets(const std::vector<PuSet>& sets) {
  Json a = Json::Array();
  for (const PuSet& set : sets) {
    Json& o = a.Push(Json::Object());
    o.Set("os_index", set.os_index);
    o.Set("pus", Ids(set.pus));
  }
  return a;
}

template <typename PuSet>
Status ReadPuSets(const Reader& rd, const Json& host, const std::string& key, std::vector<PuSet>* out) {
  GL_ASSIGN_OR_RETURN(const Json* arr, rd.Field(host, key, Json::Type::kArray));
  for (const Json& item : arr->items()) {
    PuSet set;
    GL_ASSIGN_OR_RETURN(int64_t os, rd.Int(item, "os_index", 0, kMaxIndex));
    GL_ASSIGN_OR_RETURN(set.pus, rd.IdList(item, "pus"));
    set.os_index = static_cast<int>(os);
    for (const PuSet& other : *out) {
      if (other.os_index == set.os_index) {
        return rd.Error(item, "\"" + key + "\": os_index " + std::to_string(os) + " appears twice");
      }
    }
    out->push_back(std::move(set));
  }
  return Status::Ok();
}

// A NUMA node or package a core, GPU or NIC names must be one the host has,
// or -1: not known (hwloc leaves some cores of real machines outside every
// NUMA node, and devices of unknown locality).
template <typename PuSet>
Status CheckKnown(const Reader& rd, const Json& obj, const std::string& key, int id, const std::vector<PuSet>& sets) {
  if (id == -1) return Status::Ok();
  for (const PuSet& s : sets)
    if (s.os_index == id) return Status::Ok();
  return rd.Error(*obj.Find(key), "\"" + key + "\" is " + std::to_string(id) + ", which this host does not have");
}

// A host's "cores", after its packages and NUMA nodes (`t`), which they name.
Status ReadCores(const Reader& rd, const Json& h, HostTopology& t) {
  GL_ASSIGN_OR_RETURN(const Json* cores, rd.Field(h, "cores", Json::Type::kArray));
  std::set<int> pus_seen;
  for (const Json& c : cores->items()) {
    Core core;
    GL_ASSIGN_OR_RETURN(int64_t idx, rd.Int(c, "index", 0, kMaxIndex));
    GL_ASSIGN_OR_RETURN(core.pus, rd.IdList(c, "pus"));
    GL_ASSIGN_OR_RETURN(int64_t numa, rd.Int(c, "numa", -1, kMaxIndex));
    GL_ASSIGN_OR_RETURN(int64_t package, rd.Int(c, "package", -1, kMaxIndex));
    core.logical_index = static_cast<int>(idx);
    core.numa_node = static_cast<int>(numa);
    core.package = static_cast<int>(package);
    GL_RETURN_IF_ERROR(CheckKnown(rd, c, "numa", core.numa_node, t.numa_nodes));
    GL_RETURN_IF_ERROR(CheckKnown(rd, c, "package", core.package, t.packages));
    for (int pu : core.pus) {
      if (!pus_seen.insert(pu).second) return rd.Error(*c.Find("pus"), "PU " + std::to_string(pu) + " is in two cores");
    }
    t.cores.push_back(core);
  }
  return Status::Ok();
}

StatusOr<Gpu> ReadGpu(const Reader& rd, const Json& g, const HostTopology& t) {
  Gpu gpu;
  gpu.index = static_cast<int>(t.gpus.size());
  GL_ASSIGN_OR_RETURN(gpu.pci_bus_id, rd.Str(g, "pci_bus_id"));
  GL_ASSIGN_OR_RETURN(gpu.vendor, rd.Str(g, "vendor"));
  GL_ASSIGN_OR_RETURN(gpu.model, rd.Str(g, "model"));
  GL_ASSIGN_OR_RETURN(gpu.uuid, rd.Str(g, "uuid"));
  GL_ASSIGN_OR_RETURN(double mem, rd.Amount(g, "memory_bytes", kMaxGpuBytes, "bytes"));
  GL_ASSIGN_OR_RETURN(int64_t numa_node, rd.Int(g, "numa_node", -1, kMaxIndex));
  GL_RETURN_IF_ERROR(CheckKnown(rd, g, "numa_node", static_cast<int>(numa_node), t.numa_nodes));
  GL_ASSIGN_OR_RETURN(gpu.local_pus, rd.IdList(g, "local_pus"));
  GL_ASSIGN_OR_RETURN(gpu.pci_path, rd.StrList(g, "pci_path"));
  gpu.memory_bytes = static_cast<uint64_t>(mem);
  gpu.numa_node = static_cast<int>(numa_node);
  return gpu;
}

StatusOr<Nic> ReadNic(const Reader& rd, const Json& n, const HostTopology& t) {
  Nic nic;
  GL_ASSIGN_OR_RETURN(nic.name, rd.Str(n, "name"));
  GL_ASSIGN_OR_RETURN(nic.kind, rd.Str(n, "kind"));
  GL_ASSIGN_OR_RETURN(nic.pci_bus_id, rd.Str(n, "pci_bus_id"));
  GL_ASSIGN_OR_RETURN(int64_t numa_node, rd.Int(n, "numa_node", -1, kMaxIndex));
  GL_RETURN_IF_ERROR(CheckKnown(rd, n, "numa_node", static_cast<int>(numa_node), t.numa_nodes));
  if (n.Find("local_pus")) {  // optional: files written before it was recorded lack it
    GL_ASSIGN_OR_RETURN(nic.local_pus, rd.IdList(n, "local_pus"));
  }
  GL_ASSIGN_OR_RETURN(nic.pci_path, rd.StrList(n, "pci_path"));
  GL_ASSIGN_OR_RETURN(nic.gbps, rd.Amount(n, "gbps", kMaxGbps, "Gb/s"));
  nic.numa_node = static_cast<int>(numa_node);
  return nic;
}

// "gpu_link_gbps": gpus x gpus numbers, or none.
Status ReadGpuLinks(const Reader& rd, const Json& h, HostTopology& t) {
  GL_ASSIGN_OR_RETURN(const Json* links, rd.Field(h, "gpu_link_gbps", Json::Type::kArray));
  for (const Json& v : links->items()) {
    if (!v.is(Json::Type::kNumber) || !(v.AsNumber() >= 0 && v.AsNumber() <= kMaxGbps)) {
      return rd.Error(v, "\"gpu_link_gbps\" must hold numbers of Gb/s from 0 to 1e+06");
    }
    t.gpu_link_gbps.push_back(v.AsNumber());
  }
  if (!t.gpu_link_gbps.empty() && t.gpu_link_gbps.size() != t.gpus.size() * t.gpus.size()) {
    return rd.Error(*links, "\"gpu_link_gbps\" must have gpus x gpus entries");
  }
  return Status::Ok();
}

StatusOr<HostTopology> ReadHost(const Reader& rd, const Json& h) {
  HostTopology t;
  GL_RETURN_IF_ERROR(ReadPuSets(rd, h, "packages", &t.packages));
  GL_RETURN_IF_ERROR(ReadPuSets(rd, h, "numa_nodes", &t.numa_nodes));
  GL_RETURN_IF_ERROR(ReadCores(rd, h, t));
  GL_ASSIGN_OR_RETURN(const Json* gpus, rd.Field(h, "gpus", Json::Type::kArray));
  for (const Json& g : gpus->items()) {
    GL_ASSIGN_OR_RETURN(Gpu gpu, ReadGpu(rd, g, t));
    t.gpus.push_back(std::move(gpu));
  }
  GL_ASSIGN_OR_RETURN(const Json* nics, rd.Field(h, "nics", Json::Type::kArray));
  for (const Json& n : nics->items()) {
    GL_ASSIGN_OR_RETURN(Nic nic, ReadNic(rd, n, t));
    t.nics.push_back(std::move(nic));
  }
  GL_RETURN_IF_ERROR(ReadGpuLinks(rd, h, t));
  return t;
}

}  // namespace

std::string DumpClusterJson(const ClusterTopology& c) {
  Json root = Json::Object();
  root.Set("schema", "gpulaunch-cluster/v1");
  root.Set("nic_gbps", c.nic_gbps);
  Json& switches = root.Set("switches", Json::Array());
  for (const NetworkSwitch& s : c.network.switches()) {
    Json& j = switches.Push(Json::Object());
    j.Set("name", s.name);
    j.Set("nodes", Strings(s.nodes));
    j.Set("switches", Strings(s.children));
    if (s.link_speed) j.Set("link_speed", static_cast<double>(*s.link_speed));
  }
  Json& hosts = root.Set("hosts", Json::Array());
  for (const ClusterHost& h : c.hosts) {
    Json& j = hosts.Push(Json::Object());
    j.Set("name", h.name);
    j.Set("healthy", h.healthy);
    std::vector<int> busy;
    for (size_t g = 0; g < h.gpu_busy.size(); ++g)
      if (h.gpu_busy[g]) busy.push_back(static_cast<int>(g));
    j.Set("busy_gpus", Ids(busy));
    Json& cores = j.Set("cores", Json::Array());
    for (const Core& core : h.topology->cores) {
      Json& cj = cores.Push(Json::Object());
      cj.Set("index", core.logical_index);
      cj.Set("pus", Ids(core.pus));
      cj.Set("numa", core.numa_node);
      cj.Set("package", core.package);
    }
    j.Set("packages", PuSets(h.topology->packages));
    j.Set("numa_nodes", PuSets(h.topology->numa_nodes));
    Json& gpus = j.Set("gpus", Json::Array());
    for (const Gpu& g : h.topology->gpus) {
      Json& gj = gpus.Push(Json::Object());
      gj.Set("pci_bus_id", g.pci_bus_id);
      gj.Set("vendor", g.vendor);
      gj.Set("model", g.model);
      gj.Set("uuid", g.uuid);
      gj.Set("memory_bytes", static_cast<double>(g.memory_bytes));
      gj.Set("numa_node", g.numa_node);
      gj.Set("local_pus", Ids(g.local_pus));
      gj.Set("pci_path", Strings(g.pci_path));
    }
    Json& nics = j.Set("nics", Json::Array());
    for (const Nic& n : h.topology->nics) {
      Json& nj = nics.Push(Json::Object());
      nj.Set("name", n.name);
      nj.Set("kind", n.kind);
      nj.Set("pci_bus_id", n.pci_bus_id);
      nj.Set("numa_node", n.numa_node);
      nj.Set("local_pus", Ids(n.local_pus));
      nj.Set("pci_path", Strings(n.pci_path));
      nj.Set("gbps", n.gbps);
    }
    Json& links = j.Set("gpu_link_gbps", Json::Array());
    for (double v : h.topology->gpu_link_gbps) links.Push(Json(v));
  }
  return root.Write();
}

StatusOr<ClusterTopology> LoadClusterJson(const std::string& text, const std::string& origin) {
  GL_ASSIGN_OR_RETURN(Json root, ParseJson(text, origin));
  Reader rd(origin);
  GL_ASSIGN_OR_RETURN(std::string schema, rd.Str(root, "schema"));
  if (schema != "gpulaunch-cluster/v1") {
    return rd.Error(*root.Find("schema"), "unknown schema \"" + schema + "\" (this gpulaunch reads gpulaunch-cluster/v1)");
  }
  ClusterTopology c;
  GL_ASSIGN_OR_RETURN(c.nic_gbps, rd.Amount(root, "nic_gbps", kMaxGbps, "Gb/s"));
  GL_ASSIGN_OR_RETURN(const Json* switches, rd.Field(root, "switches", Json::Type::kArray));
  std::vector<NetworkSwitch> sw;
  for (const Json& s : switches->items()) {
    NetworkSwitch n;
    GL_ASSIGN_OR_RETURN(n.name, rd.Str(s, "name"));
    GL_ASSIGN_OR_RETURN(n.nodes, rd.StrList(s, "nodes"));
    GL_ASSIGN_OR_RETURN(n.children, rd.StrList(s, "switches"));
    if (s.Find("link_speed")) {
      GL_ASSIGN_OR_RETURN(double speed, rd.Amount(s, "link_speed", 1e15, "a LinkSpeed"));
      n.link_speed = static_cast<int64_t>(speed);
    }
    sw.push_back(std::move(n));
  }
  GL_ASSIGN_OR_RETURN(c.network, NetworkTree::Build(std::move(sw), origin));
  GL_ASSIGN_OR_RETURN(const Json* hosts, rd.Field(root, "hosts", Json::Type::kArray));
  if (hosts->items().empty()) return rd.Error(*hosts, "no hosts: \"hosts\" must list at least one");
  std::set<std::string> names;
  for (const Json& h : hosts->items()) {
    ClusterHost host;
    GL_ASSIGN_OR_RETURN(host.name, rd.Str(h, "name"));
    if (host.name.empty()) return rd.Error(*h.Find("name"), "a host has an empty \"name\"");
    if (!names.insert(host.name).second) {
      return rd.Error(*h.Find("name"), "host \"" + host.name + "\" appears twice");
    }
    GL_ASSIGN_OR_RETURN(const Json* healthy, rd.Field(h, "healthy", Json::Type::kBool));
    host.healthy = healthy->AsBool();
    GL_ASSIGN_OR_RETURN(host.topology, ReadHost(rd, h));
    GL_ASSIGN_OR_RETURN(std::vector<int> busy, rd.IdList(h, "busy_gpus"));
    if (!busy.empty()) {
      host.gpu_busy.assign(host.topology->gpus.size(), false);
      for (int g : busy) {
        if (g >= static_cast<int>(host.gpu_busy.size())) return rd.Error(h, "busy GPU " + std::to_string(g) + " does not exist");
        host.gpu_busy[g] = true;
      }
    }
    c.hosts.push_back(std::move(host));
  }
  return c;
}

StatusOr<ClusterTopology> ReadClusterFile(const std::string& path) {
  GL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "cluster file"));
  return LoadClusterJson(text, path);
}

std::string DumpHostJson(const HostTopology& host) {
  ClusterTopology one;
  one.hosts.push_back(ClusterHost{"host", SharedTopology(host)});
  return DumpClusterJson(one);
}

StatusOr<HostTopology> LoadHostJson(const std::string& text, const std::string& origin) {
  GL_ASSIGN_OR_RETURN(ClusterTopology cluster, LoadClusterJson(text, origin));
  if (cluster.hosts.size() != 1) {
    return InvalidArgument(origin + ": holds " + std::to_string(cluster.hosts.size()) +
                           " hosts where one host's topology was expected");
  }
  return *cluster.hosts.front().topology;
}

}  // namespace gpulaunch
