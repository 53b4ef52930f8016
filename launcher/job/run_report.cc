#include "launcher/job/run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/file_write.h"
#include "common/output_dir.h"
#include "common/json.h"
#include "common/parallel_layout.h"
#include "common/stats.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

std::string Ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 0.1 ? "%.2f ms" : "%.1f ms", s * 1e3);
  return buf;
}

std::string Percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", f * 100);
  return buf;
}

std::string Bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return FormatFixed(v, u == 0 ? 0 : 1) + " " + units[u];
}

// Tensor-parallel groups whose ranks run on more than one host, described.
std::vector<std::string> TpGroupsAcrossHosts(const RunProfile& p) {
  std::vector<std::string> out;
  const int world = static_cast<int>(p.host_of_rank.size());
  if (p.layout.empty() || world == 0) return out;
  auto layout = ParseLayout(p.layout, world);
  if (!layout.ok() || layout->extent[kTp] < 2) return out;
  std::set<std::vector<int>> seen;
  for (int r = 0; r < world; ++r) {
    const std::vector<int> group = layout->GroupOf(kTp, r);
    if (!seen.insert(group).second) continue;
    std::set<std::string> hosts;
    for (int g : group) hosts.insert(p.host_of_rank[g]);
    if (hosts.size() > 1) {
      std::vector<int> sorted = group;
      std::sort(sorted.begin(), sorted.end());
      out.push_back("ranks " + FormatIdList(sorted) + " on " + Join({hosts.begin(), hosts.end()}, ", "));
    }
  }
  return out;
}

std::string LabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// The figures: steps, per-group traffic, the bubble and the slowest rank.
void AddFigures(const RunProfile& p, RunReport& r) {
  std::map<int64_t, double> step_time;  // slowest rank's time of each step
  std::map<std::string, GroupSummary> groups;
  double total_step = 0, bubble = 0, pipeline_step = 0;
  std::vector<std::pair<double, int>> compute_by_rank;  // mean per step
  for (const auto& [rank, steps] : p.steps) {
    if (steps.empty()) continue;
    ++r.ranks;
    double compute = 0;
    for (const StepMetrics& m : steps) {
      double& t = step_time[m.step];
      t = std::max(t, m.step_s);
      total_step += m.step_s;
      compute += m.compute_s;
      if (m.bubble_theory > 0 || m.bubble_s > 0) {
        bubble += m.bubble_s;
        pipeline_step += m.step_s;
        r.bubble_theory = std::max(r.bubble_theory, m.bubble_theory);
      }
      for (const GroupTraffic& g : m.groups) {
        GroupSummary& s = groups[g.group];
        s.group = g.group;
        s.comm_s += g.comm_s;
        s.bytes += g.bytes;
        s.inter_host_bytes_per_step += static_cast<double>(g.inter_host_bytes);
      }
    }
    compute_by_rank.emplace_back(compute / static_cast<double>(steps.size()), rank);
  }
  if (r.ranks == 0) return;
  r.steps = static_cast<int>(step_time.size());
  std::vector<double> times;
  for (const auto& [step, t] : step_time) {
    times.push_back(t);
    if (t > r.step_max_s) r.step_max_s = t, r.step_max_at = step;
  }
  r.step_median_s = Quantile(times, 0.5);
  r.step_p95_s = Quantile(times, 0.95);
  for (auto& [name, g] : groups) {
    g.share = total_step > 0 ? g.comm_s / total_step : 0;
    g.gbps = g.comm_s > 0 ? static_cast<double>(g.bytes) * 8 / g.comm_s / 1e9 : 0;
    g.inter_host_bytes_per_step /= static_cast<double>(std::max(r.steps, 1));
    r.comm_share += g.share;
    r.groups.push_back(g);
  }
  r.bubble_share = pipeline_step > 0 ? bubble / pipeline_step : 0;
  // Ties go to the lowest rank.
  std::vector<double> computes;
  for (const auto& [c, rank] : compute_by_rank) computes.push_back(c);
  r.median_compute_s = Quantile(computes, 0.5);
  const auto slowest = std::max_element(compute_by_rank.begin(), compute_by_rank.end(), [](const auto& a, const auto& b) {
    return a.first < b.first || (a.first == b.first && a.second > b.second);
  });
  r.slowest_rank = slowest->second;
  r.slowest_compute_s = slowest->first;
  if (r.slowest_rank < static_cast<int>(p.host_of_rank.size())) r.slowest_host = p.host_of_rank[r.slowest_rank];
}

