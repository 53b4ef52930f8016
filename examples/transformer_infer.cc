// transformer_infer: batch inference of a GPT-2-style model, split into
// pipeline stages, tensor-parallel groups and data-parallel replicas as the
// layout says; the output file has the same bytes for every layout.
//
//   gpulaunch -n 4 ./transformer_infer --parallel hybrid --stages 2
//       --gpus-per-stage 2 --input tokens.txt --output logits.bin
//
// Input: one sequence per line, token ids separated by spaces, each line the
// model's sequence length (or --batch N sequences generated from --seed).
// Weights: from --seed, or --weights FILE as transformer_train writes them.
// Output: the last position's logits of every sequence, float32
// little-endian, batch x vocab, written by rank 0 (to a temporary name first,
// so a failed run leaves no partial file).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>


#include "common/sha256.h"
#include "common/strings.h"
#include "common/file_write.h"
#include "examples/transformer/model.h"
#include "examples/transformer/options.h"
#include "partitioner/stage_split.h"
#include "runtime/gpurt.h"
#include "runtime/pipeline_executor.h"
#include "runtime/process_groups.h"
#include "runtime/tensor_parallel.h"

namespace {

using namespace gpulaunch;
using namespace gpulaunch::examples;

constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: transformer_infer --output PATH [--input PATH | --batch N] [--weights FILE]\n"
    "         [--parallel pipeline|tensor|data|hybrid]\n"
    "         [--stages N] [--gpus-per-stage K] [--layout tp=..,pp=..,dp=..] [--microbatches M]\n"
    "         [--device cpu|cuda] [--model tiny|gpt2-small] [--vocab V] [--hidden H] [--heads A] [--blocks B] [--seq S] [--seed X]\n";

using Args = JobOptions;

StatusOr<std::vector<int32_t>> LoadTokens(const Args& a) {
  std::vector<int32_t> tokens;
  if (a.input.empty()) {  // --batch sequences from the seed
    uint64_t x = a.model.seed * 0x9e3779b97f4a7c15ULL + 12345;
    for (int i = 0; i < a.batch * a.model.seq; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      tokens.push_back(static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(a.model.vocab)));
    }
    return tokens;
  }
  GL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(a.input, "input file"));
  int line_no = 0;
  for (const std::string& line : Split(text, '\n')) {
    ++line_no;
    if (Trim(line).empty()) continue;
    std::istringstream words(line);
    int count = 0;
    for (std::string w; words >> w; ++count) {
      const auto v = ParseInt(w);
      if (!v || *v < 0 || *v >= a.model.vocab) {
        return InvalidArgument(a.input + ":" + std::to_string(line_no) + ": token '" + w +
                               "' is not an integer in [0, " + std::to_string(a.model.vocab) + ")");
      }
      tokens.push_back(static_cast<int32_t>(*v));
    }
    if (count != a.model.seq) {
      return InvalidArgument(a.input + ":" + std::to_string(line_no) + ": " + std::to_string(count) +
                             " tokens, but the model's sequence length is " + std::to_string(a.model.seq) +
                             " (--seq)");
    }
  }
  if (tokens.empty()) return InvalidArgument(a.input + ": no sequences");
  return tokens;
}

// The pipeline stages of one (tp, dp) position: layers [first[s], first[s+1]).
class Stages : public rt::PipelineStages {
 public:
  Stages(TransformerLayers& layers, std::vector<int> first, const std::vector<int32_t>& tokens, int seqs_per_mb,
         const ModelConfig& c)
      : layers_(layers), first_(std::move(first)), tokens_(tokens), spm_(seqs_per_mb), c_(c) {}
  size_t ActivationFloats(int) const override { return static_cast<size_t>(spm_) * c_.seq * c_.hidden; }
  StatusOr<std::vector<float>> Forward(int mb, int stage, const std::vector<float>& input) override {
    std::vector<float> h = input;
    const int32_t* tokens = tokens_.data() + static_cast<size_t>(mb) * spm_ * c_.seq;
    for (int l = first_[stage]; l < first_[stage + 1]; ++l) {
      GL_RETURN_IF_ERROR(layers_.Forward(l, mb, spm_, tokens, nullptr, h, false, &logits_[mb], nullptr));
    }
    if (first_[stage + 1] != layers_.layers()) logits_.erase(mb);
    return h;
  }
  std::map<int, std::vector<float>> logits_;

