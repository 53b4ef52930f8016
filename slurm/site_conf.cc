#include "slurm/site_conf.h"

#include <algorithm>

#include "common/strings.h"

namespace gpulaunch {
namespace {


// "Key=Value Key2=Value2" (a partition or node line) as lowercased keys.
// Values hold no spaces in slurm.conf; scontrol's one-line form quotes none.
std::map<std::string, std::string> Fields(std::string_view line) {
  std::map<std::string, std::string> fields;
  for (const std::string& word : Split(line, ' ')) {
    const size_t eq = word.find('=');
    if (word.empty() || eq == std::string::npos) continue;
    fields[AsciiLower(word.substr(0, eq))] = word.substr(eq + 1);
  }
  return fields;
}

// A partition line; a later line for the same name replaces its fields
// (PartitionName=DEFAULT lines set defaults: kept as a partition "DEFAULT").
void AddPartition(SiteConf& conf, std::map<std::string, std::string> fields, const std::string& where) {
  SitePartition p{fields["partitionname"], where, std::move(fields)};
  for (SitePartition& old : conf.partitions) {
    if (old.name == p.name) {
      old = std::move(p);
      return;
    }
  }
  conf.partitions.push_back(std::move(p));
}

// Counts are held to a million (no node has more CPUs, GPUs or sockets), so
// products and sums of them stay far inside int64_t and the results in int.
constexpr int64_t kMaxCount = 1000000;

int64_t FieldCount(const std::map<std::string, std::string>& f, const char* key, int64_t fallback) {
  const auto it = f.find(key);
  if (it == f.end()) return fallback;
  const auto n = ParseInt(it->second);
  return n && *n > 0 ? std::min(*n, kMaxCount) : fallback;
}

// The GPUs of a Gres= value: "gpu:4", "gpu:a100:2,gpu:h100:2", "gpu:4(S:0)",
// "gpu" alone (one); other resources ("mps:100") are not GPUs.
int GpusOfGres(const std::string& gres) {
  int64_t gpus = 0;
  for (std::string entry : Split(gres, ',')) {
    entry = entry.substr(0, entry.find('('));
    const std::vector<std::string> parts = Split(entry, ':');
    if (parts.empty() || AsciiLower(parts[0]) != "gpu") continue;
    const auto n = parts.size() == 1 ? std::optional<int64_t>(1) : ParseInt(parts.back());
    if (n && *n > 0) gpus = std::min(gpus + std::min(*n, kMaxCount), kMaxCount);
  }
  return static_cast<int>(gpus);
}

// A NodeName line over the DEFAULT line's fields (`defaults`).
SiteNode NodeOf(const std::map<std::string, std::string>& line, const std::map<std::string, std::string>& defaults,
                const std::string& where) {
  std::map<std::string, std::string> f = defaults;
  for (const auto& [k, v] : line) f[k] = v;
  SiteNode node;
  node.names = f["nodename"];
  node.where = where;
  const int64_t sockets = f.count("socketsperboard") ? FieldCount(f, "boards", 1) * FieldCount(f, "socketsperboard", 1)
                                                     : FieldCount(f, "sockets", 1);
  const int64_t counted = std::min(sockets * FieldCount(f, "corespersocket", 1), kMaxCount) *
                          FieldCount(f, "threadspercore", 1);
  node.cpus = static_cast<int>(FieldCount(f, "cputot", FieldCount(f, "cpus", std::min(counted, kMaxCount))));
  node.gpus = GpusOfGres(f.count("gres") ? f["gres"] : "");
  const auto memory = f.count("realmemory") ? ParseInt(f["realmemory"]) : std::nullopt;
  node.memory_mb = memory && *memory > 0 ? *memory : 1;
  return node;
}

}  // namespace

const SiteConfValue* SiteConf::Find(const std::string& key) const {
  const auto it = keys.find(AsciiLower(key));
  return it == keys.end() ? nullptr : &it->second;
}

const SitePartition* SiteConf::FindPartition(const std::string& name) const {
  for (const SitePartition& p : partitions)
    if (p.name == name) return &p;
  return nullptr;
}

bool ListHolds(const std::string& list, const std::string& item) {
  for (const std::string& part : Split(list, ','))
    if (AsciiLower(Trim(part)) == AsciiLower(item)) return true;
  return false;
}

StatusOr<SiteConf> ParseSlurmConf(const std::string& text, const std::string& origin) {
  SiteConf conf;
  conf.origin = origin;
  std::map<std::string, std::string> node_defaults;
  GL_RETURN_IF_ERROR(ForEachConfigLine(text, origin, [&](int n, std::string_view line) -> Status {
    const std::string where = origin + ":" + std::to_string(n);
    if (AsciiLower(line.substr(0, 8)) == "include ") {
      conf.includes.push_back(where + ": " + std::string(line));
      return Status::Ok();
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(where + ": not a slurm.conf line (Key=Value): " + Excerpt(line));
    }
    const std::string key = AsciiLower(Trim(line.substr(0, eq)));
    if (key == "partitionname") {
      AddPartition(conf, Fields(line), where);
    } else if (key == "nodename") {
      std::map<std::string, std::string> fields = Fields(line);
      if (AsciiLower(fields["nodename"]) == "default") {
        fields.erase("nodename");
        for (const auto& [k, v] : fields) node_defaults[k] = v;
      } else {
        conf.nodes.push_back(NodeOf(fields, node_defaults, where));
      }
    } else if (key != "nodename" && key != "nodeset" && key != "downnodes" && key != "frontendname" &&
               key != "switchname") {
      conf.keys[key] = SiteConfValue{std::string(Trim(line.substr(eq + 1))), where};
    }
    return Status::Ok();
  }));
  return conf;
}

StatusOr<SiteConf> ParseRunningSlurmConfig(const std::string& show_config, const std::string& show_partitions,
                                           const std::string& show_nodes) {
  SiteConf conf;
  conf.origin = "the running slurmctld";
  for (const std::string& line : Split(show_config, '\n')) {
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;  // headers ("Configuration data as of ...") and blank lines
    const std::string value(Trim(std::string_view(line).substr(eq + 3)));
    if (value == "(null)" || value.empty()) continue;
    conf.keys[AsciiLower(Trim(std::string_view(line).substr(0, eq)))] = SiteConfValue{value, "scontrol show config"};
  }
  if (conf.keys.empty()) return InvalidArgument("scontrol show config printed no \"Key = Value\" line");
  for (const std::string& line : Split(show_partitions, '\n')) {
    if (!StartsWith(line, "PartitionName=")) continue;
    AddPartition(conf, Fields(line), "scontrol show partition");
  }
  for (const std::string& line : Split(show_nodes, '\n')) {
    if (StartsWith(line, "NodeName=")) conf.nodes.push_back(NodeOf(Fields(line), {}, "scontrol show node"));
  }
  return conf;
}

}  // namespace gpulaunch
