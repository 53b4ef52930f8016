#include "launcher/check/preflight.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/strings.h"

namespace gpulaunch {
namespace {

const char* const kChecks[] = {"reach",   "clock", "dns",   "versions", "mtu",   "nic",
                               "gpu-nic", "gpus",  "ports", "tmp",      "binary"};

std::string ShortName(const std::string& name) { return name.substr(0, name.find('.')); }

// The most common value among hosts that have one (ties: the first host's).
struct Majority {
  std::string value;
  std::vector<std::string> hosts;  // hosts that hold it
};
Majority MajorityOf(const std::vector<std::pair<std::string, std::string>>& host_values) {
  std::map<std::string, std::vector<std::string>> by_value;
  std::vector<std::string> order;
  for (const auto& [host, value] : host_values) {
    if (!by_value.count(value)) order.push_back(value);
    by_value[value].push_back(host);
  }
  Majority m;
  for (const std::string& v : order) {
    if (by_value[v].size() > m.hosts.size()) m = Majority{v, by_value[v]};
  }
  return m;
}

// Fails `out` when `value` differs from the majority's.
void Compare(const std::string& value, const Majority& m, const std::string& what, CheckOutcome& out) {
  if (value == m.value || m.hosts.empty()) return;
  out.state = CheckState::kFail;
  out.detail += (out.detail.empty() ? "" : "; ") + what + " " + value + " here, " + m.value + " on " +
                Join(m.hosts, ", ");
}

const NetInterfaceFacts* DataInterface(const HostProbe& p) {
  if (!p.facts) return nullptr;
  for (const NetInterfaceFacts& n : p.facts->interfaces) {
    for (const std::string& ip : n.ipv4)
      if (std::find(p.addresses.begin(), p.addresses.end(), ip) != p.addresses.end()) return &n;
  }
  return nullptr;
}

// The path types of each GPU's nearest NIC, in GPU order: "PIX,PIX,SYS,SYS".
std::string GpuNicSignature(const HostFacts& f) {
  std::vector<std::string> paths;
  for (const GpuNicFacts& g : f.gpu_nics) paths.push_back(g.path);
  return Join(paths, ",");
}

// gpu-nic: every GPU's nearest NIC is as near as on most hosts with as many
// GPUs (a NIC that is missing, dead or in another slot shows here first).
CheckOutcome GpuNicCheck(const HostFacts& f, const Majority& m) {
  if (f.hwloc_gpus == 0 && f.gpu_nics.empty()) return {"gpu-nic", CheckState::kSkip, "no GPUs"};
  if (f.gpu_nics.empty()) return {"gpu-nic", CheckState::kSkip, "no data NICs"};
  const std::string mine = GpuNicSignature(f);
  if (!m.hosts.empty() && mine != m.value) {
    return {"gpu-nic", CheckState::kFail,
            "nearest NICs per GPU " + mine + " here, " + m.value + " on " + Join(m.hosts, ", ") +
                ": is a NIC missing, down or in another slot?"};
  }
  std::vector<std::string> each;
  for (const GpuNicFacts& g : f.gpu_nics) each.push_back(g.gpu + " -> " + g.nic + " " + g.path);
  return {"gpu-nic", CheckState::kPass, Join(each, ", ")};
}

std::string Seconds(double s) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.2f s", s);
  return buf;
}

}  // namespace

bool PreflightHost::ok() const {
  return std::none_of(checks.begin(), checks.end(), [](const CheckOutcome& c) { return c.state == CheckState::kFail; });
}