 private:
  TransformerLayers& layers_;
  std::vector<int> first_;
  const std::vector<int32_t>& tokens_;
  int spm_;
  ModelConfig c_;
};

std::string RangesText(const std::vector<int>& first) {
  std::string s;
  for (size_t i = 0; i + 1 < first.size(); ++i) s += (i ? " " : "") + ("[" + std::to_string(first[i]) + "," + std::to_string(first[i + 1]) + ")");
  return s;
}

// Rank 0 collects each replica's logits from its last stage's tp rank 0 and
// returns them all, replica by replica, as float32 bytes; other ranks return
// "" (the owners among them having sent theirs).
StatusOr<std::string> GatherLogits(rt::Communicator& world, const rt::ParallelLayout& layout,
                                   const std::map<int, std::vector<float>>& logits_by_mb, int batch, int vocab) {
  const int pp = layout.extent[rt::kPp], dp = layout.extent[rt::kDp];
  const auto coords = layout.CoordsOf(world.rank());
  const bool root = world.rank() == 0;
  const size_t replica_floats = static_cast<size_t>(batch / dp) * vocab;
  std::vector<float> replica;
  if (coords[rt::kPp] == pp - 1 && coords[rt::kTp] == 0) {
    for (const auto& [mb, logits] : logits_by_mb) replica.insert(replica.end(), logits.begin(), logits.end());
    if (!root) (void)world.Send(0, 7000, replica.data(), replica.size() * sizeof(float));
  }
  if (!root) return std::string();
  std::vector<float> all(static_cast<size_t>(batch) * vocab);
  for (int d = 0; d < dp; ++d) {
    const int from = layout.RankOf({0, pp - 1, d});
    float* dst = all.data() + d * replica_floats;
    if (from == 0) {
      std::memcpy(dst, replica.data(), replica_floats * sizeof(float));
    } else {
      GL_RETURN_IF_ERROR(world.Recv(from, 7000, dst, replica_floats * sizeof(float)));
    }
  }
  return std::string(reinterpret_cast<const char*>(all.data()), all.size() * sizeof(float));
}

// What the command line and the input decide, checked before any
// communication: a failure here is a usage error (exit 2).
struct InferJob {
  Args args;
  ParallelLayout layout;
  std::vector<int32_t> tokens;
  int batch = 0;  // sequences
  BatchCut cut;
  StageSplit split;
  rt::PipelineSchedule schedule;
};

StatusOr<InferJob> PlanInferJob(int argc, char** argv, const ParallelLayout& planned, int world_size) {
  InferJob job;
  GL_ASSIGN_OR_RETURN(job.args, ParseJobOptions(argc, argv, false, kUsage));
  const Args& a = job.args;
  GL_ASSIGN_OR_RETURN(job.layout, JobLayout(a, planned, world_size));
  GL_RETURN_IF_ERROR(ValidateModel(a.model, job.layout.extent[rt::kTp]));
  GL_ASSIGN_OR_RETURN(job.tokens, LoadTokens(a));
  job.batch = static_cast<int>(job.tokens.size()) / a.model.seq;
  // --microbatches cuts the whole batch; each dp replica runs M / dp of them.
  GL_ASSIGN_OR_RETURN(job.cut, CutBatch(std::to_string(job.batch) + " sequences", job.batch, a.microbatches,
                                        job.layout.extent[rt::kDp]));
  SplitOptions split_options;
  split_options.stages = job.layout.extent[rt::kPp];
  split_options.training = false;
  GL_ASSIGN_OR_RETURN(job.split, SplitBalanced(ModelTaskGraph(a.model, job.cut.seqs_per_microbatch), split_options));
  GL_ASSIGN_OR_RETURN(job.schedule, rt::MakeGPipe(split_options.stages, job.cut.replica_microbatches, false));
  return job;
}

