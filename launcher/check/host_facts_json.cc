// HostFacts as JSON: what the probe prints and `check --save` keeps, and
// reading it back (unknown or missing fields are left at their defaults, so
// older baselines still load).
#include "launcher/check/host_facts.h"

namespace gpulaunch {
namespace {

Json Strings(const std::vector<std::string>& v) {
  Json a = Json::Array();
  for (const std::string& s : v) a.Push(s);
  return a;
}

std::string Text(const Json& j, const std::string& key) {
  const Json* v = j.Find(key);
  return v && v->is(Json::Type::kString) ? v->AsString() : "";
}

double Number(const Json& j, const std::string& key, double fallback = 0) {
  const Json* v = j.Find(key);
  return v && v->is(Json::Type::kNumber) ? v->AsNumber() : fallback;
}

}  // namespace

Json HostFactsToJson(const HostFacts& f) {
  Json j = Json::Object();
  j.Set("host", f.host);
  j.Set("hostname", f.hostname);
  j.Set("time_s", f.time_s);
  j.Set("gpulaunch_version", f.gpulaunch_version);
  j.Set("mpi_version", f.mpi_version);
  j.Set("ucx_version", f.ucx_version);
  j.Set("driver_version", f.driver_version);
  Json nics = Json::Array();
  for (const NetInterfaceFacts& n : f.interfaces) {
    Json e = Json::Object();
    e.Set("name", n.name);
    e.Set("state", n.state);
    e.Set("mtu", n.mtu);
    e.Set("speed_mbps", n.speed_mbps);
    e.Set("ipv4", Strings(n.ipv4));
    nics.Push(e);
  }
  j.Set("interfaces", nics);
  j.Set("hwloc_gpus", f.hwloc_gpus);
  j.Set("nvml", f.nvml);
  Json gpus = Json::Array();
  for (const GpuFacts& g : f.gpus) {
    Json e = Json::Object();
    e.Set("bus_id", g.bus_id);
    e.Set("uuid", g.uuid);
    e.Set("name", g.name);
    e.Set("memory_bytes", static_cast<double>(g.memory_bytes));
    e.Set("temperature_c", g.temperature_c);
    e.Set("ecc_uncorrected", static_cast<double>(g.ecc_uncorrected));
    gpus.Push(e);
  }
  j.Set("gpus", gpus);
  Json gpu_nics = Json::Array();
  for (const GpuNicFacts& g : f.gpu_nics) {
    Json e = Json::Object();
    e.Set("gpu", g.gpu);
    e.Set("nic", g.nic);
    e.Set("path", g.path);
    gpu_nics.Push(e);
  }
  j.Set("gpu_nics", gpu_nics);
  j.Set("free_ports", f.free_ports);
  j.Set("tmp_dir", f.tmp_dir);
  j.Set("tmp_error", f.tmp_error);
  j.Set("binary", f.binary);
  j.Set("binary_error", f.binary_error);
  j.Set("binary_mpi", f.binary_mpi);
  Json recorded = Json::Object();
  for (const auto& [k, v] : f.recorded) recorded.Set(k, v);
  j.Set("recorded", recorded);
  return j;
}

StatusOr<HostFacts> HostFactsFromJson(const Json& j, const std::string& origin) {
  if (!j.is(Json::Type::kObject) || Text(j, "host").empty()) {
    return InvalidArgument(origin + ": not a host's facts (an object with \"host\")");
  }
  HostFacts f;
  f.host = Text(j, "host");
  f.hostname = Text(j, "hostname");
  f.time_s = Number(j, "time_s");
  f.gpulaunch_version = Text(j, "gpulaunch_version");
  f.mpi_version = Text(j, "mpi_version");
  f.ucx_version = Text(j, "ucx_version");
  f.driver_version = Text(j, "driver_version");
  if (const Json* nics = j.Find("interfaces"); nics && nics->is(Json::Type::kArray)) {
    for (const Json& e : nics->items()) {
      NetInterfaceFacts n;
      n.name = Text(e, "name");
      n.state = Text(e, "state");
      n.mtu = static_cast<int>(Number(e, "mtu"));
      n.speed_mbps = static_cast<int>(Number(e, "speed_mbps", -1));
      if (const Json* ips = e.Find("ipv4"); ips && ips->is(Json::Type::kArray)) {
        for (const Json& ip : ips->items())
          if (ip.is(Json::Type::kString)) n.ipv4.push_back(ip.AsString());
      }
      f.interfaces.push_back(std::move(n));
    }
  }
  f.hwloc_gpus = static_cast<int>(Number(j, "hwloc_gpus"));
  const Json* nvml = j.Find("nvml");
  f.nvml = nvml && nvml->is(Json::Type::kBool) && nvml->AsBool();
  if (const Json* gpus = j.Find("gpus"); gpus && gpus->is(Json::Type::kArray)) {
    for (const Json& e : gpus->items()) {
      GpuFacts g;
      g.bus_id = Text(e, "bus_id");
      g.uuid = Text(e, "uuid");
      g.name = Text(e, "name");
      g.memory_bytes = static_cast<uint64_t>(Number(e, "memory_bytes"));
      g.temperature_c = static_cast<int>(Number(e, "temperature_c", -1));
      g.ecc_uncorrected = static_cast<int64_t>(Number(e, "ecc_uncorrected", -1));
      f.gpus.push_back(std::move(g));
    }
  }
  if (const Json* gpu_nics = j.Find("gpu_nics"); gpu_nics && gpu_nics->is(Json::Type::kArray)) {
    for (const Json& e : gpu_nics->items()) f.gpu_nics.push_back({Text(e, "gpu"), Text(e, "nic"), Text(e, "path")});
  }
  f.free_ports = static_cast<int>(Number(j, "free_ports"));
  f.tmp_dir = Text(j, "tmp_dir");
  f.tmp_error = Text(j, "tmp_error");
  f.binary = Text(j, "binary");
  f.binary_error = Text(j, "binary_error");
  f.binary_mpi = Text(j, "binary_mpi");
  if (const Json* r = j.Find("recorded"); r && r->is(Json::Type::kObject)) {
    for (const auto& [k, v] : r->members())
      if (v.is(Json::Type::kString)) f.recorded[k] = v.AsString();
  }
  return f;
}

}  // namespace gpulaunch