std::vector<PreflightHost> EvaluatePreflight(const std::vector<HostProbe>& probes, const PreflightOptions& o) {
  // What the majority of the reachable hosts has, per compared fact.
  std::vector<std::pair<std::string, std::string>> gl, mpi, ucx, driver, mtu, speed;
  // GPU-NIC nearness among hosts with as many GPUs (a mixed cluster is fine).
  std::map<size_t, std::vector<std::pair<std::string, std::string>>> gpu_nic;
  for (const HostProbe& p : probes) {
    if (!p.facts) continue;
    gl.emplace_back(p.host, p.facts->gpulaunch_version);
    mpi.emplace_back(p.host, p.facts->mpi_version);
    ucx.emplace_back(p.host, p.facts->ucx_version);
    driver.emplace_back(p.host, p.facts->driver_version);
    if (!p.facts->gpu_nics.empty()) {
      gpu_nic[p.facts->gpu_nics.size()].emplace_back(p.host, GpuNicSignature(*p.facts));
    }
    if (const NetInterfaceFacts* n = DataInterface(p)) {
      mtu.emplace_back(p.host, std::to_string(n->mtu));
      if (n->speed_mbps > 0) speed.emplace_back(p.host, std::to_string(n->speed_mbps));
    }
  }
  const Majority gl_m = MajorityOf(gl), mpi_m = MajorityOf(mpi), ucx_m = MajorityOf(ucx), driver_m = MajorityOf(driver),
                 mtu_m = MajorityOf(mtu), speed_m = MajorityOf(speed);

  std::vector<PreflightHost> out;
  for (const HostProbe& p : probes) {
    PreflightHost h;
    h.host = p.host;
    std::map<std::string, CheckOutcome> c;
    for (const char* name : kChecks) c[name] = CheckOutcome{name, CheckState::kPass, ""};
    if (!p.facts) {
      for (auto& [name, outcome] : c) outcome.state = CheckState::kSkip;
      c["reach"] = CheckOutcome{"reach", CheckState::kFail, p.error.empty() ? "no answer" : p.error};
    } else {
      const HostFacts& f = *p.facts;
      c["reach"].detail = "answered in " + std::to_string(static_cast<int>(std::lround((p.answered_s - p.asked_s) * 1000))) + " ms";
      // Clock: the host read its clock somewhere inside the probe's round trip.
      const double offset = f.time_s - (p.asked_s + p.answered_s) / 2;
      const double slack = (p.answered_s - p.asked_s) / 2;
      c["clock"].detail = "offset " + Seconds(offset) + " (within " + Seconds(slack).substr(1) + ")";
      if (std::fabs(offset) - slack > o.max_clock_skew_s) {
        c["clock"].state = CheckState::kFail;
        c["clock"].detail += ", over the " + Seconds(o.max_clock_skew_s).substr(1) + " allowed: synchronise it (chrony/NTP)";
      }
      // Names, both ways.
      if (p.addresses.empty()) {
        c["dns"] = CheckOutcome{"dns", CheckState::kFail, p.host + " does not resolve on the launch host"};
      } else if (p.reverse_name.empty()) {
        c["dns"] = CheckOutcome{"dns", CheckState::kFail, p.addresses.front() + " does not resolve back to a name"};
      } else if (ShortName(p.reverse_name) != ShortName(p.host) && ShortName(p.reverse_name) != ShortName(f.hostname) &&
                 !p.reverse_confirms) {
        c["dns"] = CheckOutcome{"dns", CheckState::kFail,
                                p.host + " -> " + p.addresses.front() + " -> " + p.reverse_name + ", not back to it"};
      } else {
        c["dns"].detail = p.host + " <-> " + p.addresses.front();
      }
      Compare(f.gpulaunch_version, gl_m, "gpulaunch", c["versions"]);
      Compare(f.mpi_version, mpi_m, "MPI", c["versions"]);
      Compare(f.ucx_version, ucx_m, "UCX", c["versions"]);
      Compare(f.driver_version, driver_m, "driver", c["versions"]);
      if (c["versions"].detail.empty()) c["versions"].detail = "UCX " + f.ucx_version + ", driver " + f.driver_version;
      if (const NetInterfaceFacts* n = DataInterface(p)) {
        c["mtu"].detail = n->name + " " + std::to_string(n->mtu);
        if (std::to_string(n->mtu) != mtu_m.value) {
          c["mtu"] = CheckOutcome{"mtu", CheckState::kFail,
                                  n->name + " MTU " + std::to_string(n->mtu) + " here, " + mtu_m.value + " on " +
                                      Join(mtu_m.hosts, ", ")};
        }
        const std::string rate = n->speed_mbps > 0 ? std::to_string(n->speed_mbps) + " Mb/s" : "speed unknown";
        c["nic"].detail = n->name + " " + n->state + ", " + rate;
        if (n->state != "up" && n->state != "unknown") {
          c["nic"].state = CheckState::kFail;
          c["nic"].detail = n->name + " is " + n->state;
        } else if (n->speed_mbps > 0 && !speed_m.hosts.empty() && std::to_string(n->speed_mbps) != speed_m.value) {
          c["nic"].state = CheckState::kFail;
          c["nic"].detail = n->name + " at " + rate + ", " + speed_m.value + " Mb/s on " + Join(speed_m.hosts, ", ");
        }
      } else {
        c["mtu"] = CheckOutcome{"mtu", CheckState::kSkip, "no interface holds its address"};
        c["nic"] = CheckOutcome{"nic", CheckState::kSkip, "no interface holds its address"};
      }
      c["gpu-nic"] = GpuNicCheck(f, MajorityOf(gpu_nic[f.gpu_nics.size()]));
      // GPUs.
      std::vector<std::string> gpu_problems;
      if (!f.nvml && f.hwloc_gpus > 0) {
        gpu_problems.push_back(std::to_string(f.hwloc_gpus) +
                               " NVIDIA GPUs on the PCI bus but NVML does not answer (is the driver loaded?)");
      }
      if (f.nvml && static_cast<int>(f.gpus.size()) < f.hwloc_gpus) {
        gpu_problems.push_back("NVML sees " + std::to_string(f.gpus.size()) + " of the " + std::to_string(f.hwloc_gpus) +
                               " GPUs on the PCI bus");
      }
      int hottest = -1;
      for (const GpuFacts& g : f.gpus) {
        hottest = std::max(hottest, g.temperature_c);
        if (g.temperature_c >= o.max_gpu_temperature_c) {
          gpu_problems.push_back(g.bus_id + " at " + std::to_string(g.temperature_c) + " C");
        }
        if (g.ecc_uncorrected > 0) {
          gpu_problems.push_back(g.bus_id + " has " + std::to_string(g.ecc_uncorrected) + " uncorrected ECC errors");
        }
      }
      if (!gpu_problems.empty()) {
        c["gpus"] = CheckOutcome{"gpus", CheckState::kFail, Join(gpu_problems, "; ")};
      } else if (f.gpus.empty()) {
        c["gpus"] = CheckOutcome{"gpus", CheckState::kSkip, "no GPUs"};
      } else {
        c["gpus"].detail = std::to_string(f.gpus.size()) + " GPUs" +
                           (hottest >= 0 ? ", hottest " + std::to_string(hottest) + " C" : "") + ", no ECC errors";
      }
      const int ports = kJobPortLast - kJobPortFirst + 1;
      c["ports"].detail = std::to_string(f.free_ports) + " of " + std::to_string(ports) + " job ports free";
      if (f.free_ports == 0) c["ports"].state = CheckState::kFail;
      c["tmp"].detail = f.tmp_dir;
      if (!f.tmp_error.empty()) c["tmp"] = CheckOutcome{"tmp", CheckState::kFail, f.tmp_error};
      if (!o.binary_given) {
        c["binary"] = CheckOutcome{"binary", CheckState::kSkip, "no --binary"};
      } else if (!f.binary_error.empty()) {
        c["binary"] = CheckOutcome{"binary", CheckState::kFail, f.binary_error};
      } else {
        c["binary"].detail = f.binary;
      }
    }
    for (const char* name : kChecks) h.checks.push_back(c[name]);
    out.push_back(std::move(h));
  }
  return out;
}

