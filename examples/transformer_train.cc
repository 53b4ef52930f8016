// transformer_train: trains the transformer example for --steps steps on
// seeded synthetic data with SGD or Adam, over any dp x tp x pp layout and
// pipeline schedule; the per-step loss log and the final weights have the
// same bytes for every layout.
//
//   gpulaunch -n 4 ./transformer_train --layout dp=2,pp=2 --steps 10
//       --loss-log loss.txt --weights-out weights.bin
//
// Each step: a global batch of --batch sequences (next-token targets),
// cut into --microbatches micro-batches shared out over the dp replicas (so
// every layout sums the same micro-batches); gradients of each
// micro-batch are leaves of the deterministic reducer over the dp group
// (leaf = global micro-batch), the loss an exact sum. Rank 0 writes the loss
// log ("step N loss X", X also as a C99 hex float) and the weights (each
// tensor in id order, float32), to temporary names first.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>


#include "common/sha256.h"
#include "common/file_write.h"
#include "examples/transformer/model.h"
#include "examples/transformer/options.h"
#include "examples/transformer/train_state.h"
#include "partitioner/stage_split.h"
#include "runtime/checkpoint.h"
#include "runtime/gpurt.h"
#include "runtime/leaf_sum.h"
#include "runtime/pipeline_executor.h"
#include "runtime/process_groups.h"
#include "runtime/tensor_parallel.h"
#include "runtime/step_profiler.h"
#include "runtime/superaccumulator.h"

namespace {

using namespace gpulaunch;
using namespace gpulaunch::examples;

constexpr int kExitUsage = 2;
const char kUsage[] =
    "usage: transformer_train [--steps N] [--optimizer sgd|adam] [--lr X] [--batch N] [--microbatches M]\n"
    "         [--schedule 1f1b|gpipe|interleaved] [--chunks V] [--parallel pipeline|tensor|data|hybrid]\n"
    "         [--stages N] [--gpus-per-stage K] [--layout tp=..,pp=..,dp=..] [--loss-log PATH] [--weights-out PATH]\n"
    "         [--device cpu|cuda] [--model tiny|gpt2-small] [--vocab V] [--hidden H] [--heads A] [--blocks B] [--seq S] [--seed X]\n"
    "         [--checkpoint-dir DIR] [--checkpoint-every K] [--crash-host HOST --crash-at-step N]\n";

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Token `pos` (0 .. seq) of global sequence `s` at `step`: a noisy counting
// pattern the model can learn.
int32_t DataToken(const ModelConfig& c, int step, int s, int pos) {
  const uint64_t noise = Mix(Mix(c.seed * 7919 + static_cast<uint64_t>(step)) ^ static_cast<uint64_t>(s * 4099 + pos));
  const int base = (s * 3 + pos * (1 + s % 3)) % c.vocab;
  return static_cast<int32_t>(noise % 8 == 0 ? noise % static_cast<uint64_t>(c.vocab) : static_cast<uint64_t>(base));
}

// One pipeline position (tp, dp) of the model: stages own layers
// [first[s], first[s + 1]); gradients of each micro-batch go to the stage's
// LeafSum in micro-batch order.
class TrainStages : public rt::PipelineStages {
 public:
  TrainStages(TransformerLayers& layers, std::vector<int> first, int seqs_per_mb, float loss_scale)
      : layers_(layers), first_(std::move(first)), spm_(seqs_per_mb), loss_scale_(loss_scale) {}
  void SetData(std::vector<int32_t> tokens, std::vector<int32_t> targets) {
    tokens_ = std::move(tokens);
    targets_ = std::move(targets);
  }
  size_t ActivationFloats(int) const override {
    return static_cast<size_t>(spm_) * layers_.config().seq * layers_.config().hidden;
  }
  StatusOr<std::vector<float>> Forward(int mb, int stage, const std::vector<float>& input) override {
    std::vector<float> h = input;
    const size_t at = static_cast<size_t>(mb) * spm_ * layers_.config().seq;
    for (int l = first_[stage]; l < first_[stage + 1]; ++l) {
      double loss = 0;
      GL_RETURN_IF_ERROR(layers_.Forward(l, mb, spm_, tokens_.data() + at, targets_.data() + at, h, true, nullptr, &loss));
      if (l == layers_.layers() - 1) losses_.Add(loss);
    }
    return h;
  }
  StatusOr<std::vector<float>> Backward(int mb, int stage, const std::vector<float>& grad_output) override {
    std::vector<float> dh = grad_output;
    for (int l = first_[stage + 1] - 1; l >= first_[stage]; --l) {
      GL_RETURN_IF_ERROR(layers_.Backward(l, mb, spm_, loss_scale_, dh));
    }
    std::vector<float> flat;
    for (ParamShard* p : layers_.Params(first_[stage], first_[stage + 1])) flat.insert(flat.end(), p->grad.begin(), p->grad.end());
    auto& sum = sums_.at(stage);
    GL_RETURN_IF_ERROR(sum.AddLeaf(flat.data()));
    return dh;
  }
  std::map<int, rt::LeafSum<float>> sums_;  // by stage, for this step
  rt::Superaccumulator losses_;

