#include "launcher/core/layout_auto.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "partitioner/layout_choice.h"
#include "policies/placement_engine.h"

namespace gpulaunch {
namespace {

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Stages(const std::vector<int>& first) {
  std::string s;
  for (size_t i = 0; i + 1 < first.size(); ++i) {
    s += (i ? " " : "") + std::to_string(first[i + 1] - first[i]);
  }
  return s.empty() ? "-" : s;
}

// The candidates' table, columns as wide as their widest cell.
void WriteCandidates(const std::vector<LayoutCandidate>& ranked, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"layout", "layers/stage", "memory/rank", "compute", "bubble", "tp", "pp", "dp", "step", "note"}};
  for (const LayoutCandidate& c : ranked) {
    const std::string name = "tp=" + std::to_string(c.layout.extent[kTp]) + ",pp=" + std::to_string(c.layout.extent[kPp]) +
                             ",dp=" + std::to_string(c.layout.extent[kDp]);
    if (!c.rejected.empty()) {
      rows.push_back({name, "-", "-", "-", "-", "-", "-", "-", "-", "rejected: " + c.rejected});
      continue;
    }
    auto ms = [](double s) { return Format("%.2f ms", s * 1e3); };
    rows.push_back({name, Stages(c.first_layer), Format("%.2f GiB", c.memory_per_rank / double(1ULL << 30)),
                    ms(c.compute_seconds), Format("%.0f%%", c.bubble * 100), ms(c.comm.tp), ms(c.comm.pp),
                    ms(c.comm.dp), ms(c.total_seconds()), &c == &ranked.front() ? "chosen" : ""});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t i = 0; i < row.size(); ++i) {
      line += " " + row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 1, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

}  // namespace

StatusOr<ParallelLayout> ChooseLayout(const PlanOptions& o, const ClusterTopology& cluster, const JobRequest& request,
                                      std::ostream& out) {
  GL_ASSIGN_OR_RETURN(TransformerShape shape, TransformerPreset(o.model));
  shape.batch = o.seqs_per_microbatch;
  ModelWorkload w;
  w.graph = TransformerTaskGraph(shape);
  w.heads = shape.heads;
  w.blocks = shape.blocks;
  w.microbatches = o.microbatches;
  w.training = !o.inference;
  LayoutChoiceOptions lo;
  lo.ranks = o.ranks;
  uint64_t gpu_memory = 0;
  for (const ClusterHost& h : cluster.hosts) {
    lo.max_tp = std::max(lo.max_tp, static_cast<int>(h.topology->gpus.size()));
    for (const Gpu& g : h.topology->gpus) gpu_memory = std::max(gpu_memory, g.memory_bytes);
  }
  const double gib = o.gpu_memory_gib ? *o.gpu_memory_gib : gpu_memory ? gpu_memory / double(1ULL << 30) : 80.0;
  lo.memory_per_rank_bytes = gib * double(1ULL << 30);
  lo.flops_per_second = o.gpu_tflops * 1e12;
  CommModel comm = [&](const ParallelLayout& layout, double tp, double pp, double dp) -> StatusOr<CommEstimate> {
    JobRequest r = request;
    r.layout = layout;
    r.volume = CommVolume{tp, pp, dp};
    GL_ASSIGN_OR_RETURN(Placement p, Place(r, cluster));
    const StepModel m = ModelStep(p, cluster, r);
    return CommEstimate{m.tp_seconds, m.pp_seconds, m.dp_seconds};
  };
  GL_ASSIGN_OR_RETURN(std::vector<LayoutCandidate> ranked, RankLayouts(w, lo, comm));
  double params = 0;
  for (const Layer& l : w.graph.layers) params += static_cast<double>(l.param_bytes) / 4;
  out << "layout auto: " << o.model << " (" << Format("%.0fM", params / 1e6) << " parameters, " << w.graph.layers.size()
      << " layers), " << (w.training ? "training" : "inference") << " step of " << w.microbatches
      << " micro-batches x " << shape.batch << " x " << shape.seq << " tokens; " << Format("%.0f", gib)
      << " GiB and " << Format("%.0f", o.gpu_tflops) << " TFLOP/s per rank; communication from the placement's link "
      << "model\n";
  WriteCandidates(ranked, out);
  const LayoutCandidate& best = ranked.front();
  out << "chosen: " << best.layout.ToString() << ", the fastest modelled step ("
      << Format("%.2f ms", best.total_seconds() * 1e3) << ")";
  if (ranked.size() > 1 && ranked[1].rejected.empty()) {
    out << "; the next, tp=" << ranked[1].layout.extent[kTp] << ",pp=" << ranked[1].layout.extent[kPp]
        << ",dp=" << ranked[1].layout.extent[kDp] << ", is "
        << Format("%.0f%% slower", (ranked[1].total_seconds() / best.total_seconds() - 1) * 100);
  }
  out << "\n";
  return best.layout;
}

}  // namespace gpulaunch