std::string RenderPreflightTable(const std::vector<PreflightHost>& hosts) {
  std::string out = "HOST            ";
  for (const char* name : kChecks) {
    char cell[16];
    std::snprintf(cell, sizeof cell, " %-8s", name);
    out += cell;
  }
  while (out.back() == ' ') out.pop_back();
  out += "\n";
  std::string failures;
  for (const PreflightHost& h : hosts) {
    char cell[64];
    std::snprintf(cell, sizeof cell, "%-16s", h.host.c_str());
    out += cell;
    for (const CheckOutcome& c : h.checks) {
      std::snprintf(cell, sizeof cell, " %-8s",
                    c.state == CheckState::kPass ? "ok" : c.state == CheckState::kFail ? "FAIL" : "-");
      out += cell;
      if (c.state == CheckState::kFail) failures += h.host + ": " + c.name + ": " + c.detail + "\n";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  return out + failures;
}

std::string PreflightJson(const std::vector<PreflightHost>& hosts) {
  Json j = Json::Object();
  j.Set("format", "gpulaunch-check/v1");
  bool ok = true;
  Json list = Json::Array();
  for (const PreflightHost& h : hosts) {
    ok = ok && h.ok();
    Json e = Json::Object();
    e.Set("host", h.host);
    e.Set("ok", h.ok());
    Json checks = Json::Object();
    for (const CheckOutcome& c : h.checks) {
      Json x = Json::Object();
      x.Set("state", c.state == CheckState::kPass ? "pass" : c.state == CheckState::kFail ? "fail" : "skip");
      x.Set("detail", c.detail);
      checks.Set(c.name, x);
    }
    e.Set("checks", checks);
    list.Push(e);
  }
  j.Set("ok", ok);
  j.Set("hosts", list);
  return j.Write() + "\n";
}

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
