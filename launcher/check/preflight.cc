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

// What the majority of the reachable hosts has, per compared fact; GPU-NIC
// nearness among hosts with as many GPUs (a mixed cluster is fine).
struct Majorities {
  Majority gpulaunch, mpi, ucx, driver, mtu, speed, binary_mpi;
  std::map<size_t, Majority> gpu_nic;  // by number of GPUs with a NIC
};

Majorities MajoritiesOf(const std::vector<HostProbe>& probes) {
  std::vector<std::pair<std::string, std::string>> gl, mpi, ucx, driver, mtu, speed, binary_mpi;
  std::map<size_t, std::vector<std::pair<std::string, std::string>>> gpu_nic;
  for (const HostProbe& p : probes) {
    if (!p.facts) continue;
    gl.emplace_back(p.host, p.facts->gpulaunch_version);
    mpi.emplace_back(p.host, p.facts->mpi_version);
    ucx.emplace_back(p.host, p.facts->ucx_version);
    driver.emplace_back(p.host, p.facts->driver_version);
    if (p.facts->binary_error.empty()) binary_mpi.emplace_back(p.host, p.facts->binary_mpi);
    if (!p.facts->gpu_nics.empty()) {
      gpu_nic[p.facts->gpu_nics.size()].emplace_back(p.host, GpuNicSignature(*p.facts));
    }
    if (const NetInterfaceFacts* n = DataInterface(p)) {
      mtu.emplace_back(p.host, std::to_string(n->mtu));
      if (n->speed_mbps > 0) speed.emplace_back(p.host, std::to_string(n->speed_mbps));
    }
  }
  Majorities m{MajorityOf(gl),  MajorityOf(mpi),   MajorityOf(ucx),        MajorityOf(driver),
               MajorityOf(mtu), MajorityOf(speed), MajorityOf(binary_mpi), {}};
  for (const auto& [gpus, values] : gpu_nic) m.gpu_nic[gpus] = MajorityOf(values);
  return m;
}

// Clock: the host read its clock somewhere inside the probe's round trip.
CheckOutcome ClockCheck(const HostProbe& p, const PreflightOptions& o) {
  const double offset = p.facts->time_s - (p.asked_s + p.answered_s) / 2;
  const double slack = (p.answered_s - p.asked_s) / 2;
  CheckOutcome c{"clock", CheckState::kPass, "offset " + Seconds(offset) + " (within " + Seconds(slack).substr(1) + ")"};
  if (std::fabs(offset) - slack > o.max_clock_skew_s) {
    c.state = CheckState::kFail;
    c.detail += ", over the " + Seconds(o.max_clock_skew_s).substr(1) + " allowed: synchronise it (chrony/NTP)";
  }
  return c;
}

// Names, both ways.
CheckOutcome DnsCheck(const HostProbe& p) {
  if (p.addresses.empty()) return {"dns", CheckState::kFail, p.host + " does not resolve on the launch host"};
  if (p.reverse_name.empty()) {
    return {"dns", CheckState::kFail, p.addresses.front() + " does not resolve back to a name"};
  }
  if (ShortName(p.reverse_name) != ShortName(p.host) && ShortName(p.reverse_name) != ShortName(p.facts->hostname) &&
      !p.reverse_confirms) {
    return {"dns", CheckState::kFail, p.host + " -> " + p.addresses.front() + " -> " + p.reverse_name + ", not back to it"};
  }
  return {"dns", CheckState::kPass, p.host + " <-> " + p.addresses.front()};
}

CheckOutcome VersionsCheck(const HostFacts& f, const Majorities& m) {
  CheckOutcome c{"versions", CheckState::kPass, ""};
  Compare(f.gpulaunch_version, m.gpulaunch, "gpulaunch", c);
  Compare(f.mpi_version, m.mpi, "MPI", c);
  Compare(f.ucx_version, m.ucx, "UCX", c);
  Compare(f.driver_version, m.driver, "driver", c);
  if (c.detail.empty()) c.detail = "UCX " + f.ucx_version + ", driver " + f.driver_version;
  return c;
}

// mtu and nic: the interface that holds the host's address, against the majority.
std::pair<CheckOutcome, CheckOutcome> NetworkChecks(const HostProbe& p, const Majorities& m) {
  const NetInterfaceFacts* n = DataInterface(p);
  if (!n) {
    return {{"mtu", CheckState::kSkip, "no interface holds its address"},
            {"nic", CheckState::kSkip, "no interface holds its address"}};
  }
  CheckOutcome mtu{"mtu", CheckState::kPass, n->name + " " + std::to_string(n->mtu)};
  if (std::to_string(n->mtu) != m.mtu.value) {
    mtu = {"mtu", CheckState::kFail,
           n->name + " MTU " + std::to_string(n->mtu) + " here, " + m.mtu.value + " on " + Join(m.mtu.hosts, ", ")};
  }
  const std::string rate = n->speed_mbps > 0 ? std::to_string(n->speed_mbps) + " Mb/s" : "speed unknown";
  CheckOutcome nic{"nic", CheckState::kPass, n->name + " " + n->state + ", " + rate};
  if (n->state != "up" && n->state != "unknown") {
    nic = {"nic", CheckState::kFail, n->name + " is " + n->state};
  } else if (n->speed_mbps > 0 && !m.speed.hosts.empty() && std::to_string(n->speed_mbps) != m.speed.value) {
    nic = {"nic", CheckState::kFail, n->name + " at " + rate + ", " + m.speed.value + " Mb/s on " + Join(m.speed.hosts, ", ")};
  }
  return {mtu, nic};
}