 private:
  TransformerLayers& layers_;
  std::vector<int> first_;
  int spm_;
  float loss_scale_;
  std::vector<int32_t> tokens_, targets_;
};

// Rank 0 assembles every tensor from the dp = 0 ranks' shards; returns the
// file bytes on rank 0 (tensors in id order, float32), empty elsewhere.
StatusOr<std::string> GatherWeights(rt::Communicator& world, const rt::ParallelLayout& layout,
                                    const std::vector<ParamShard*>& mine) {
  std::string buffer;
  auto put = [&](uint64_t v) { buffer.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const ParamShard* p : mine) {
    for (uint64_t v : {p->id, p->rows, p->cols, p->row_first, p->row_count, p->col_first, p->col_count}) put(v);
    buffer.append(reinterpret_cast<const char*>(p->value.data()), p->value.size() * sizeof(float));
  }
  const bool sender = layout.CoordsOf(world.rank())[rt::kDp] == 0;
  if (world.rank() != 0) {
    if (sender) {
      const uint64_t size = buffer.size();
      GL_RETURN_IF_ERROR(world.Send(0, 7100, &size, sizeof size));
      GL_RETURN_IF_ERROR(world.Send(0, 7101, buffer.data(), buffer.size()));
    }
    return std::string();
  }
  std::map<uint64_t, std::pair<std::vector<uint64_t>, std::vector<float>>> full;  // id -> (rows, cols), values
  auto absorb = [&](const std::string& b) {
    size_t at = 0;
    while (at < b.size()) {
      uint64_t h[7];
      std::memcpy(h, b.data() + at, sizeof h);
      at += sizeof h;
      auto& [shape, values] = full[h[0]];
      if (values.empty()) shape = {h[1], h[2]}, values.assign(h[1] * h[2], 0.0f);
      for (uint64_t r = 0; r < h[4]; ++r) {
        std::memcpy(&values[(h[3] + r) * h[2] + h[5]], b.data() + at + r * h[6] * sizeof(float), h[6] * sizeof(float));
      }
      at += h[4] * h[6] * sizeof(float);
    }
  };
  absorb(buffer);
  for (int r = 1; r < world.size(); ++r) {
    if (layout.CoordsOf(r)[rt::kDp] != 0) continue;
    uint64_t size = 0;
    GL_RETURN_IF_ERROR(world.Recv(r, 7100, &size, sizeof size));
    std::string b(size, '\0');
    GL_RETURN_IF_ERROR(world.Recv(r, 7101, b.data(), b.size()));
    absorb(b);
  }
  std::string out;
  for (const auto& [id, sv] : full) out.append(reinterpret_cast<const char*>(sv.second.data()), sv.second.size() * sizeof(float));
  return out;
}

// Whatever makes one run's checkpointed state meaningless to another.
std::string Fingerprint(const JobOptions& o, int world, const ParallelLayout& layout, int chunks) {
  char fingerprint[512];
  std::snprintf(fingerprint, sizeof fingerprint,
                "world=%d,layout=%s,schedule=%s/%d,optimizer=%s,lr=%a,batch=%d/%d,model=%d/%d/%d/%d/%d/%llu", world,
                layout.ToString().c_str(), o.schedule.c_str(), chunks, o.optimizer.c_str(), o.lr, o.batch,
                o.microbatches, o.model.vocab, o.model.hidden, o.model.heads, o.model.blocks, o.model.seq,
                static_cast<unsigned long long>(o.model.seed));
  return fingerprint;
}

// Replica `replica`'s `per_replica` sequences of the step's global batch,
// with next-token targets.
void ReplicaBatch(const ModelConfig& model, int step, int replica, int per_replica, std::vector<int32_t>& tokens,
                  std::vector<int32_t>& targets) {
  for (int s = replica * per_replica; s < (replica + 1) * per_replica; ++s) {
    for (int pos = 0; pos < model.seq; ++pos) {
      tokens.push_back(DataToken(model, step, s, pos));
      targets.push_back(DataToken(model, step, s, pos + 1));
    }
  }
}

// The step's loss reaches rank 0 from `reporter` (a rank of the last
// stage), which prints it and keeps it in the log: "step N loss X HEX".
Status LogLoss(rt::Communicator& world, int reporter, int step, double loss, std::string& loss_log) {
  const bool root = world.rank() == 0;
  if (world.rank() == reporter && !root) return world.Send(0, 7200 + step % 1000, &loss, sizeof loss);
  if (!root) return Status::Ok();
  if (reporter != 0) GL_RETURN_IF_ERROR(world.Recv(reporter, 7200 + step % 1000, &loss, sizeof loss));
  char line[128];
  std::snprintf(line, sizeof line, "step %d loss %.9g %a\n", step, loss, loss);
  loss_log += line;
  std::fputs(line, stdout);
  return Status::Ok();
}

// "[0,3) [3,7) [7,10)": the layers of each stage.
std::string StageRanges(const std::vector<int>& first_layer) {
  std::string ranges;
  for (size_t i = 0; i + 1 < first_layer.size(); ++i) {
    ranges += (i ? " [" : "[") + std::to_string(first_layer[i]) + "," + std::to_string(first_layer[i + 1]) + ")";
  }
  return ranges;
}

int Run(int argc, char** argv) {
  auto rt = rt::Init(&argc, &argv);
  if (!rt.ok()) {
    std::cerr << "transformer_train: " << rt.status().message() << "\n";
    return 1;
  }
  rt::Communicator& world = (*rt)->world();
  const bool root = world.rank() == 0;
  auto usage = [&](const Status& s) {
    if (root) std::cerr << "transformer_train: " << s.message() << "\n";
    return kExitUsage;
  };
  auto fail = [&](const Status& s) {
    std::cerr << "transformer_train: rank " << world.rank() << ": " << s.message() << "\n";
    return 1;
  };
  auto opt = ParseJobOptions(argc, argv, true, kUsage);
  if (!opt.ok()) return usage(opt.status());
  auto layout = JobLayout(*opt, (*rt)->layout(), world.size());
  if (!layout.ok()) return usage(layout.status());
  const int tp = layout->extent[rt::kTp], pp = layout->extent[rt::kPp], dp = layout->extent[rt::kDp];
  if (Status s = ValidateModel(opt->model, tp); !s.ok()) return usage(s);
  // The global batch is cut into --microbatches micro-batches (the leaves of
  // the gradient reduction) whatever the layout; each replica runs M / dp.
  const int global_mbs = opt->microbatches, batch = opt->batch;
  if (batch % global_mbs != 0 || global_mbs % dp != 0) {
    return usage(InvalidArgument("--batch " + std::to_string(batch) + " in --microbatches " +
                                 std::to_string(global_mbs) + " over dp=" + std::to_string(dp) +
                                 ": the micro-batches must divide the batch and be a multiple of dp"));
  }
  const int m = global_mbs / dp;
  const int chunks = opt->schedule == "interleaved" ? opt->chunks : 1;
  auto schedule = rt::MakeSchedule(opt->schedule, pp, m, chunks, true);
  if (!schedule.ok()) return usage(schedule.status());
  const int seqs_per_mb = batch / global_mbs;
  SplitOptions split_options;
  split_options.stages = pp * chunks;
  split_options.training = true;
  auto split = SplitBalanced(ModelTaskGraph(opt->model, seqs_per_mb), split_options);
  if (!split.ok()) return usage(split.status());

  auto groups = rt::CreateGroups(world, *layout, (*rt)->hosts());
  if (!groups.ok()) return fail(groups.status());
  auto& tp_comm = *groups->group[rt::kTp];
  auto& pp_comm = *groups->group[rt::kPp];
  auto& dp_comm = *groups->group[rt::kDp];
  const auto coords = layout->CoordsOf(world.rank());
  auto tp_reducer = rt::DeterministicReducer::Create(tp_comm, {opt->model.heads, rt::ElementType::kFloat32});
  auto dp_reducer = rt::DeterministicReducer::Create(dp_comm, {global_mbs, rt::ElementType::kFloat32});
  if (!tp_reducer.ok()) return fail(tp_reducer.status());
  if (!dp_reducer.ok()) return fail(dp_reducer.status());

  if (opt->device == "cuda") {
    if (Status s = rt::SetMatMulDevice(rt::MatMulDevice::kCuda); !s.ok()) return usage(s);
  }
  TransformerLayers layers(opt->model, tp_comm, *tp_reducer);
  const float loss_scale = 1.0f / static_cast<float>(batch * opt->model.seq);
  TrainStages stages(layers, split->first_layer, seqs_per_mb, loss_scale);
  // The stages this pipeline rank runs, and their parameters.
  std::vector<int> my_stages;
  for (int s = 0; s < schedule->stages(); ++s)
    if (schedule->RankOfStage(s) == coords[rt::kPp]) my_stages.push_back(s);
  std::map<int, std::vector<ParamShard*>> params;
  std::map<uint64_t, AdamState> adam;
  for (int s : my_stages) params[s] = layers.Params(split->first_layer[s], split->first_layer[s + 1]);
  const bool last_stage_here = schedule->RankOfStage(schedule->stages() - 1) == coords[rt::kPp];

  std::vector<ParamShard*> all;
  for (auto& [s, list] : params) all.insert(all.end(), list.begin(), list.end());
  std::string loss_log;
  int first_step = 0;
  std::optional<rt::Checkpointer> checkpointer;
  if (!opt->checkpoint_dir.empty()) {
    checkpointer.emplace(world, opt->checkpoint_dir, Fingerprint(*opt, world.size(), *layout, chunks));
    auto last = checkpointer->LoadLatest();
    if (!last.ok()) return fail(last.status());
    if (*last) {
      if (Status s = RestoreTrainState((*last)->state, all, adam, loss_log); !s.ok()) return fail(s);
      first_step = (*last)->step + 1;
      if (root) std::fprintf(stderr, "transformer_train: resuming after step %d from %s\n", (*last)->step,
                             opt->checkpoint_dir.c_str());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  for (int step = first_step; step < opt->steps; ++step) {
    if (step == opt->crash_at_step && rt::RestartCount() == 0 && (*rt)->hosts()[world.rank()] == opt->crash_host) {
      std::fprintf(stderr, "transformer_train: rank %d on %s: planted host failure at step %d\n", world.rank(),
                   opt->crash_host.c_str(), step);
      raise(SIGKILL);
    }
    // With gpulaunch --profile, one record per step (runtime/step_profiler.h).
    rt::ProfiledStep profiled(step);
    // This replica's sequences of the step's global batch.
    std::vector<int32_t> tokens, targets;
    ReplicaBatch(opt->model, step, coords[rt::kDp], batch / dp, tokens, targets);
    stages.SetData(std::move(tokens), std::move(targets));
    stages.losses_ = rt::Superaccumulator();
    stages.sums_.clear();
    for (int s : my_stages) {
      size_t count = 0;
      for (ParamShard* p : params[s]) count += p->value.size();
      stages.sums_.emplace(s, rt::LeafSum<float>::ForRank(count, global_mbs, coords[rt::kDp], dp));
    }
    rt::PipelineRunOptions run_options;
    run_options.stall_report_ms = 30000;
    if (Status s = rt::RunPipeline(*schedule, pp_comm, stages, run_options); !s.ok()) return fail(s);
    if (world.rank() == opt->slow_rank) std::this_thread::sleep_for(std::chrono::milliseconds(opt->slow_ms));
    // Gradients: the same bits for every layout; then the optimizer step.
    for (int s : my_stages) {
      std::vector<float> grad(stages.sums_.at(s).count());
      if (Status st = dp_reducer->Allreduce(stages.sums_.at(s), grad.data()); !st.ok()) return fail(st);
      OptimizerStep(params[s], grad, opt->optimizer, opt->lr, step, adam);
    }
    // The loss: an exact sum over every token of the global batch.
    double loss = 0;
    if (last_stage_here) {
      auto total = rt::ExactAllreduceSum(dp_comm, stages.losses_);
      if (!total.ok()) return fail(total.status());
      loss = *total / (static_cast<double>(batch) * opt->model.seq);
    }
    const int reporter = layout->RankOf({0, schedule->RankOfStage(schedule->stages() - 1), 0});
    if (Status s = LogLoss(world, reporter, step, loss, loss_log); !s.ok()) return fail(s);
    if (checkpointer && ((step + 1) % opt->checkpoint_every == 0 || step + 1 == opt->steps)) {
      if (Status s = checkpointer->Save(step, SaveTrainState(all, adam, root ? loss_log : "")); !s.ok()) return fail(s);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto weights = GatherWeights(world, *layout, all);
  if (!weights.ok()) return fail(weights.status());
  if (!root) return 0;
  if (!opt->loss_log.empty()) {
    if (Status s = WriteFileAtomically(opt->loss_log, loss_log); !s.ok()) return fail(s);
  }
  if (!opt->weights_out.empty()) {
    if (Status s = WriteFileAtomically(opt->weights_out, *weights); !s.ok()) return fail(s);
  }
  std::printf("transformer_train: %d steps, %s, layout %s, schedule %s, stages %s; %.3f s; weights sha256 %s\n",
              opt->steps, opt->optimizer.c_str(), layout->ToString().c_str(), schedule->kind.c_str(),
              StageRanges(split->first_layer).c_str(), seconds, Sha256Hex(*weights).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
