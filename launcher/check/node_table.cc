#include "launcher/check/node_table.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/json.h"
#include "common/utc_time.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

std::string Gib(uint64_t bytes, bool zero_is_known = false) {
  if (bytes == 0 && !zero_is_known) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

// The value of KEY= in an `scontrol -o` line; Reason= runs to the end of the
// line's next key (it may hold spaces), so it is taken up to " Key=" forms.
std::string Field(const std::string& line, const std::string& key) {
  const std::string probe = " " + key + "=";
  auto at = (" " + line).find(probe);
  if (at == std::string::npos) return "";
  at += probe.size() - 1;
  if (key == "Reason") {
    // Reason=text [user@time] up to the next " Word=".
    size_t end = at;
    while (end < line.size()) {
      const size_t sp = line.find(' ', end);
      if (sp == std::string::npos) return line.substr(at);
      const size_t eq = line.find('=', sp);
      const size_t next_sp = line.find(' ', sp + 1);
      if (eq != std::string::npos && (next_sp == std::string::npos || eq < next_sp)) return line.substr(at, sp - at);
      end = sp + 1;
    }
    return line.substr(at);
  }
  const size_t end = line.find(' ', at);
  return line.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

std::string FormatGpuMemoryComment(const GpuMemoryByBus& memory) {
  std::string out = "<!-- gpulaunch-gpu-memory:";
  for (const auto& [bus, m] : memory) out += " " + bus + "=" + std::to_string(m.total_bytes) + "/" + std::to_string(m.used_bytes);
  return out + " -->";
}

GpuMemoryByBus ParseGpuMemoryComment(const std::string& text) {
  GpuMemoryByBus out;
  static const std::string kMarker = "<!-- gpulaunch-gpu-memory:";
  const size_t at = text.find(kMarker);
  if (at == std::string::npos) return out;
  const size_t end = text.find("-->", at);
  std::istringstream in(text.substr(at + kMarker.size(), end == std::string::npos ? std::string::npos
                                                                                  : end - at - kMarker.size()));
  std::string entry;
  while (in >> entry) {
    const size_t eq = entry.find('='), slash = entry.find('/', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || slash == std::string::npos) continue;
    const auto total = ParseInt(entry.substr(eq + 1, slash - eq - 1));
    const auto used = ParseInt(entry.substr(slash + 1));
    if (!total || !used || *total < 0 || *used < 0 || *used > *total) continue;
    out[entry.substr(0, eq)] = GpuMemory{static_cast<uint64_t>(*total), static_cast<uint64_t>(*used)};
  }
  return out;
}

NodeRow RowFromTopology(const std::string& host, const HostTopology& t, std::chrono::system_clock::time_point when,
                        const GpuMemoryByBus& memory) {
  NodeRow row;
  row.host = host;
  row.state = "online";
  row.answered = when;
  row.cores = static_cast<int>(t.cores.size());
  std::vector<bool> usage_known;  // by group
  for (const Gpu& g : t.gpus) {
    const auto nvml = memory.find(g.pci_bus_id);
    const uint64_t total = g.memory_bytes ? g.memory_bytes : nvml != memory.end() ? nvml->second.total_bytes : 0;
    const std::string model = g.model.empty() ? "unknown" : g.model;
    size_t group = row.gpus.size();
    for (size_t i = 0; i < row.gpus.size(); ++i)
      if (row.gpus[i].model == model && row.gpus[i].memory_bytes == total) group = i;
    if (group == row.gpus.size()) {
      row.gpus.push_back(GpuGroup{model, 0, total, uint64_t{0}});
      usage_known.push_back(true);
    }
    ++row.gpus[group].count;
    if (nvml == memory.end()) {
      usage_known[group] = false;
    } else {
      *row.gpus[group].used_bytes += nvml->second.used_bytes;
    }
  }
  for (size_t i = 0; i < row.gpus.size(); ++i)
    if (!usage_known[i]) row.gpus[i].used_bytes.reset();
  return row;
}

void ApplyHistory(std::vector<NodeRow>& rows, std::map<std::string, NodeHistory>& history) {
  for (NodeRow& row : rows) {
    NodeHistory& h = history[row.host];
    if (row.answered) {
      h.last_answer = row.answered;
      h.missed = 0;
      continue;
    }
    ++h.missed;
    if (row.state != "down" || !h.last_answer) continue;  // never answered, or Slurm's state says more
    row.answered = h.last_answer;
    if (h.missed < kRoundsBeforeDown) {
      row.state = "suspect";
      row.reason = "missed " + std::to_string(h.missed) + " round" + (h.missed > 1 ? "s" : "") + " (" + row.reason + ")";
    } else {
      row.reason = "missed " + std::to_string(h.missed) + " rounds in a row (" + row.reason + ")";
    }
  }
}

NodeRow DownRow(const std::string& host, const std::string& why) {
  NodeRow row;
  row.host = host;
  row.state = "down";
  row.reason = why;
  return row;
}

void ApplySlurmStates(std::vector<NodeRow>& rows, const std::string& text) {
  for (const std::string& line : Split(text, '\n')) {
    const std::string name = Field(line, "NodeName");
    if (name.empty()) continue;
    const std::string state = Field(line, "State");
    const std::string reason = Field(line, "Reason");
    for (NodeRow& row : rows) {
      if (row.host != name) continue;
      const bool drain = state.find("DRAIN") != std::string::npos;
      const bool down = state.rfind("DOWN", 0) == 0 || state.find("NOT_RESPONDING") != std::string::npos;
      if (drain) row.state = state.find("DRAINED") != std::string::npos || state.rfind("IDLE", 0) == 0 ? "drained"
                                                                                                        : "draining";
      if (down) row.state = "down";
      if ((drain || down) && !reason.empty()) row.reason = "slurm: " + reason;
    }
  }
}

std::string RenderNodeTable(const std::vector<NodeRow>& rows) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-16s %-9s %4s  %-24s %-10s %-10s %-10s %5s  %-20s %s\n", "HOST", "STATE", "GPUS",
                "MODEL", "MEMORY", "IN USE", "FREE", "CORES", "ANSWERED", "REASON");
  out << line;
  for (const NodeRow& r : rows) {
    const std::string answered = r.answered ? UtcTimestamp(*r.answered) : "never";
    std::vector<GpuGroup> groups = r.gpus;
    if (groups.empty()) groups.push_back(GpuGroup{"-", 0, 0, std::nullopt});
    for (const GpuGroup& g : groups) {
      const uint64_t total = g.memory_bytes * static_cast<uint64_t>(g.count);
      const std::string used = g.used_bytes ? Gib(*g.used_bytes, true) : "-";
      const std::string free = g.used_bytes && total ? Gib(total - std::min(total, *g.used_bytes), true) : "-";
      std::snprintf(line, sizeof line, "%-16s %-9s %4d  %-24s %-10s %-10s %-10s %5d  %-20s %s\n", r.host.c_str(),
                    r.state.c_str(), g.count, g.model.substr(0, 24).c_str(), Gib(g.memory_bytes).c_str(), used.c_str(),
                    free.c_str(), r.cores, answered.c_str(), r.reason.c_str());
      std::string text = line;
      text.erase(text.find_last_not_of(" \n") + 1);  // no trailing blanks when there is no reason
      out << text << "\n";
    }
  }
  return out.str();
}

