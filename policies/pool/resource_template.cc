#include "policies/pool/resource_template.h"

#include <cstdlib>

#include "common/strings.h"

namespace gpulaunch::pool {

StatusOr<std::vector<ResourceTemplate>> ParseTemplates(const std::string& text) {
  std::vector<ResourceTemplate> out;
  for (const std::string& entry : Split(text, ';')) {
    const size_t colon = entry.find(':');
    ResourceTemplate t;
    t.name = std::string(Trim(entry.substr(0, colon)));
    auto bad = [&](const std::string& why) {
      return InvalidArgument("template '" + entry + "': " + why +
                             " (e.g. train:gpus=32,mem=80,link=200,affinity=leaf)");
    };
    if (t.name.empty() || colon == std::string::npos) return bad("give NAME:gpus=N[,mem=GIB][,link=GBPS][,affinity=...]");
    bool has_gpus = false;
    for (const std::string& field : Split(entry.substr(colon + 1), ',')) {
      const size_t eq = field.find('=');
      const std::string key(Trim(field.substr(0, eq)));
      const std::string value = eq == std::string::npos ? "" : std::string(Trim(field.substr(eq + 1)));
      const auto n = ParseInt(value);
      if (key == "gpus" && n && *n >= 1 && *n <= 100000) {
        t.gpus = static_cast<int>(*n);
        has_gpus = true;
      } else if (key == "mem" && n && *n >= 0 && *n <= 100000) {
        t.min_gpu_memory_gib = static_cast<double>(*n);
      } else if (key == "link" && n && *n >= 0 && *n <= 100000) {
        t.min_link_gbps = static_cast<double>(*n);
      } else if (key == "affinity" && (value == "any" || value == "leaf")) {
        t.one_leaf = value == "leaf";
      } else if (key == "affinity" && value.rfind("spread:", 0) == 0 && ParseInt(value.substr(7)) &&
                 *ParseInt(value.substr(7)) >= 2 && *ParseInt(value.substr(7)) <= 1000) {
        t.spread_leaves = static_cast<int>(*ParseInt(value.substr(7)));
      } else {
        return bad("'" + field + "' is not gpus=N, mem=GIB, link=GBPS or affinity=any|leaf|spread:N");
      }
    }
    if (!has_gpus) return bad("gpus=N is required");
    out.push_back(t);
  }
  return out;
}

PoolJob WithTemplate(PoolJob job, const ResourceTemplate& t) {
  job.gpus = t.gpus;
  job.min_gpu_memory_gib = t.min_gpu_memory_gib;
  job.min_link_gbps = t.min_link_gbps;
  job.one_leaf = t.one_leaf;
  job.min_leaves = t.spread_leaves;
  return job;
}

Status ApplyTemplates(std::vector<TraceJob>& jobs, const std::vector<ResourceTemplate>& templates,
                      const std::string& origin) {
  for (TraceJob& j : jobs) {
    if (j.template_name.empty()) continue;
    const std::string where = origin + ":" + std::to_string(j.line);
    const ResourceTemplate* t = nullptr;
    for (const ResourceTemplate& c : templates)
      if (c.name == j.template_name) t = &c;
    if (!t) {
      std::string names;
      for (const ResourceTemplate& c : templates) names += (names.empty() ? "" : ", ") + c.name;
      return InvalidArgument(where + ": template '" + j.template_name + "' is not defined" +
                             (names.empty() ? " (give --templates)" : " (defined: " + names + ")"));
    }
    if (t->gpus != j.gpus) {
      return InvalidArgument(where + ": the job asks for " + std::to_string(j.gpus) + " GPUs but template '" + t->name +
                             "' is " + std::to_string(t->gpus) + " GPUs");
    }
    j.min_gpu_memory_gib = t->min_gpu_memory_gib;
    j.min_link_gbps = t->min_link_gbps;
    j.one_leaf = t->one_leaf;
    j.min_leaves = t->spread_leaves;
  }
  return Status::Ok();
}

}  // namespace gpulaunch::pool
