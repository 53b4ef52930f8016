// The baseline of `gpulaunch check --save` and `--compare` (preflight.h):
// every reachable host's facts, and what changed since.
#include <set>

#include "common/json.h"
#include "launcher/check/preflight.h"

namespace gpulaunch {

std::string BaselineJson(const std::vector<HostProbe>& probes) {
  Json j = Json::Object();
  j.Set("format", "gpulaunch-check-baseline/v1");
  Json hosts = Json::Array();
  for (const HostProbe& p : probes)
    if (p.facts) hosts.Push(HostFactsToJson(*p.facts));
  j.Set("hosts", hosts);
  return j.Write() + "\n";
}

StatusOr<std::map<std::string, HostFacts>> ParseBaseline(const std::string& text, const std::string& origin) {
  GL_ASSIGN_OR_RETURN(Json j, ParseJson(text, origin));
  const Json* format = j.is(Json::Type::kObject) ? j.Find("format") : nullptr;
  if (!format || !format->is(Json::Type::kString) || format->AsString() != "gpulaunch-check-baseline/v1") {
    return InvalidArgument(origin + ": not a baseline written by 'gpulaunch check --save' "
                           "(format gpulaunch-check-baseline/v1)");
  }
  std::map<std::string, HostFacts> out;
  const Json* hosts = j.Find("hosts");
  if (!hosts || !hosts->is(Json::Type::kArray)) return InvalidArgument(origin + ": \"hosts\" must be an array");
  for (const Json& h : hosts->items()) {
    GL_ASSIGN_OR_RETURN(HostFacts f, HostFactsFromJson(h, origin + ":" + std::to_string(h.line())));
    out[f.host] = std::move(f);
  }
  return out;
}

std::vector<std::string> CompareWithBaseline(const std::map<std::string, HostFacts>& baseline,
                                             const std::vector<HostProbe>& probes) {
  std::vector<std::string> out;
  auto flat = [](const HostFacts& f) {
    std::map<std::string, std::string> m = {{"gpulaunch_version", f.gpulaunch_version},
                                            {"mpi_version", f.mpi_version},
                                            {"ucx_version", f.ucx_version},
                                            {"driver_version", f.driver_version},
                                            {"gpus", std::to_string(f.gpus.size())}};
    for (const GpuFacts& g : f.gpus) m["gpu " + g.bus_id] = g.uuid;
    for (const NetInterfaceFacts& n : f.interfaces) {
      m["mtu " + n.name] = std::to_string(n.mtu);
      m["state " + n.name] = n.state;
      m["speed " + n.name] = std::to_string(n.speed_mbps);
    }
    for (const auto& [k, v] : f.recorded) m[k] = v;
    return m;
  };
  std::set<std::string> seen;
  for (const HostProbe& p : probes) {
    seen.insert(p.host);
    auto base = baseline.find(p.host);
    if (base == baseline.end()) {
      out.push_back(p.host + ": not in the baseline");
      continue;
    }
    if (!p.facts) continue;  // unreachable: the checks say so
    const auto was = flat(base->second), now = flat(*p.facts);
    for (const auto& [k, v] : was) {
      auto it = now.find(k);
      if (it == now.end()) out.push_back(p.host + ": " + k + " " + v + " -> gone");
      else if (it->second != v) out.push_back(p.host + ": " + k + " " + v + " -> " + it->second);
    }
    for (const auto& [k, v] : now)
      if (!was.count(k)) out.push_back(p.host + ": " + k + " new: " + v);
  }
  for (const auto& [host, facts] : baseline)
    if (!seen.count(host)) out.push_back(host + ": in the baseline, not checked now");
  return out;
}

}  // namespace gpulaunch
