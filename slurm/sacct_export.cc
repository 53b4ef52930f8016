#include "slurm/sacct_export.h"

#include <cstdio>
#include <ctime>
#include <map>

#include "common/strings.h"

namespace gpulaunch {
namespace {

// "2026-12-05T10:36:15" as seconds (UTC; sacct prints local time, and only
// differences within one export are used). "Unknown", "None": -1.
StatusOr<double> Seconds(const std::string& text, const std::string& where) {
  if (text == "Unknown" || text == "None" || text.empty()) return -1.0;
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6) {
    return InvalidArgument(where + ": time '" + Excerpt(text) + "' is not YYYY-MM-DDTHH:MM:SS");
  }
  tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d, tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = s;
  return static_cast<double>(timegm(&tm));
}

// The count of `key` ("gres/gpu=", "cpu=") in a TRES list; 0: none.
int CountOf(const std::string& tres, const std::string& key) {
  for (const std::string& item : Split(tres, ',')) {
    if (!StartsWith(item, key)) continue;
    const auto n = ParseInt(item.substr(key.size()));
    if (n && *n >= 0 && *n <= 1000000) return static_cast<int>(*n);
  }
  return 0;
}
int GpusOf(const std::string& tres) { return CountOf(tres, "gres/gpu="); }

// "1-02:03:04", "02:03:04", "03:04" (minutes:seconds), "5" (minutes) as
// seconds; 0 for UNLIMITED, Partition_Limit and anything else.
double LimitSeconds(const std::string& text) {
  int d = 0, h = 0, m = 0, s = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d-%d:%d:%d%c", &d, &h, &m, &s, &tail) == 4) return ((d * 24 + h) * 60 + m) * 60.0 + s;
  if (std::sscanf(text.c_str(), "%d:%d:%d%c", &h, &m, &s, &tail) == 3) return (h * 60 + m) * 60.0 + s;
  if (std::sscanf(text.c_str(), "%d:%d%c", &m, &s, &tail) == 2) return m * 60.0 + s;
  const auto minutes = ParseInt(text);
  return minutes && *minutes > 0 && *minutes < 100000000 ? *minutes * 60.0 : 0;
}

}  // namespace

StatusOr<std::vector<SacctJob>> ParseSacctExport(const std::string& text, const std::string& origin) {
  const std::vector<std::string> lines = Split(text, '\n');
  if (lines.empty() || lines[0].find('|') == std::string::npos) {
    return InvalidArgument(origin + ":1: not a sacct -P export with a header line; make one with: " +
                           std::string(kSacctExportCommand));
  }
  std::map<std::string, size_t> col;
  const std::vector<std::string> header = Split(lines[0], '|');
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  if (!col.count("JobIDRaw") && col.count("JobID")) col["JobIDRaw"] = col["JobID"];
  if (!col.count("AllocTRES") && col.count("ReqTRES")) col["AllocTRES"] = col["ReqTRES"];
  for (const char* need : {"JobIDRaw", "Submit", "Start", "End", "AllocTRES"}) {
    if (!col.count(need)) {
      return InvalidArgument(origin + ":1: the export has no " + need + " column; make one with: " +
                             std::string(kSacctExportCommand));
    }
  }
  std::vector<SacctJob> jobs;
  std::map<std::string, size_t> index;
  for (size_t n = 1; n < lines.size(); ++n) {
    if (Trim(lines[n]).empty()) continue;
    const std::string where = origin + ":" + std::to_string(n + 1);
    const std::vector<std::string> f = Split(lines[n], '|');
    if (f.size() < header.size()) {
      return InvalidArgument(where + ": " + std::to_string(f.size()) + " fields, the header has " +
                             std::to_string(header.size()));
    }
    const std::string& id = f[col["JobIDRaw"]];
    if (id.find('.') != std::string::npos) continue;  // a step (export without -X)
    if (Trim(id).empty()) return InvalidArgument(where + ": a job without a JobIDRaw");
    GL_ASSIGN_OR_RETURN(double submit, Seconds(f[col["Submit"]], where));
    GL_ASSIGN_OR_RETURN(double start, Seconds(f[col["Start"]], where));
    GL_ASSIGN_OR_RETURN(double end, Seconds(f[col["End"]], where));
    if (submit < 0) return InvalidArgument(where + ": job " + Excerpt(id) + " has no submit time");
    const std::string state = col.count("State") ? f[col["State"]] : "";
    const bool by_backfill = col.count("Flags") && f[col["Flags"]].find("SchedBackfill") != std::string::npos;
    const bool preempted = state == "PREEMPTED" && end >= 0;
    const auto [it, fresh] = index.emplace(id, jobs.size());
    if (fresh) {
      const double limit = col.count("Timelimit") ? LimitSeconds(f[col["Timelimit"]]) : 0;
      jobs.push_back(SacctJob{id, submit, start, end, start >= 0 && end >= 0 ? end - start : 0,
                              GpusOf(f[col["AllocTRES"]]), CountOf(f[col["AllocTRES"]], "cpu="), limit, 1, state,
                              col.count("Account") ? f[col["Account"]] : "", by_backfill, static_cast<int>(n + 1), {}});
      if (preempted) jobs.back().preempted_ends.push_back(end);
      continue;
    }
    SacctJob& job = jobs[it->second];  // another run of a requeued job
    if (preempted) job.preempted_ends.push_back(end);
    ++job.runs;
    job.submit = std::min(job.submit, submit);
    if (start >= 0 && (job.start < 0 || start < job.start)) {
      job.start = start;
      job.backfilled = by_backfill;
    }
    if (end >= job.end) {
      job.end = end;
      job.last_run_s = start >= 0 && end >= 0 ? end - start : job.last_run_s;
      job.state = state;
    }
    if (job.gpus == 0) job.gpus = GpusOf(f[col["AllocTRES"]]);
    if (job.cpus == 0) job.cpus = CountOf(f[col["AllocTRES"]], "cpu=");
  }
  return jobs;
}

}  // namespace gpulaunch