// Runs this rank's part of the pipeline and returns what GatherLogits
// returns: every logit on rank 0, "" elsewhere. `*seconds`: the pipeline's
// run time. `*usage_error` is set when the failure is the user's input
// (--weights that do not load), before any pipeline traffic.
StatusOr<std::string> Infer(rt::Runtime& rt, const InferJob& job, double* seconds, bool* usage_error) {
  rt::Communicator& world = rt.world();
  const Args& a = job.args;
  const int dp = job.layout.extent[rt::kDp];
  GL_ASSIGN_OR_RETURN(rt::ProcessGroups groups, rt::CreateGroups(world, job.layout, rt.hosts()));
  GL_ASSIGN_OR_RETURN(auto reducer, rt::DeterministicReducer::Create(*groups.group[rt::kTp],
                                                                     {a.model.heads, rt::ElementType::kFloat32}));
  // This replica's sequences.
  const size_t per_replica = static_cast<size_t>(job.batch / dp) * a.model.seq;
  const size_t replica = static_cast<size_t>(job.layout.CoordsOf(world.rank())[rt::kDp]);
  const std::vector<int32_t> mine(job.tokens.begin() + static_cast<long>(replica * per_replica),
                                  job.tokens.begin() + static_cast<long>((replica + 1) * per_replica));
  TransformerLayers layers(a.model, *groups.group[rt::kTp], reducer);
  if (!a.weights.empty()) {
    Status loaded = layers.LoadWeights(a.weights);
    *usage_error = !loaded.ok();
    GL_RETURN_IF_ERROR(loaded);
  }
  Stages stages(layers, job.split.first_layer, mine, job.cut.seqs_per_microbatch, a.model);
  const auto start = std::chrono::steady_clock::now();
  rt::PipelineRunOptions run_options;
  run_options.stall_report_ms = 30000;
  if (Status s = rt::RunPipeline(job.schedule, *groups.group[rt::kPp], stages, run_options); !s.ok()) {
    return Status(s.code(), "rank " + std::to_string(world.rank()) + ": " + s.message());
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return GatherLogits(world, job.layout, stages.logits_, job.batch, a.model.vocab);
}

int Run(int argc, char** argv) {
  auto rt = rt::Init(&argc, &argv);
  if (!rt.ok()) {
    std::cerr << "transformer_infer: " << rt.status().message() << "\n";
    return 1;
  }
  rt::Communicator& world = (*rt)->world();
  const bool root = world.rank() == 0;
  auto usage = [&](const Status& s) {
    if (root) std::cerr << "transformer_infer: " << s.message() << "\n";
    return kExitUsage;
  };
  auto job = PlanInferJob(argc, argv, (*rt)->layout(), world.size());
  if (!job.ok()) return usage(job.status());
  if (job->args.device == "cuda") {
    if (Status s = rt::SetMatMulDevice(rt::MatMulDevice::kCuda); !s.ok()) return usage(s);
  }
  double seconds = 0;
  bool usage_error = false;
  auto gathered = Infer(**rt, *job, &seconds, &usage_error);
  if (usage_error) return usage(gathered.status());
  if (!gathered.ok()) {
    std::cerr << "transformer_infer: " << gathered.status().message() << "\n";
    return 1;
  }
  if (!root) return 0;
  const std::string& bytes = *gathered;
  const Args& a = job->args;
  if (Status s = WriteFileAtomically(a.output, bytes); !s.ok()) {
    std::cerr << "transformer_infer: " << s.message() << "\n";
    return 1;
  }
  std::printf("transformer_infer: %d sequences x %d tokens, layout %s, stages %s, %d micro-batches; %.3f s, %.1f "
              "tokens/s; wrote %s (%zu bytes) sha256 %s\n",
              job->batch, a.model.seq, job->layout.ToString().c_str(), RangesText(job->split.first_layer).c_str(),
              job->cut.replica_microbatches, seconds, job->batch * a.model.seq / seconds, a.output.c_str(),
              bytes.size(), Sha256Hex(bytes).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
