#include "common/host_spec.h"

#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "common/hostlist.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

StatusOr<int> ParseSlotCount(std::string_view text, std::string_view what) {
  const auto v = ParseInt(text);
  if (!v || *v < 1 || *v > 1'000'000) {
    return InvalidArgument(std::string(what) + " '" + Excerpt(text) + "' must be a whole number from 1 to 1000000");
  }
  return static_cast<int>(*v);
}

// Hosts in first-seen order, summing slots of repeated names; indexed by
// name, so a hostlist of a million names merges in linear time (found by
// fuzz_hostlist: a linear search per name took 25 s for 164,000 names).
class HostMerger {
 public:
  // Fails past kMaxHostlistExpansion distinct hosts, however many lines or
  // items named them.
  Status Add(HostSpec spec) {
    auto [it, added] = index_.emplace(spec.name, hosts_.size());
    if (added) {
      if (hosts_.size() >= kMaxHostlistExpansion) {
        index_.erase(it);
        return InvalidArgument("more than " + std::to_string(kMaxHostlistExpansion) +
                               " distinct hosts, gpulaunch's limit for one job; split the job or its host list");
      }
      hosts_.push_back(std::move(spec));
      return Status::Ok();
    }
    HostSpec& h = hosts_[it->second];
    if (h.slots && spec.slots) *h.slots += *spec.slots;
    else if (spec.slots) h.slots = spec.slots;
    if (spec.max_slots) h.max_slots = h.max_slots ? *h.max_slots + *spec.max_slots : *spec.max_slots;
    return Status::Ok();
  }
  // A hostfile line, merged as Open MPI 4.1 merges repeated nodes (recorded
  // in tests/data/oracles/mpirun-hostfiles.tsv): a line without slots after
  // one with slots adds one slot; a line with slots after any earlier line
  // for the host is refused, as mpirun refuses it; a later max_slots
  // replaces the earlier one; max_slots alone also sets the slots.
  Status AddHostfileLine(HostSpec spec, int line_no) {
    auto it = index_.find(spec.name);
    if (it == index_.end()) {
      first_line_[spec.name] = line_no;
      if (!spec.slots && spec.max_slots) spec.slots = spec.max_slots;  // as in Open MPI
      return Add(std::move(spec));
    }
    HostSpec& h = hosts_[it->second];
    if (spec.slots) {
      return InvalidArgument("'" + spec.name + "' already appears on line " + std::to_string(first_line_[spec.name]) +
                             "; Open MPI refuses a slot count for a host listed before, so give each host one line "
                             "with its total (" + spec.name + " slots=N)");
    }
    if (h.slots) ++*h.slots;
    if (spec.max_slots) h.max_slots = spec.max_slots;
    return Status::Ok();
  }
  bool empty() const { return hosts_.empty(); }
  std::vector<HostSpec> Take() { return std::move(hosts_); }

 private:
  std::vector<HostSpec> hosts_;
  std::unordered_map<std::string, size_t> index_;
  std::unordered_map<std::string, int> first_line_;  // hostfile lines only
};

// "slots = 2" reads as "slots=2", as Open MPI's hostfile lexer reads it.
std::string JoinAroundEquals(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '=') {
      while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
      out.push_back('=');
      while (i + 1 < line.size() && (line[i + 1] == ' ' || line[i + 1] == '\t')) ++i;
    } else {
      out.push_back(line[i]);
    }
  }
  return out;
}

// "name[:N]" where name may be a hostlist; returns its expanded specs.
StatusOr<std::vector<HostSpec>> ParseHostWithCount(std::string_view item, std::optional<int> default_slots) {
  std::string_view name = item;
  std::optional<int> slots = default_slots;
  const size_t bracket_close = item.rfind(']');
  const size_t colon = item.rfind(':');
  if (colon != std::string_view::npos && (bracket_close == std::string_view::npos || colon > bracket_close)) {
    name = item.substr(0, colon);
    GL_ASSIGN_OR_RETURN(int n, ParseSlotCount(item.substr(colon + 1), "slot count"));
    slots = n;
  }
  GL_ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandHostlist(name));
  std::vector<HostSpec> out;
  for (auto& n : names) out.push_back(HostSpec{std::move(n), slots, std::nullopt});
  return out;
}

Status AtLine(std::string_view origin, int line, const Status& s) {
  return Status(s.code(), std::string(origin) + ":" + std::to_string(line) + ": " + s.message());
}

}  // namespace

StatusOr<std::vector<HostSpec>> ParseHostArgument(std::string_view text) {
  HostMerger hosts;
  if (Trim(text).empty()) return InvalidArgument("--host needs at least one host, e.g. --host node1:2,node2:2");
  for (const std::string& item : SplitOutsideBrackets(text, ',')) {
    if (Trim(item).empty()) continue;  // "a,,b", as Slurm's and mpirun's lists
    auto parsed = ParseHostWithCount(Trim(item), 1);
    if (!parsed.ok()) return InvalidArgument("--host '" + Excerpt(text) + "': " + parsed.status().message());
    for (auto& h : *parsed) {
      if (Status added = hosts.Add(std::move(h)); !added.ok()) {
        return InvalidArgument("--host '" + Excerpt(text) + "': " + added.message());
      }
    }
  }
  return hosts.Take();
}

