#include "launcher/check/storage_check.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "common/json.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

struct Groups {
  std::vector<int> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) { return parent[x] == x ? x : parent[x] = Find(parent[x]); }
  void Join(int a, int b) { parent[Find(a)] = Find(b); }
};

std::string Verdict(const std::map<std::string, StorageReadResult>& reads, const std::string& reader,
                    const std::string& writer) {
  auto r = reads.find(reader);
  if (r == reads.end()) return "unknown";
  auto s = r->second.seen.find(writer);
  return s == r->second.seen.end() ? "unknown" : s->second;
}

std::string Spread(const char* what, const std::vector<double>& v, const char* unit) {
  if (v.empty()) return "";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s %.1f-%.1f %s (%.0f%%)", what, *lo, *hi, unit, *hi > 0 ? (*hi - *lo) / *hi * 100 : 0);
  return buf;
}

// The largest set of hosts that read each other's files back correctly (they
// share a view of the storage); ties go to the set with the first host.
std::vector<int> SharedView(const std::vector<std::string>& hosts, const std::vector<int>& wrote,
                            const std::map<std::string, StorageReadResult>& reads) {
  Groups groups(hosts.size());
  for (int a : wrote) {
    for (int b : wrote) {
      if (a < b && Verdict(reads, hosts[a], hosts[b]) == "ok" && Verdict(reads, hosts[b], hosts[a]) == "ok") {
        groups.Join(a, b);
      }
    }
  }
  std::map<int, std::vector<int>> members;
  for (int i : wrote) members[groups.Find(i)].push_back(i);
  std::vector<int> shared;
  for (const auto& [root, m] : members) {
    if (m.size() > shared.size() || (m.size() == shared.size() && !shared.empty() && m.front() < shared.front())) {
      shared = m;
    }
  }
  return shared;
}

// Host i's verdict from the read phase: what it saw of the others' files and
// whether the shared view sees its own.
void JudgeReads(const std::string& path, const std::vector<std::string>& hosts, const std::vector<int>& wrote,
                const std::vector<int>& shared, const std::map<std::string, StorageReadResult>& reads, int i,
                StorageHostVerdict& v) {
  auto r = reads.find(hosts[i]);
  if (r == reads.end() || !r->second.error.empty()) {
    v.reason = r == reads.end() ? "did not answer the read phase" : r->second.error;
    return;
  }
  v.of = static_cast<int>(wrote.size());
  std::vector<std::string> missing, different, unseen_by;
  for (int w : wrote) {
    const std::string verdict = Verdict(reads, hosts[i], hosts[w]);
    if (verdict == "ok") {
      ++v.sees;
    } else if (std::find(shared.begin(), shared.end(), w) != shared.end() || w == i) {
      (verdict == "missing" ? missing : different).push_back(hosts[w]);
    }
  }
  const bool in_shared = std::find(shared.begin(), shared.end(), i) != shared.end();
  if (!in_shared) {
    for (int s : shared)
      if (Verdict(reads, hosts[s], hosts[i]) != "ok") unseen_by.push_back(hosts[s]);
  }
  if (in_shared && missing.empty() && different.empty()) {
    v.ok = true;
    return;
  }
  std::vector<std::string> why;
  if (!missing.empty()) why.push_back("does not see the files of " + Join(missing, ", "));
  if (!different.empty()) why.push_back("reads different data in the files of " + Join(different, ", "));
  if (!unseen_by.empty()) why.push_back(Join(unseen_by, ", ") + " do not see its file");
  v.reason = Join(why, "; ") + (in_shared ? "" : ": " + path + " is not the same storage there");
}

}  // namespace

