#include "launcher/plan_output.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace gpulaunch {
namespace {

using ordered_json = nlohmann::ordered_json;

// A rank's GPUs as "index=UUID" (or PCI bus id when the UUID is unknown);
// hosts are looked up by name once, so a plan of N ranks costs O(N).
class GpuIdFormatter {
 public:
  explicit GpuIdFormatter(const ClusterTopology& c) {
    for (const ClusterHost& h : c.hosts) by_name_.emplace(h.name, &h);
  }
  std::string operator()(const RankSlot& s) const {
    if (s.gpus.empty()) return "-";
    const ClusterHost& host = *by_name_.at(s.host);
    std::vector<std::string> ids;
    for (int g : s.gpus) {
      const Gpu& gpu = host.topology->gpus[g];
      ids.push_back(std::to_string(g) + "=" + (gpu.uuid.empty() ? gpu.pci_bus_id : gpu.uuid));
    }
    return Join(ids, ",");
  }

 private:
  std::unordered_map<std::string, const ClusterHost*> by_name_;
};

std::string Dump(const ordered_json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// Modelled seconds as the plan JSON has always written them: 6 significant
// digits, and whole numbers without a fraction (nlohmann-json writes the
// shortest text of the rounded double, as %g did below 1e6 s).
ordered_json SixDigits(double v) {
  if (!std::isfinite(v)) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  const double rounded = std::strtod(buf, nullptr);
  if (rounded == std::trunc(rounded) && std::fabs(rounded) < 9e15) return static_cast<int64_t>(rounded);
  return rounded;
}

ordered_json ModelJson(const StepModel& m) {
  ordered_json j = ordered_json::object();
  j["hosts"] = m.hosts;
  j["switches"] = m.switches;
  j["tp_seconds"] = SixDigits(m.tp_seconds);
  j["pp_seconds"] = SixDigits(m.pp_seconds);
  j["dp_seconds"] = SixDigits(m.dp_seconds);
  j["total_seconds"] = SixDigits(m.total_seconds());
  return j;
}

ordered_json RankJson(const RankSlot& s, const GpuIdFormatter& gpu_ids) {
  ordered_json j = ordered_json::object();
  j["rank"] = s.rank;
  j["host"] = s.host;
  j["local_rank"] = s.local_rank;
  j["cpus"] = s.cpus;
  j["numa"] = s.mem_node;
  j["gpus"] = s.gpus;
  j["gpu_ids"] = gpu_ids(s);
  j["nic"] = s.nic;
  ordered_json coords = ordered_json::object();
  coords["tp"] = s.coords[kTp];
  coords["pp"] = s.coords[kPp];
  coords["dp"] = s.coords[kDp];
  j["coords"] = std::move(coords);
  return j;
}

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  return buf;
}

std::string Plural(int n, const char* what, const char* suffix) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : suffix);
}

std::string ModelLine(const StepModel& m) {
  return Plural(m.hosts, "host", "s") + ", " + Plural(m.switches, "switch", "es") + "; ";
}

std::string Breakdown(const StepModel& m) {
  return Ms(m.total_seconds()) + " (tp " + Ms(m.tp_seconds) + ", pp " + Ms(m.pp_seconds) + ", dp " +
         Ms(m.dp_seconds) + ")";
}

// Columns as wide as their widest cell: one pass measures, one writes, so the
// table is never held whole.
void WriteRankTable(std::ostream& out, const Placement& placement, const GpuIdFormatter& gpu_ids) {
  const auto cells = [&](const RankSlot& s) -> std::vector<std::string> {
    return {std::to_string(s.rank), s.host, std::to_string(s.local_rank), FormatIdList(s.cpus),
            s.mem_node < 0 ? "-" : std::to_string(s.mem_node), gpu_ids(s), s.nic.empty() ? "-" : s.nic,
            std::to_string(s.coords[kTp]), std::to_string(s.coords[kPp]), std::to_string(s.coords[kDp])};
  };
  const std::vector<std::string> header = {"rank", "host", "local", "cpus", "numa", "gpus", "nic", "tp", "pp", "dp"};
  std::vector<size_t> width(header.size(), 0);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  const auto write = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << "\n";
  };
  measure(header);
  for (const RankSlot& s : placement.ranks) measure(cells(s));
  write(header);
  for (const RankSlot& s : placement.ranks) write(cells(s));
}

}  // namespace

void WritePlanJson(std::ostream& out, const PlanReport& r) {
  const GpuIdFormatter gpu_ids(*r.cluster);
  out << "{\"schema\":\"gpulaunch-plan/v1\",\"plan_hash\":" << Dump(r.plan_hash) << ",\"layout\":" << Dump(r.layout)
      << ",\"policy\":" << Dump(r.policy) << ",\"ranks\":[";
  for (size_t i = 0; i < r.placement->ranks.size(); ++i) {
    out << (i ? "," : "") << Dump(RankJson(r.placement->ranks[i], gpu_ids));
  }
  out << "],\"summary\":" << Dump(ModelJson(r.ours))
      << ",\"openmpi_by_slot\":" << Dump(r.openmpi_by_slot ? ModelJson(*r.openmpi_by_slot) : ordered_json(nullptr))
      << ",\"explain\":" << Dump(ordered_json(r.placement->explain)) << "}\n";
}

void WritePlanText(std::ostream& out, const PlanReport& r, bool explain) {
  const Placement& p = *r.placement;
  out << "plan: " << p.ranks.size() << " ranks, layout " << r.layout << ", policy " << r.policy << ", "
      << Plural(static_cast<int>(p.hosts.size()), "host", "s") << "\n";
  out << "plan hash: " << r.plan_hash << "\n";
  for (const std::string& n : p.notes) out << "note: " << n << "\n";
  WriteRankTable(out, p, GpuIdFormatter(*r.cluster));
  out << "summary: " << ModelLine(r.ours) << "modelled step communication " << Breakdown(r.ours) << "\n";
  if (r.openmpi_by_slot) {
    const StepModel& theirs = *r.openmpi_by_slot;
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, "by-slot / gpulaunch = %.2f",
                  theirs.total_seconds() / std::max(r.ours.total_seconds(), 1e-12));
    out << "open mpi by-slot: " << ModelLine(theirs) << Breakdown(theirs) << "; " << ratio << "\n";
  }
  if (explain) {
    out << "explain:\n";
    for (const std::string& e : p.explain) out << "  " << e << "\n";
  }
}

}  // namespace gpulaunch