// When communication takes a large share of the step: the likely causes.
void AddWarnings(const RunProfile& p, RunReport& r) {
  if (r.comm_share < kHighCommShare) return;
  const std::string share = "communication takes " + Percent(r.comm_share) + " of the step";
  bool explained = false;
  if (r.ranks > 1 && r.slowest_compute_s > kStragglerFactor * r.median_compute_s) {
    r.warnings.push_back(share + ", mostly waiting: rank " + std::to_string(r.slowest_rank) + " on " +
                         (r.slowest_host.empty() ? "?" : r.slowest_host) + " computes " +
                         FormatFixed(r.slowest_compute_s / std::max(r.median_compute_s, 1e-9), 1) +
                         "x as long as the median rank (" + Ms(r.slowest_compute_s) + " against " +
                         Ms(r.median_compute_s) +
                         " per step) and the others wait for it in their collectives; check that host for other "
                         "processes, GPU clocks or throttling, or give it less work");
    explained = true;
  }
  for (const GroupSummary& g : r.groups) {
    if (g.group == "tp" && g.share >= 0.1) {
      const auto across = TpGroupsAcrossHosts(p);
      if (!across.empty()) {
        r.warnings.push_back("tp communication takes " + Percent(g.share) +
                             " of the step and tensor-parallel groups span hosts (" + across.front() +
                             (across.size() > 1 ? ", and " + std::to_string(across.size() - 1) + " more" : "") +
                             "): tensor parallelism exchanges activations every layer; keep each tp group inside "
                             "one host (tp at most the GPUs per host)");
        explained = true;
      }
    }
  }
  if (r.bubble_theory > 0 && r.bubble_share > r.bubble_theory + 0.1) {
    r.warnings.push_back("the pipeline bubble is " + Percent(r.bubble_share) + " of the step against " +
                         Percent(r.bubble_theory) +
                         " in theory: the stages are unbalanced or their links slow; more micro-batches or an "
                         "interleaved schedule shrink it");
    explained = true;
  }
  if (!explained) {
    const auto top = std::max_element(r.groups.begin(), r.groups.end(),
                                      [](const GroupSummary& a, const GroupSummary& b) { return a.share < b.share; });
    r.warnings.push_back(top->group + " communication takes " + Percent(top->share) +
                         " of the step at " + FormatFixed(top->gbps, 2) +
                         " Gbps: check the links between the hosts it crosses (NIC speed, the MTU on every hop, a "
                         "NIC not local to its GPU) or do more work per step");
  }
}

}  // namespace

RunReport AnalyzeRun(const RunProfile& p) {
  RunReport r;
  AddFigures(p, r);
  if (r.ranks > 0) AddWarnings(p, r);
  return r;
}

std::string RenderRunReport(const RunReport& r) {
  if (r.ranks == 0) {
    return "gpulaunch: run report: no step was measured (--profile counts steps of jobs on libgpurt that use "
           "rt::ProfiledStep)\n";
  }
  std::string out = "gpulaunch: run report (" + std::to_string(r.ranks) + " ranks, " + std::to_string(r.steps) +
                    " steps)\n";
  out += "  step time: median " + Ms(r.step_median_s) + ", p95 " + Ms(r.step_p95_s) + ", max " + Ms(r.step_max_s) +
         " (step " + std::to_string(r.step_max_at) + ")\n";
  out += "  communication share of the step: " + Percent(r.comm_share);
  for (size_t i = 0; i < r.groups.size(); ++i) {
    const GroupSummary& g = r.groups[i];
    out += (i ? "; " : " (") + g.group + " " + Percent(g.share) + ", " + Bytes(g.bytes) + ", " + FormatFixed(g.gbps, 2) +
           " Gbps";
    if (g.inter_host_bytes_per_step > 0) {
      out += ", " + Bytes(static_cast<uint64_t>(g.inter_host_bytes_per_step)) + " a step to other hosts";
    }
  }
  out += r.groups.empty() ? "\n" : ")\n";
  if (r.bubble_theory > 0) {
    out += "  pipeline bubble: " + Percent(r.bubble_share) + " of the step (theory " + Percent(r.bubble_theory) +
           ")\n";
  }
  out += "  slowest rank: " + std::to_string(r.slowest_rank) + " on " + (r.slowest_host.empty() ? "?" : r.slowest_host) +
         " (compute " + Ms(r.slowest_compute_s) + " per step; median rank " + Ms(r.median_compute_s) + ")\n";
  for (const std::string& w : r.warnings) out += "  warning: " + w + "\n";
  return out;
}

std::string RunReportJson(const RunReport& r) {
  Json j = Json::Object();
  j.Set("ranks", r.ranks);
  j.Set("steps", r.steps);
  Json step = Json::Object();
  step.Set("median_s", r.step_median_s);
  step.Set("p95_s", r.step_p95_s);
  step.Set("max_s", r.step_max_s);
  step.Set("max_at_step", static_cast<int64_t>(r.step_max_at));
  j.Set("step_time", step);
  j.Set("comm_share", r.comm_share);
  Json groups = Json::Array();
  for (const GroupSummary& g : r.groups) {
    Json e = Json::Object();
    e.Set("group", g.group);
    e.Set("comm_s", g.comm_s);
    e.Set("share", g.share);
    e.Set("bytes", static_cast<double>(g.bytes));
    e.Set("gbps", g.gbps);
    e.Set("inter_host_bytes_per_step", g.inter_host_bytes_per_step);
    groups.Push(e);
  }
  j.Set("groups", groups);
  j.Set("bubble_share", r.bubble_share);
  j.Set("bubble_theory", r.bubble_theory);
  Json slowest = Json::Object();
  slowest.Set("rank", r.slowest_rank);
  slowest.Set("host", r.slowest_host);
  slowest.Set("compute_s", r.slowest_compute_s);
  slowest.Set("median_compute_s", r.median_compute_s);
  j.Set("slowest", slowest);
  Json warnings = Json::Array();
  for (const std::string& w : r.warnings) warnings.Push(w);
  j.Set("warnings", warnings);
  return j.Write() + "\n";
}

