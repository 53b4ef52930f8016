#include "examples/transformer/options.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <utility>

#include "common/strings.h"


namespace gpulaunch::examples {

namespace {

using FlagValues = std::map<std::string, std::string>;  // flag without "--" -> value

StatusOr<FlagValues> ReadFlagPairs(int argc, char** argv, const std::string& usage) {
  FlagValues kv;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return InvalidArgument(usage);
    if (flag.rfind("--", 0) != 0 || i + 1 >= argc) return InvalidArgument("unexpected '" + flag + "'\n" + usage);
    kv[flag.substr(2)] = argv[++i];
  }
  return kv;
}

// Moves the integer and text flags this job knows from `kv` into `o`.
Status TakeIntAndTextFlags(bool training, FlagValues& kv, JobOptions& o) {
  int seed = 1;
  std::vector<std::pair<const char*, int*>> ints = {
      {"batch", &o.batch}, {"stages", &o.stages}, {"gpus-per-stage", &o.gpus_per_stage},
      {"microbatches", &o.microbatches}, {"vocab", &o.model.vocab}, {"hidden", &o.model.hidden},
      {"heads", &o.model.heads}, {"blocks", &o.model.blocks}, {"seq", &o.model.seq}, {"seed", &seed}};
  std::vector<std::pair<const char*, std::string*>> texts = {
      {"parallel", &o.parallel}, {"layout", &o.layout}, {"device", &o.device}};
  if (training) {
    ints.insert(ints.end(), {{"steps", &o.steps}, {"chunks", &o.chunks}, {"checkpoint-every", &o.checkpoint_every},
                             {"crash-at-step", &o.crash_at_step}});
    texts.insert(texts.end(), {{"optimizer", &o.optimizer}, {"schedule", &o.schedule}, {"loss-log", &o.loss_log},
                               {"weights-out", &o.weights_out}, {"checkpoint-dir", &o.checkpoint_dir},
                               {"crash-host", &o.crash_host}});
  } else {
    texts.insert(texts.end(), {{"input", &o.input}, {"output", &o.output}, {"weights", &o.weights}});
  }
  for (auto [name, field] : ints) {
    auto it = kv.find(name);
    if (it == kv.end()) continue;
    const auto v = ParseInt(it->second);
    if (!v || *v < 1 || *v > (1 << 30)) {
      return InvalidArgument(std::string("--") + name + " '" + it->second + "': give a positive integer");
    }
    *field = static_cast<int>(*v);
    kv.erase(it);
  }
  o.model.seed = static_cast<uint64_t>(seed);
  for (auto [name, field] : texts) {
    if (kv.count(name)) *field = kv[name], kv.erase(name);
  }
  return Status::Ok();
}

// The trainer's --slow-rank RANK:MS and --lr X.
Status TakeTrainingFlags(FlagValues& kv, JobOptions& o) {
  if (kv.count("slow-rank")) {
    const std::string v = kv["slow-rank"];
    const size_t colon = v.find(':');
    const auto rank = colon == std::string::npos ? std::nullopt : ParseInt(v.substr(0, colon));
    const auto ms = colon == std::string::npos ? std::nullopt : ParseInt(v.substr(colon + 1));
    if (!rank || !ms || *rank < 0 || *rank > (1 << 20) || *ms < 1 || *ms > 60000) {
      return InvalidArgument("--slow-rank '" + v + "': give RANK:MILLISECONDS, e.g. 2:50 (1 to 60000 ms)");
    }
    o.slow_rank = static_cast<int>(*rank);
    o.slow_ms = static_cast<int>(*ms);
    kv.erase("slow-rank");
  }
  if (kv.count("lr")) {
    char* end = nullptr;
    o.lr = std::strtod(kv["lr"].c_str(), &end);
    if (*end != '\0' || !(o.lr > 0)) return InvalidArgument("--lr '" + kv["lr"] + "': give a positive number");
    kv.erase("lr");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<JobOptions> ParseJobOptions(int argc, char** argv, bool training, const std::string& usage) {
  JobOptions o;
  GL_ASSIGN_OR_RETURN(FlagValues kv, ReadFlagPairs(argc, argv, usage));
  if (kv.count("model")) {
    GL_ASSIGN_OR_RETURN(o.model, ModelPreset(kv["model"]));
    kv.erase("model");
  }
  GL_RETURN_IF_ERROR(TakeIntAndTextFlags(training, kv, o));
  if (training) GL_RETURN_IF_ERROR(TakeTrainingFlags(kv, o));
  if (!kv.empty()) return InvalidArgument("unknown option --" + kv.begin()->first + "\n" + usage);
  if (o.device != "cpu" && o.device != "cuda") return InvalidArgument("--device '" + o.device + "': use cpu or cuda");
  if (!training && o.output.empty()) return InvalidArgument("--output PATH is required\n" + usage);
  if (training && o.optimizer != "sgd" && o.optimizer != "adam") {
    return InvalidArgument("--optimizer '" + o.optimizer + "': use sgd or adam");
  }
  return o;
}

StatusOr<ParallelLayout> JobLayout(const JobOptions& o, const ParallelLayout& planned, int world_size) {
  const std::string stages = std::to_string(o.stages), k = std::to_string(o.gpus_per_stage);
  std::string text;
  if (!o.layout.empty()) text = o.layout;
  else if (o.parallel == "pipeline") text = "pp=" + stages;
  else if (o.parallel == "tensor") text = "tp=" + k;
  else if (o.parallel == "hybrid") text = "tp=" + k + ",pp=" + stages;
  else if (o.parallel == "data") text = "tp=1";
  else if (!o.parallel.empty()) return InvalidArgument("--parallel '" + o.parallel + "': use pipeline, tensor, data or hybrid");
  else return planned;
  return ParseLayout(text, world_size);
}

StatusOr<BatchCut> CutBatch(const std::string& batch_text, int batch, int microbatches, int dp) {
  if (batch % microbatches != 0 || microbatches % dp != 0) {
    return InvalidArgument(batch_text + " in --microbatches " + std::to_string(microbatches) + " over dp=" +
                           std::to_string(dp) + ": the micro-batches must divide the batch and be a multiple of dp");
  }
  return BatchCut{microbatches, microbatches / dp, batch / microbatches};
}


}  // namespace gpulaunch::examples