StatusOr<std::vector<HostSpec>> ParseHostfileText(std::string_view text, std::string_view origin) {
  HostMerger hosts;
  GL_RETURN_IF_ERROR(ForEachConfigLine(text, origin, [&](int line_no, std::string_view line) -> Status {

    std::istringstream words{JoinAroundEquals(line)};
    std::string first;
    words >> first;
    std::optional<int> slots;
    std::optional<int> max_slots;
    std::string word;
    while (words >> word) {
      const auto eq = word.find('=');
      const std::string key = word.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      const bool is_slots = key == "slots" || key == "count" || key == "cpu";
      const bool is_max = key == "max_slots" || key == "max-slots";
      if ((is_slots && slots) || (is_max && max_slots)) {
        return AtLine(origin, line_no,
                      InvalidArgument("'" + key + "' given twice on one line, which Open MPI refuses; keep one"));
      }
      if (is_slots || is_max) {
        auto n = ParseSlotCount(value, is_slots ? "slots" : "max_slots");
        if (!n.ok()) return AtLine(origin, line_no, n.status());
        (is_slots ? slots : max_slots) = *n;
      } else {
        return AtLine(origin, line_no,
                      InvalidArgument("unknown word '" + Excerpt(word) +
                                      "' (expected 'host slots=N [max_slots=M]', 'host:N' or a hostlist like node[01-04])"));
      }
    }
    if (slots && max_slots && *max_slots < *slots) {
      return AtLine(origin, line_no, InvalidArgument("max_slots=" + std::to_string(*max_slots) + " is below slots=" +
                                                     std::to_string(*slots)));
    }
    auto parsed = ParseHostWithCount(first, std::nullopt);
    if (!parsed.ok()) return AtLine(origin, line_no, parsed.status());
    for (HostSpec& h : *parsed) {
      if (slots) {
        if (h.slots) {
          return AtLine(origin, line_no, InvalidArgument("slots given twice ('" + first + "' and slots=" +
                                                         std::to_string(*slots) + "); use one form"));
        }
        h.slots = slots;
      }
      h.max_slots = max_slots;
      if (Status added = hosts.AddHostfileLine(std::move(h), line_no); !added.ok()) {
        return AtLine(origin, line_no, added);
      }
    }
    return Status::Ok();
  }));
  if (hosts.empty()) return InvalidArgument(std::string(origin) + ": no hosts in the file (only comments or blank lines)");
  return hosts.Take();
}

StatusOr<std::vector<HostSpec>> HostsFromSlurmAllocation(const EnvLookup& env) {
  const char* list = env("SLURM_JOB_NODELIST");
  if (!list) list = env("SLURM_NODELIST");
  if (!list) return std::vector<HostSpec>{};
  auto names = ExpandHostlist(list);
  if (!names.ok()) return InvalidArgument("SLURM_JOB_NODELIST: " + names.status().message());
  std::vector<int> tasks;  // per node, when Slurm says
  if (const char* tpn = env("SLURM_TASKS_PER_NODE")) {
    for (const std::string& item : Split(tpn, ',')) {
      const auto paren = item.find("(x");
      const auto n = ParseInt(item.substr(0, paren));
      const auto times = paren == std::string::npos ? std::optional<int64_t>(1)
                                                    : ParseInt(item.substr(paren + 2, item.size() - paren - 3));
      if (!n || !times || *n < 0 || *times < 1 || *times > 100000) {
        return InvalidArgument("SLURM_TASKS_PER_NODE '" + Excerpt(tpn) + "' is malformed (expected e.g. 2(x3),1)");
      }
      for (int64_t k = 0; k < *times; ++k) tasks.push_back(static_cast<int>(*n));
    }
    if (tasks.size() != names->size()) {
      return InvalidArgument("SLURM_TASKS_PER_NODE gives " + std::to_string(tasks.size()) + " nodes but the node list has " +
                             std::to_string(names->size()));
    }
  }
  std::vector<HostSpec> hosts;
  for (size_t i = 0; i < names->size(); ++i) {
    HostSpec h{(*names)[i], std::nullopt, std::nullopt};
    if (!tasks.empty() && tasks[i] > 0) h.slots = tasks[i];
    hosts.push_back(std::move(h));
  }
  return hosts;
}

StatusOr<std::vector<HostSpec>> ReadHostfile(const std::string& path) {
  GL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "hostfile"));
  return ParseHostfileText(text, path);
}

}  // namespace gpulaunch
