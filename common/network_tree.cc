#include "common/network_tree.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "common/hostlist.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

Status AtLine(const std::string& origin, int line, const std::string& what) {
  return InvalidArgument(origin + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

StatusOr<NetworkTree> NetworkTree::Build(std::vector<NetworkSwitch> switches, const std::string& origin) {
  NetworkTree t;
  t.switches_ = std::move(switches);
  for (size_t i = 0; i < t.switches_.size(); ++i) {
    if (!t.index_.emplace(t.switches_[i].name, i).second) {
      return InvalidArgument(origin + ": switch '" + t.switches_[i].name + "' is declared twice");
    }
  }
  for (size_t i = 0; i < t.switches_.size(); ++i) {
    for (const std::string& child : t.switches_[i].children) {
      auto it = t.index_.find(child);
      if (it == t.index_.end()) {
        return InvalidArgument(origin + ": switch '" + t.switches_[i].name + "' lists unknown switch '" + child +
                               "'; declare it with SwitchName=" + child);
      }
      NetworkSwitch& c = t.switches_[it->second];
      if (!c.parent.empty()) {
        return InvalidArgument(origin + ": switch '" + child + "' is below both '" + c.parent + "' and '" +
                               t.switches_[i].name + "'");
      }
      c.parent = t.switches_[i].name;
    }
    for (const std::string& host : t.switches_[i].nodes) {
      auto [it, fresh] = t.leaf_of_host_.emplace(host, i);
      if (!fresh) {
        return InvalidArgument(origin + ": host '" + host + "' is below both '" + t.switches_[it->second].name +
                               "' and '" + t.switches_[i].name + "'");
      }
    }
  }
  // Levels from the leaves up; a cycle would never settle.
  for (NetworkSwitch& s : t.switches_) {
    int depth = 0;
    for (const NetworkSwitch* p = &s; !p->parent.empty(); p = &t.switches_[t.index_.at(p->parent)]) {
      if (++depth > static_cast<int>(t.switches_.size())) {
        return InvalidArgument(origin + ": switches '" + s.name + "' and its parents form a cycle");
      }
    }
  }
  std::function<int(size_t)> level = [&](size_t i) {
    int l = 0;
    for (const std::string& c : t.switches_[i].children) l = std::max(l, level(t.index_.at(c)) + 1);
    return l;
  };
  for (size_t i = 0; i < t.switches_.size(); ++i) t.switches_[i].level = level(i);
  return t;
}

const NetworkSwitch* NetworkTree::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &switches_[it->second];
}

const NetworkSwitch* NetworkTree::LeafOf(const std::string& host) const {
  auto it = leaf_of_host_.find(host);
  return it == leaf_of_host_.end() ? nullptr : &switches_[it->second];
}

std::vector<const NetworkSwitch*> NetworkTree::PathOf(const std::string& host) const {
  std::vector<const NetworkSwitch*> path;
  for (const NetworkSwitch* s = LeafOf(host); s; s = s->parent.empty() ? nullptr : Find(s->parent)) path.push_back(s);
  return path;
}

int NetworkTree::SwitchesBetween(const std::string& a, const std::string& b) const {
  if (a == b) return 0;
  const auto pa = PathOf(a), pb = PathOf(b);
  for (size_t i = 0; i < pa.size(); ++i)
    for (size_t j = 0; j < pb.size(); ++j)
      if (pa[i] == pb[j]) return static_cast<int>(i + j + 1);
  return -1;
}

const NetworkSwitch* NetworkTree::CommonAncestor(const std::vector<std::string>& hosts) const {
  if (hosts.empty()) return nullptr;
  std::vector<const NetworkSwitch*> common = PathOf(hosts[0]);
  for (size_t k = 1; k < hosts.size(); ++k) {
    const auto p = PathOf(hosts[k]);
    const std::set<const NetworkSwitch*> on(p.begin(), p.end());
    std::erase_if(common, [&](const NetworkSwitch* s) { return !on.count(s); });
  }
  return common.empty() ? nullptr : common.front();
}

StatusOr<NetworkTree> ParseTopologyConf(std::string_view text, const std::string& origin) {
  std::vector<NetworkSwitch> switches;
  GL_RETURN_IF_ERROR(ForEachConfigLine(text, origin, [&](int line_no, std::string_view line) -> Status {
    std::istringstream words{std::string(line)};
    std::string word;
    NetworkSwitch s;
    bool named = false;
    while (words >> word) {
      const auto eq = word.find('=');
      if (eq == std::string::npos) return AtLine(origin, line_no, "'" + word + "' is not KEY=VALUE");
      const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
      if (key == "SwitchName") {
        // The name travels to every rank (GPULAUNCH_SWITCH, inside the slot
        // table's '/'- and ' '-separated rows): letters, digits and . _ - only.
        const auto bad = std::find_if(value.begin(), value.end(), [](char c) {
          return !std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-';
        });
        if (bad != value.end()) {
          return AtLine(origin, line_no, "switch name '" + value + "' has '" + std::string(1, *bad) +
                                             "'; use letters, digits, '.', '_' and '-'");
        }
        s.name = value;
        named = !value.empty();
      } else if (key == "Nodes" || key == "Switches") {
        auto names = ExpandHostlist(value);
        if (!names.ok()) return AtLine(origin, line_no, names.status().message());
        (key == "Nodes" ? s.nodes : s.children) = std::move(names).value();
      } else if (key == "LinkSpeed") {
        const auto v = ParseInt(value);
        if (!v || *v <= 0) return AtLine(origin, line_no, "LinkSpeed must be a positive number, got '" + value + "'");
        s.link_speed = *v;
      } else if (key == "BlockName" || key == "BlockSizes" || key == "RingName") {
        return AtLine(origin, line_no, key + " (topology/block or topology/ring) is not supported; describe the "
                                             "network as a tree with SwitchName=... Nodes=... / Switches=...");
      } else {
        return AtLine(origin, line_no, "unknown key '" + key + "' (expected SwitchName, Nodes, Switches, LinkSpeed)");
      }
    }
    if (!named) return AtLine(origin, line_no, "a line must start with SwitchName=NAME");
    if (s.nodes.empty() && s.children.empty()) {
      return AtLine(origin, line_no, "switch '" + s.name + "' has neither Nodes= nor Switches=");
    }
    switches.push_back(std::move(s));
    return Status::Ok();
  }));
  return NetworkTree::Build(std::move(switches), origin);
}

StatusOr<NetworkTree> ParseScontrolTopology(std::string_view text, const std::string& origin) {
  std::string conf;
  for (const std::string& line : Split(text, '\n')) {
    std::istringstream words(line);
    std::vector<std::string> keep;
    const bool upper = line.find("Switches=") != std::string::npos;
    for (std::string w; words >> w;) {
      if (StartsWith(w, "Level=") || (upper && StartsWith(w, "Nodes="))) continue;
      keep.push_back(w);
    }
    conf += Join(keep, " ") + "\n";
  }
  return ParseTopologyConf(conf, origin);
}

StatusOr<NetworkTree> ReadTopologyConf(const std::string& path) {
  GL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "topology file"));
  return ParseTopologyConf(text, path);
}

std::string WriteTopologyConf(const NetworkTree& tree) {
  std::string out;
  for (const NetworkSwitch& s : tree.switches()) {
    out += "SwitchName=" + s.name;
    if (!s.nodes.empty()) out += " Nodes=" + CompressHostlist(s.nodes);
    if (!s.children.empty()) out += " Switches=" + CompressHostlist(s.children);
    if (s.link_speed) out += " LinkSpeed=" + std::to_string(*s.link_speed);
    out += "\n";
  }
  return out;
}

}  // namespace gpulaunch