std::string PrometheusText(const RunProfile& p, const RunReport& r) {
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    std::string samples;
  };
  Family steps{"gpulaunch_profiled_steps_total", "counter", "Steps measured by --profile.", ""};
  Family step_s{"gpulaunch_step_seconds_total", "counter", "Wall time of the measured steps, seconds.", ""};
  Family compute{"gpulaunch_compute_seconds_total", "counter",
                 "Step time outside communication, seconds.", ""};
  Family comm{"gpulaunch_communication_seconds_total", "counter",
              "Time inside one group's communication calls, waiting included, seconds.", ""};
  Family bytes{"gpulaunch_communication_bytes_total", "counter",
               "Payload bytes sent plus received in one group's communication calls.", ""};
  Family calls{"gpulaunch_communication_calls_total", "counter", "Communication calls per group.", ""};
  Family bubble{"gpulaunch_pipeline_bubble_seconds_total", "counter",
                "Time the pipeline executor waited for a neighbour, seconds.", ""};
  Family share{"gpulaunch_communication_share_ratio", "gauge",
               "Communication time over step time, all ranks and steps, per group (0 to 1).", ""};
  Family quantiles{"gpulaunch_step_time_seconds", "gauge",
                   "Step time (the slowest rank's) at a quantile over the measured steps, seconds.", ""};
  const std::string job = "job=\"" + LabelValue(p.job_id) + "\"";
  auto num = [](double v) { return FormatFixed(v, 9); };
  for (const auto& [rank, list] : p.steps) {
    const std::string host = rank < static_cast<int>(p.host_of_rank.size()) ? p.host_of_rank[rank] : "";
    const std::string labels = job + ",rank=\"" + std::to_string(rank) + "\",host=\"" + LabelValue(host) + "\"";
    double total = 0, comp = 0, bub = 0;
    std::map<std::string, GroupTraffic> g;
    for (const StepMetrics& m : list) {
      total += m.step_s, comp += m.compute_s, bub += m.bubble_s;
      for (const GroupTraffic& t : m.groups) {
        GroupTraffic& sum = g[t.group];
        sum.comm_s += t.comm_s, sum.bytes += t.bytes, sum.calls += t.calls;
      }
    }
    steps.samples += std::string(steps.name) + "{" + labels + "} " + std::to_string(list.size()) + "\n";
    step_s.samples += std::string(step_s.name) + "{" + labels + "} " + num(total) + "\n";
    compute.samples += std::string(compute.name) + "{" + labels + "} " + num(comp) + "\n";
    bubble.samples += std::string(bubble.name) + "{" + labels + "} " + num(bub) + "\n";
    for (const auto& [name, t] : g) {
      const std::string gl = labels + ",group=\"" + LabelValue(name) + "\"";
      comm.samples += std::string(comm.name) + "{" + gl + "} " + num(t.comm_s) + "\n";
      bytes.samples += std::string(bytes.name) + "{" + gl + "} " + std::to_string(t.bytes) + "\n";
      calls.samples += std::string(calls.name) + "{" + gl + "} " + std::to_string(t.calls) + "\n";
    }
  }
  for (const GroupSummary& g : r.groups) {
    share.samples += std::string(share.name) + "{" + job + ",group=\"" + LabelValue(g.group) + "\"} " + num(g.share) + "\n";
  }
  for (const auto& [q, v] : {std::pair<const char*, double>{"0.5", r.step_median_s}, {"0.95", r.step_p95_s}, {"1", r.step_max_s}}) {
    quantiles.samples += std::string(quantiles.name) + "{" + job + ",quantile=\"" + q + "\"} " + num(v) + "\n";
  }
  std::string out;
  for (const Family* f : {&steps, &step_s, &compute, &comm, &bytes, &calls, &bubble, &share, &quantiles}) {
    if (f->samples.empty()) continue;
    out += std::string("# HELP ") + f->name + " " + f->help + "\n# TYPE " + f->name + " " + f->type + "\n" + f->samples;
  }
  return out;
}

Status WriteProfileFiles(const std::string& dir, const RunProfile& p, const RunReport& r) {
  GL_ASSIGN_OR_RETURN(const OutputDir out, OutputDir::Open(dir));  // never through a planted link
  for (const auto& [rank, list] : p.steps) {
    std::string lines;
    for (const StepMetrics& m : list) lines += StepMetricsJson(m) + "\n";
    GL_RETURN_IF_ERROR(out.WriteFile("rank-" + std::to_string(rank) + ".jsonl", lines, kPrivateFileMode));
  }
  GL_RETURN_IF_ERROR(out.WriteFile("metrics.prom", PrometheusText(p, r), kPrivateFileMode));
  return out.WriteFile("run-report.json", RunReportJson(r), kPrivateFileMode);
}

}  // namespace gpulaunch
