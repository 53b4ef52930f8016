#include "policies/pool/job_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/strings.h"

namespace gpulaunch::pool {
namespace {

StatusOr<double> Number(const std::string& text, const std::string& where, const char* what) {
  char* end = nullptr;
  const std::string t(Trim(text));
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1e12) {
    return InvalidArgument(where + ": " + what + " '" + Excerpt(t) + "' is not a non-negative number");
  }
  return v;
}

StatusOr<int> Whole(const std::string& text, const std::string& where, const char* what) {
  GL_ASSIGN_OR_RETURN(double v, Number(text, where, what));
  if (v != std::floor(v) || v > 1000000) {
    return InvalidArgument(where + ": " + what + " '" + Excerpt(Trim(text)) + "' is not a whole number up to 1000000");
  }
  return static_cast<int>(v);
}

// Alibaba's openb pods (see job_trace.h): the scheduled pods with GPUs.
template <typename Column>
StatusOr<std::vector<TraceJob>> ParseOpenbPods(const std::vector<std::string>& lines, const std::string& origin,
                                               Column column) {
  const int gpus = column("num_gpu"), milli = column("gpu_milli"), created = column("creation_time"),
            deleted = column("deletion_time"), scheduled = column("scheduled_time");
  if (gpus < 0 || deleted < 0 || scheduled < 0) {
    return InvalidArgument(origin + ":1: openb pod list without num_gpu, deletion_time or scheduled_time");
  }
  const int last = std::max({gpus, milli, created, deleted, scheduled});
  std::vector<TraceJob> jobs;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string where = origin + ":" + std::to_string(i + 1);
    const std::vector<std::string> f = Split(lines[i], ',');
    if (static_cast<int>(f.size()) <= last) {
      return InvalidArgument(where + ": " + std::to_string(f.size()) + " fields, the header has more");
    }
    if (Trim(f[static_cast<size_t>(scheduled)]).empty()) continue;  // never placed (Pending)
    GL_ASSIGN_OR_RETURN(int whole, Whole(f[static_cast<size_t>(gpus)], where, "num_gpu"));
    GL_ASSIGN_OR_RETURN(int share, Whole(f[static_cast<size_t>(milli)], where, "gpu_milli"));
    if (whole == 0 && share == 0) continue;  // CPU only
    TraceJob j;
    j.line = static_cast<int>(i + 1);
    j.gpus = std::max(1, whole);  // a shared GPU, rounded up to a whole one
    GL_ASSIGN_OR_RETURN(j.submit, Number(f[static_cast<size_t>(created)], where, "creation_time"));
    GL_ASSIGN_OR_RETURN(double start, Number(f[static_cast<size_t>(scheduled)], where, "scheduled_time"));
    GL_ASSIGN_OR_RETURN(double end, Number(f[static_cast<size_t>(deleted)], where, "deletion_time"));
    if (end < start) return InvalidArgument(where + ": deletion_time before scheduled_time");
    j.duration = end - start;
    jobs.push_back(j);
  }
  if (jobs.empty()) return InvalidArgument(origin + ": no scheduled pod with GPUs");
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = static_cast<int>(i);
  return jobs;
}

}  // namespace

StatusOr<std::vector<TraceJob>> ParseTrace(const std::string& text, const std::string& origin) {
  std::vector<std::string> lines = Split(text, '\n');
  for (std::string& l : lines)
    if (!l.empty() && l.back() == '\r') l.pop_back();
  return ParseTraceLines(std::move(lines), origin);
}

StatusOr<std::vector<TraceJob>> ParseTraceLines(std::vector<std::string> lines, const std::string& origin) {
  while (!lines.empty() && Trim(lines.back()).empty()) lines.pop_back();
  if (lines.empty()) return InvalidArgument(origin + ": empty trace");
  const std::vector<std::string> header = Split(lines[0], ',');
  auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  int submit = column("submit"), duration = column("duration"), gpus = column("gpus");
  const int team = column("team"), priority = column("priority"), user = column("user"),
            template_name = column("template"), limit = column("limit");
  if (column("gpu_milli") >= 0 && column("creation_time") >= 0) return ParseOpenbPods(lines, origin, column);
  if (submit < 0) submit = column("submit_time");
  if (submit < 0) submit = column("submission_time");
  if (gpus < 0) gpus = column("num_gpu");
  if (submit < 0 || duration < 0 || gpus < 0) {
    return InvalidArgument(origin + ":1: unknown trace header '" + Excerpt(lines[0]) +
                           "': expected Tiresias (job_id,num_gpu,submit_time,...,duration,...), ElasticFlow "
                           "(job_id,submission_time,duration,num_gpu) or "
                           "id,submit,duration,gpus[,team[,priority[,user[,template[,limit]]]]]");
  }
  std::vector<TraceJob> jobs;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string where = origin + ":" + std::to_string(i + 1);
    const std::vector<std::string> f = Split(lines[i], ',');
    if (static_cast<int>(f.size()) <= std::max({submit, duration, gpus, team, priority, user, template_name, limit})) {
      return InvalidArgument(where + ": " + std::to_string(f.size()) + " fields, the header has " +
                             std::to_string(header.size()));
    }
    TraceJob j;
    j.line = static_cast<int>(i + 1);
    GL_ASSIGN_OR_RETURN(j.submit, Number(f[static_cast<size_t>(submit)], where, "submit time"));
    GL_ASSIGN_OR_RETURN(j.duration, Number(f[static_cast<size_t>(duration)], where, "duration"));
    GL_ASSIGN_OR_RETURN(double g, Number(f[static_cast<size_t>(gpus)], where, "GPU count"));
    if (g < 1 || g != std::floor(g) || g > 100000) {
      return InvalidArgument(where + ": GPU count '" + f[static_cast<size_t>(gpus)] + "' must be a whole number from 1");
    }
    j.gpus = static_cast<int>(g);
    if (team >= 0) {
      GL_ASSIGN_OR_RETURN(j.team, Whole(f[static_cast<size_t>(team)], where, "team"));
    }
    if (priority >= 0) {
      GL_ASSIGN_OR_RETURN(j.priority, Whole(f[static_cast<size_t>(priority)], where, "priority"));
    }
    if (user >= 0) {
      GL_ASSIGN_OR_RETURN(j.user, Whole(f[static_cast<size_t>(user)], where, "user"));
    }
    if (template_name >= 0) j.template_name = std::string(Trim(f[static_cast<size_t>(template_name)]));
    if (limit >= 0 && !Trim(f[static_cast<size_t>(limit)]).empty()) {
      GL_ASSIGN_OR_RETURN(j.limit, Number(f[static_cast<size_t>(limit)], where, "time limit"));
      if (j.limit <= 0) return InvalidArgument(where + ": time limit 0: give seconds above 0, or leave it empty");
    }
    jobs.push_back(j);
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = static_cast<int>(i);
  return jobs;
}

StatusOr<std::vector<TraceJob>> LoadTrace(const std::string& path) {
  GL_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadTextLines(path, "trace"));
  return ParseTraceLines(std::move(lines), path);
}

void AssignTeams(std::vector<TraceJob>& jobs, int teams) {
  for (TraceJob& j : jobs) j.team = teams > 0 ? j.id % teams : 0;
}

}  // namespace gpulaunch::pool
