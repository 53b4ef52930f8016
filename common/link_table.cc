#include "common/link_table.h"

#include <algorithm>
#include <cerrno>
#include <set>
#include <string_view>
#include <unordered_set>
#include <sys/stat.h>

#include "common/env.h"
#include "common/json.h"
#include "common/json_reader.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr const char* kFormat = "gpulaunch-links/v1";
constexpr double kMaxGbytePerS = 1e5;    // 800 Tb/s: more is a unit mistake
constexpr double kMaxLatencyUs = 60e6;   // a minute

std::pair<std::string, std::string> Key(const std::string& a, const std::string& b) {
  return a < b ? std::make_pair(a, b) : std::make_pair(b, a);
}

void SetLink(Json& o, const MeasuredLink& l) {
  o.Set("gbyte_per_s", l.gbyte_per_s);
  o.Set("latency_us", l.latency_us);
}

StatusOr<MeasuredLink> ReadLink(const JsonReader& rd, const Json& o) {
  MeasuredLink l;
  GL_ASSIGN_OR_RETURN(l.gbyte_per_s, rd.Amount(o, "gbyte_per_s", kMaxGbytePerS, "GB/s"));
  GL_ASSIGN_OR_RETURN(l.latency_us, rd.Amount(o, "latency_us", kMaxLatencyUs, "microseconds"));
  if (l.gbyte_per_s <= 0) return rd.Error(o, "\"gbyte_per_s\" is 0; a measured link moves bytes (remove the entry instead)");
  return l;
}

}  // namespace

const MeasuredLink* LinkTable::Pair(const std::string& a, const std::string& b) const {
  const auto it = pairs.find(Key(a, b));
  return it == pairs.end() ? nullptr : &it->second;
}

void LinkTable::AddPair(const std::string& a, const std::string& b, const MeasuredLink& link) {
  const auto [it, fresh] = pairs.emplace(Key(a, b), link);
  if (fresh) return;
  it->second.gbyte_per_s = std::min(it->second.gbyte_per_s, link.gbyte_per_s);
  it->second.latency_us = std::max(it->second.latency_us, link.latency_us);
}

const MeasuredLeaf* LinkTable::LeafOf(const std::string& host) const {
  for (const MeasuredLeaf& leaf : leaves)
    if (std::find(leaf.hosts.begin(), leaf.hosts.end(), host) != leaf.hosts.end()) return &leaf;
  return nullptr;
}

LinkTable::MissingPairs LinkTable::Missing(const std::vector<std::string>& hosts, size_t list_at_most) const {
  MissingPairs out;
  const size_t n = hosts.size();
  if (n < 2) return out;
  const std::unordered_set<std::string_view> among(hosts.begin(), hosts.end());
  size_t measured = 0;
  for (const auto& [key, link] : pairs) measured += among.count(key.first) && among.count(key.second) ? 1 : 0;
  out.count = n * (n - 1) / 2 - measured;
  // Each pair looked at is either listed or measured: at most
  // list_at_most + measured lookups.
  for (size_t i = 0; i < n && out.first.size() < std::min(list_at_most, out.count); ++i)
    for (size_t j = i + 1; j < n && out.first.size() < std::min(list_at_most, out.count); ++j)
      if (measured == 0 || !Pair(hosts[i], hosts[j])) out.first.emplace_back(hosts[i], hosts[j]);
  return out;
}

void LinkTable::MergeFrom(const LinkTable& newer) {
  for (const auto& [key, link] : newer.pairs) pairs[key] = link;
  for (const auto& [host, link] : newer.shared_memory) shared_memory[host] = link;
  if (!newer.leaves.empty()) leaves = newer.leaves;
  if (!newer.measured_at.empty()) measured_at = newer.measured_at;
}

std::string WriteLinkTable(const LinkTable& t) {
  Json root = Json::Object();
  root.Set("format", kFormat);
  root.Set("measured_at", t.measured_at);
  Json& pairs = root.Set("pairs", Json::Array());
  for (const auto& [key, link] : t.pairs) {
    Json hosts = Json::Array();
    hosts.Push(key.first);
    hosts.Push(key.second);
    Json entry = Json::Object();
    entry.Set("hosts", std::move(hosts));
    SetLink(entry, link);
    pairs.Push(std::move(entry));
  }
  Json& shm = root.Set("shared_memory", Json::Array());
  for (const auto& [host, link] : t.shared_memory) {
    Json entry = Json::Object();
    entry.Set("host", host);
    SetLink(entry, link);
    shm.Push(std::move(entry));
  }
  Json& leaves = root.Set("leaves", Json::Array());
  for (const MeasuredLeaf& leaf : t.leaves) {
    Json entry = Json::Object();
    entry.Set("name", leaf.name);
    Json hosts = Json::Array();
    for (const std::string& h : leaf.hosts) hosts.Push(h);
    entry.Set("hosts", std::move(hosts));
    entry.Set("uplink_gbyte_per_s", leaf.uplink_gbyte_per_s);
    leaves.Push(std::move(entry));
  }
  return root.Write();
}