StorageCheckReport AnalyzeStorage(const std::string& path, uint64_t bytes, const std::vector<std::string>& hosts,
                                  const std::map<std::string, StorageWriteResult>& writes,
                                  const std::map<std::string, StorageReadResult>& reads) {
  StorageCheckReport report;
  report.path = path;
  report.bytes = bytes;
  std::vector<int> wrote;  // indices of hosts whose write phase worked
  for (size_t i = 0; i < hosts.size(); ++i) {
    StorageHostVerdict v;
    v.host = hosts[i];
    auto w = writes.find(hosts[i]);
    if (w == writes.end()) {
      v.reason = "did not answer the write phase";
    } else if (!w->second.error.empty()) {
      v.reason = w->second.error;
    } else {
      v.write = w->second;
      wrote.push_back(static_cast<int>(i));
    }
    report.hosts.push_back(v);
  }
  const std::vector<int> shared = SharedView(hosts, wrote, reads);
  for (int i : wrote) JudgeReads(path, hosts, wrote, shared, reads, i, report.hosts[i]);
  report.ok = !hosts.empty() && std::all_of(report.hosts.begin(), report.hosts.end(),
                                            [](const StorageHostVerdict& v) { return v.ok; });
  return report;
}

std::string RenderStorageTable(const StorageCheckReport& r) {
  char line[512];
  std::string out = "gpulaunch check --storage " + r.path + " (" + std::to_string(r.hosts.size()) + " hosts, " +
                    std::to_string(r.bytes >> 20) + " MiB per host)\n";
  std::snprintf(line, sizeof line, "%-16s %-6s %11s %10s %9s %7s %9s %5s  %s\n", "HOST", "STATE", "WRITE MiB/s",
                "READ MiB/s", "CREATE us", "STAT us", "UNLINK us", "SEES", "REASON");
  out += line;
  std::vector<double> wr, rd, cr, st, ul;
  for (const StorageHostVerdict& v : r.hosts) {
    const bool measured = v.write.error.empty() && v.write.write_mibs > 0;
    if (measured) {
      wr.push_back(v.write.write_mibs), rd.push_back(v.write.read_mibs), cr.push_back(v.write.create_us),
          st.push_back(v.write.stat_us), ul.push_back(v.write.unlink_us);
      std::snprintf(line, sizeof line, "%-16s %-6s %11.1f %10.1f %9.1f %7.1f %9.1f %5s  %s\n", v.host.c_str(),
                    v.ok ? "ok" : "FAILED", v.write.write_mibs, v.write.read_mibs, v.write.create_us, v.write.stat_us,
                    v.write.unlink_us, (std::to_string(v.sees) + "/" + std::to_string(v.of)).c_str(), v.reason.c_str());
    } else {
      std::snprintf(line, sizeof line, "%-16s %-6s %11s %10s %9s %7s %9s %5s  %s\n", v.host.c_str(), "FAILED", "-", "-",
                    "-", "-", "-", "-", v.reason.c_str());
    }
    std::string text = line;
    while (text.size() > 1 && text[text.size() - 2] == ' ') text.erase(text.size() - 2, 1);
    out += text;
  }
  if (!wr.empty()) {
    out += "spread: " + Spread("write", wr, "MiB/s") + ", " + Spread("read", rd, "MiB/s") + ", " +
           Spread("create", cr, "us") + ", " + Spread("stat", st, "us") + ", " + Spread("unlink", ul, "us") + "\n";
  }
  return out;
}

std::string StorageReportJson(const StorageCheckReport& r) {
  Json j = Json::Object();
  j.Set("path", r.path);
  j.Set("bytes_per_host", static_cast<double>(r.bytes));
  j.Set("ok", r.ok);
  Json hosts = Json::Array();
  for (const StorageHostVerdict& v : r.hosts) {
    Json h = Json::Object();
    h.Set("host", v.host);
    h.Set("ok", v.ok);
    h.Set("reason", v.reason);
    h.Set("write_mibs", v.write.write_mibs);
    h.Set("read_mibs", v.write.read_mibs);
    h.Set("create_us", v.write.create_us);
    h.Set("stat_us", v.write.stat_us);
    h.Set("unlink_us", v.write.unlink_us);
    h.Set("sees", v.sees);
    h.Set("of", v.of);
    hosts.Push(h);
  }
  j.Set("hosts", hosts);
  return j.Write() + "\n";
}

}  // namespace gpulaunch