std::string RenderNodeJson(const std::vector<NodeRow>& rows) {
  Json root = Json::Object();
  root.Set("format", "gpulaunch-nodes/v1");
  Json hosts = Json::Array();
  for (const NodeRow& r : rows) {
    Json h = Json::Object();
    h.Set("host", r.host);
    h.Set("state", r.state);
    h.Set("reason", r.reason);
    h.Set("answered_at", r.answered ? Json(UtcTimestamp(*r.answered)) : Json());
    h.Set("cores", r.cores);
    Json gpus = Json::Array();
    for (const GpuGroup& g : r.gpus) {
      Json e = Json::Object();
      e.Set("model", g.model);
      e.Set("count", g.count);
      e.Set("memory_bytes", static_cast<double>(g.memory_bytes));
      e.Set("memory_used_bytes", g.used_bytes ? Json(static_cast<double>(*g.used_bytes)) : Json());
      e.Set("memory_free_bytes", g.used_bytes && g.memory_bytes
                                     ? Json(static_cast<double>(g.memory_bytes * static_cast<uint64_t>(g.count) -
                                                                std::min(g.memory_bytes * static_cast<uint64_t>(g.count),
                                                                         *g.used_bytes)))
                                     : Json());
      gpus.Push(e);
    }
    h.Set("gpus", gpus);
    hosts.Push(h);
  }
  root.Set("hosts", hosts);
  return root.Write();
}

}  // namespace gpulaunch