StatusOr<LinkTable> ParseLinkTable(const std::string& text, const std::string& origin) {
  GL_ASSIGN_OR_RETURN(Json root, ParseJson(text, origin));
  const JsonReader rd(origin);
  GL_ASSIGN_OR_RETURN(const std::string format, rd.Str(root, "format"));
  if (format != kFormat) {
    return rd.Error(root, "format \"" + format + "\" is not " + kFormat +
                              "; write the file again with `gpulaunch linkcheck --hosts ... --links FILE`");
  }
  LinkTable t;
  t.origin = origin;
  GL_ASSIGN_OR_RETURN(t.measured_at, rd.Str(root, "measured_at"));
  GL_ASSIGN_OR_RETURN(const Json* pairs, rd.Field(root, "pairs", Json::Type::kArray));
  for (const Json& p : pairs->items()) {
    GL_ASSIGN_OR_RETURN(std::vector<std::string> hosts, rd.StrList(p, "hosts"));
    if (hosts.size() != 2 || hosts[0] == hosts[1] || hosts[0].empty() || hosts[1].empty()) {
      return rd.Error(p, "\"hosts\" must name two different hosts");
    }
    GL_ASSIGN_OR_RETURN(MeasuredLink link, ReadLink(rd, p));
    if (t.Pair(hosts[0], hosts[1])) return rd.Error(p, "the pair " + hosts[0] + ", " + hosts[1] + " appears twice");
    t.AddPair(hosts[0], hosts[1], link);
  }
  GL_ASSIGN_OR_RETURN(const Json* shm, rd.Field(root, "shared_memory", Json::Type::kArray));
  for (const Json& s : shm->items()) {
    GL_ASSIGN_OR_RETURN(std::string host, rd.Str(s, "host"));
    GL_ASSIGN_OR_RETURN(MeasuredLink link, ReadLink(rd, s));
    if (!t.shared_memory.emplace(host, link).second) return rd.Error(s, "host " + host + " appears twice");
  }
  GL_ASSIGN_OR_RETURN(const Json* leaves, rd.Field(root, "leaves", Json::Type::kArray));
  std::set<std::string> placed, names;
  for (const Json& l : leaves->items()) {
    MeasuredLeaf leaf;
    GL_ASSIGN_OR_RETURN(leaf.name, rd.Str(l, "name"));
    GL_ASSIGN_OR_RETURN(leaf.hosts, rd.StrList(l, "hosts"));
    GL_ASSIGN_OR_RETURN(leaf.uplink_gbyte_per_s, rd.Amount(l, "uplink_gbyte_per_s", kMaxGbytePerS, "GB/s"));
    if (leaf.name.empty() || !names.insert(leaf.name).second) return rd.Error(l, "leaf names must be distinct and not empty");
    if (leaf.hosts.empty()) return rd.Error(l, "leaf " + leaf.name + " has no hosts");
    for (const std::string& h : leaf.hosts)
      if (!placed.insert(h).second) return rd.Error(l, "host " + h + " is under two leaves");
    t.leaves.push_back(std::move(leaf));
  }
  return t;
}

StatusOr<std::optional<LinkTable>> ReadLinkTableIfPresent(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<LinkTable>();
  GL_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path, "link file"));
  GL_ASSIGN_OR_RETURN(LinkTable t, ParseLinkTable(text, path));
  return std::optional<LinkTable>(std::move(t));
}

StatusOr<NetworkTree> LeavesAsNetworkTree(const LinkTable& t) {
  if (t.leaves.empty()) return NetworkTree();
  std::vector<NetworkSwitch> switches;
  std::string root = "spine";
  while (std::any_of(t.leaves.begin(), t.leaves.end(), [&](const MeasuredLeaf& l) { return l.name == root; })) root += "0";
  NetworkSwitch top;
  top.name = root;
  for (const MeasuredLeaf& leaf : t.leaves) {
    NetworkSwitch s;
    s.name = leaf.name;
    s.nodes = leaf.hosts;
    switches.push_back(std::move(s));
    top.children.push_back(leaf.name);
  }
  if (switches.size() > 1) switches.push_back(std::move(top));
  return NetworkTree::Build(std::move(switches), t.origin.empty() ? "measured leaves" : t.origin);
}

std::string DefaultLinkTablePath() {
  const std::string state = EnvOr("XDG_STATE_HOME", "");
  if (!state.empty()) return state + "/gpulaunch/links.json";
  const std::string home = EnvOr("HOME", "");
  return home.empty() ? "" : home + "/.local/state/gpulaunch/links.json";
}

}  // namespace gpulaunch