CheckOutcome GpusCheck(const HostFacts& f, const PreflightOptions& o) {
  std::vector<std::string> problems;
  if (!f.nvml && f.hwloc_gpus > 0) {
    problems.push_back(std::to_string(f.hwloc_gpus) +
                       " NVIDIA GPUs on the PCI bus but NVML does not answer (is the driver loaded?)");
  }
  if (f.nvml && static_cast<int>(f.gpus.size()) < f.hwloc_gpus) {
    problems.push_back("NVML sees " + std::to_string(f.gpus.size()) + " of the " + std::to_string(f.hwloc_gpus) +
                       " GPUs on the PCI bus");
  }
  int hottest = -1;
  for (const GpuFacts& g : f.gpus) {
    hottest = std::max(hottest, g.temperature_c);
    if (g.temperature_c >= o.max_gpu_temperature_c) {
      problems.push_back(g.bus_id + " at " + std::to_string(g.temperature_c) + " C");
    }
    if (g.ecc_uncorrected > 0) {
      problems.push_back(g.bus_id + " has " + std::to_string(g.ecc_uncorrected) + " uncorrected ECC errors");
    }
  }
  if (!problems.empty()) return {"gpus", CheckState::kFail, Join(problems, "; ")};
  if (f.gpus.empty()) return {"gpus", CheckState::kSkip, "no GPUs"};
  return {"gpus", CheckState::kPass,
          std::to_string(f.gpus.size()) + " GPUs" + (hottest >= 0 ? ", hottest " + std::to_string(hottest) + " C" : "") +
              ", no ECC errors"};
}

// The program resolves here, links the MPI most hosts' copies link, and an
// engine here starts that MPI (else its ranks would be singletons).
CheckOutcome BinaryCheck(const HostFacts& f, const PreflightOptions& o, const Majorities& m) {
  if (!o.binary_given) return {"binary", CheckState::kSkip, "no --binary"};
  if (!f.binary_error.empty()) return {"binary", CheckState::kFail, f.binary_error};
  CheckOutcome c{"binary", CheckState::kPass, ""};
  Compare(f.binary_mpi, m.binary_mpi, "MPI", c);
  c.detail = f.binary + ": " + (c.state == CheckState::kFail ? c.detail : "MPI " + f.binary_mpi);
  if (!o.binary_engine_refusal.empty() && f.binary_mpi.rfind("none", 0) != 0) {
    c.state = CheckState::kFail;
    c.detail = o.binary_engine_refusal;
  }
  return c;
}

// ports and tmp: what the host itself reported.
void LocalResourceChecks(const HostFacts& f, std::map<std::string, CheckOutcome>& c) {
  const int ports = kJobPortLast - kJobPortFirst + 1;
  c["ports"] = {"ports", f.free_ports == 0 ? CheckState::kFail : CheckState::kPass,
                std::to_string(f.free_ports) + " of " + std::to_string(ports) + " job ports free"};
  c["tmp"] = f.tmp_error.empty() ? CheckOutcome{"tmp", CheckState::kPass, f.tmp_dir}
                                 : CheckOutcome{"tmp", CheckState::kFail, f.tmp_error};
}

PreflightHost EvaluateHost(const HostProbe& p, const PreflightOptions& o, const Majorities& m) {
  std::map<std::string, CheckOutcome> c;
  if (!p.facts) {
    for (const char* name : kChecks) c[name] = CheckOutcome{name, CheckState::kSkip, ""};
    c["reach"] = CheckOutcome{"reach", CheckState::kFail, p.error.empty() ? "no answer" : p.error};
  } else {
    const HostFacts& f = *p.facts;
    c["reach"] = {"reach", CheckState::kPass,
                  "answered in " + std::to_string(static_cast<int>(std::lround((p.answered_s - p.asked_s) * 1000))) +
                      " ms"};
    c["clock"] = ClockCheck(p, o);
    c["dns"] = DnsCheck(p);
    c["versions"] = VersionsCheck(f, m);
    std::tie(c["mtu"], c["nic"]) = NetworkChecks(p, m);
    const auto gpu_nic = m.gpu_nic.find(f.gpu_nics.size());
    c["gpu-nic"] = GpuNicCheck(f, gpu_nic == m.gpu_nic.end() ? Majority{} : gpu_nic->second);
    c["gpus"] = GpusCheck(f, o);
    LocalResourceChecks(f, c);
    c["binary"] = BinaryCheck(f, o, m);
  }
  PreflightHost h;
  h.host = p.host;
  for (const char* name : kChecks) h.checks.push_back(c[name]);
  return h;
}

}  // namespace

bool PreflightHost::ok() const {
  return std::none_of(checks.begin(), checks.end(), [](const CheckOutcome& c) { return c.state == CheckState::kFail; });
}

std::vector<PreflightHost> EvaluatePreflight(const std::vector<HostProbe>& probes, const PreflightOptions& o) {
  const Majorities majorities = MajoritiesOf(probes);
  std::vector<PreflightHost> out;
  for (const HostProbe& p : probes) out.push_back(EvaluateHost(p, o, majorities));
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
  std::string failures, programs;  // programs: each host's --binary and the MPI it links
  for (const PreflightHost& h : hosts) {
    char cell[64];
    std::snprintf(cell, sizeof cell, "%-16s", h.host.c_str());
    out += cell;
    for (const CheckOutcome& c : h.checks) {
      std::snprintf(cell, sizeof cell, " %-8s",
                    c.state == CheckState::kPass ? "ok" : c.state == CheckState::kFail ? "FAIL" : "-");
      out += cell;
      if (c.state == CheckState::kFail) failures += h.host + ": " + c.name + ": " + c.detail + "\n";
      if (c.state == CheckState::kPass && c.name == "binary") programs += h.host + ": binary: " + c.detail + "\n";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  return out + programs + failures;
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

}  // namespace gpulaunch
