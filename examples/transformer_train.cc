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

#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/sha256.h"
#include "common/file_write.h"
#include "examples/transformer/model.h"
#include "examples/transformer/options.h"
#include "examples/transformer/train_stages.h"
#include "examples/transformer/train_state.h"
#include "partitioner/stage_split.h"
#include "runtime/checkpoint.h"
#include "runtime/gpurt.h"
#include "runtime/pipeline_executor.h"
#include "runtime/process_groups.h"
#include "runtime/tensor_parallel.h"
#include "runtime/step_profiler.h"

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

// What the command line decides, checked before any communication: a
// failure here is a usage error (exit 2) on every rank alike.
struct TrainJob {
  JobOptions opt;
  ParallelLayout layout;
  BatchCut cut;
  int chunks = 1;
  rt::PipelineSchedule schedule;
  StageSplit split;
};

StatusOr<TrainJob> PlanTrainJob(int argc, char** argv, const ParallelLayout& planned, int world_size) {
  TrainJob job;
  GL_ASSIGN_OR_RETURN(job.opt, ParseJobOptions(argc, argv, true, kUsage));
  const JobOptions& o = job.opt;
  GL_ASSIGN_OR_RETURN(job.layout, JobLayout(o, planned, world_size));
  const int pp = job.layout.extent[rt::kPp], dp = job.layout.extent[rt::kDp];
  GL_RETURN_IF_ERROR(ValidateModel(o.model, job.layout.extent[rt::kTp]));
  // The global batch is cut into --microbatches micro-batches (the leaves of
  // the gradient reduction) whatever the layout; each replica runs M / dp.
  GL_ASSIGN_OR_RETURN(job.cut, CutBatch("--batch " + std::to_string(o.batch), o.batch, o.microbatches, dp));
  job.chunks = o.schedule == "interleaved" ? o.chunks : 1;
  GL_ASSIGN_OR_RETURN(job.schedule,
                      rt::MakeSchedule(o.schedule, pp, job.cut.replica_microbatches, job.chunks, true));
  SplitOptions split_options;
  split_options.stages = pp * job.chunks;
  split_options.training = true;
  GL_ASSIGN_OR_RETURN(job.split, SplitBalanced(ModelTaskGraph(o.model, job.cut.seqs_per_microbatch), split_options));
  return job;
}

// One rank's part of the training: its process groups and reducers, its
// layers and pipeline stages, their parameters and optimizer state, and the
// loss log so far. Not movable: the layers hold the groups by reference.
class Trainer {
 public:
  static StatusOr<std::unique_ptr<Trainer>> Create(rt::Runtime& rt, const TrainJob& job);
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // The first step to run: 0, or the one after the last complete checkpoint
  // in --checkpoint-dir, whose state it restores.
  StatusOr<int> Resume();
  Status RunStep(int step);
  // Rank 0 writes the loss log and the weights and prints the summary.
  Status Finish(double seconds);

 private:
  Trainer(rt::Runtime& rt, const TrainJob& job, rt::ProcessGroups groups, rt::DeterministicReducer tp_reducer,
          rt::DeterministicReducer dp_reducer);
  void PlantedHostFailure(int step) const;
  Status ReduceAndUpdate(int step);
  Status ReportLoss(int step);

  rt::Runtime& rt_;
  rt::Communicator& world_;
  const TrainJob& job_;
  rt::ProcessGroups groups_;
  rt::DeterministicReducer tp_reducer_, dp_reducer_;
  std::array<int, 3> coords_;
  TransformerLayers layers_;
  TrainStages stages_;
  std::vector<int> my_stages_;                      // the model stages this pipeline rank runs
  std::map<int, std::vector<ParamShard*>> params_;  // by stage
  std::vector<ParamShard*> all_params_;
  std::map<uint64_t, AdamState> adam_;
  std::string loss_log_;
  std::optional<rt::Checkpointer> checkpointer_;
};

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(rt::Runtime& rt, const TrainJob& job) {
  GL_ASSIGN_OR_RETURN(rt::ProcessGroups groups, rt::CreateGroups(rt.world(), job.layout, rt.hosts(), rt.switches()));
  GL_ASSIGN_OR_RETURN(rt::DeterministicReducer tp, rt::DeterministicReducer::Create(
                                                       *groups.group[rt::kTp],
                                                       {job.opt.model.heads, rt::ElementType::kFloat32}));
  // The gradients' reduction knows which data-parallel ranks share a host
  // (and a leaf switch, when the plan has a network tree): across hosts it
  // runs hierarchically (the same bits, fewer bytes on the wire).
  GL_ASSIGN_OR_RETURN(rt::DeterministicReducer dp, rt::DeterministicReducer::Create(
                                                       *groups.group[rt::kDp],
                                                       {job.cut.global_microbatches, rt::ElementType::kFloat32,
                                                        rt::ReduceAlgorithm::kAuto, groups.group_hosts[rt::kDp],
                                                        groups.group_switches[rt::kDp]}));
  return std::unique_ptr<Trainer>(new Trainer(rt, job, std::move(groups), std::move(tp), std::move(dp)));
}

Trainer::Trainer(rt::Runtime& rt, const TrainJob& job, rt::ProcessGroups groups, rt::DeterministicReducer tp_reducer,
                 rt::DeterministicReducer dp_reducer)
    : rt_(rt),
      world_(rt.world()),
      job_(job),
      groups_(std::move(groups)),
      tp_reducer_(std::move(tp_reducer)),
      dp_reducer_(std::move(dp_reducer)),
      coords_(job.layout.CoordsOf(world_.rank())),
      layers_(job.opt.model, *groups_.group[rt::kTp], tp_reducer_),
      stages_(layers_, job.split.first_layer, job.cut.seqs_per_microbatch,
              1.0f / static_cast<float>(job.opt.batch * job.opt.model.seq)) {
  for (int s = 0; s < job.schedule.stages(); ++s) {
    if (job.schedule.RankOfStage(s) == coords_[rt::kPp]) my_stages_.push_back(s);
  }
  for (int s : my_stages_) params_[s] = layers_.Params(job.split.first_layer[s], job.split.first_layer[s + 1]);
  for (auto& [s, list] : params_) all_params_.insert(all_params_.end(), list.begin(), list.end());
  if (!job.opt.checkpoint_dir.empty()) {
    checkpointer_.emplace(world_, job.opt.checkpoint_dir,
                          Fingerprint(job.opt, world_.size(), job.layout, job.chunks));
  }
}

StatusOr<int> Trainer::Resume() {
  if (!checkpointer_) return 0;
  GL_ASSIGN_OR_RETURN(auto last, checkpointer_->LoadLatest());
  if (!last) return 0;
  GL_RETURN_IF_ERROR(RestoreTrainState(last->state, all_params_, adam_, loss_log_));
  if (world_.rank() == 0) {
    std::fprintf(stderr, "transformer_train: resuming after step %d from %s\n", last->step,
                 job_.opt.checkpoint_dir.c_str());
  }
  return last->step + 1;
}

void Trainer::PlantedHostFailure(int step) const {
  const JobOptions& o = job_.opt;
  if (step == o.crash_at_step && rt::RestartCount() == 0 && rt_.hosts()[world_.rank()] == o.crash_host) {
    std::fprintf(stderr, "transformer_train: rank %d on %s: planted host failure at step %d\n", world_.rank(),
                 o.crash_host.c_str(), step);
    raise(SIGKILL);
  }
}

Status Trainer::RunStep(int step) {
  const JobOptions& o = job_.opt;
  const int dp = job_.layout.extent[rt::kDp];
  PlantedHostFailure(step);
  // With gpulaunch --profile, one record per step (runtime/step_profiler.h).
  rt::ProfiledStep profiled(step);
  // This replica's sequences of the step's global batch.
  std::vector<int32_t> tokens, targets;
  ReplicaBatch(o.model, step, coords_[rt::kDp], o.batch / dp, tokens, targets);
  stages_.SetData(std::move(tokens), std::move(targets));
  stages_.losses_ = rt::Superaccumulator();
  stages_.sums_.clear();
  for (int s : my_stages_) {
    size_t count = 0;
    for (ParamShard* p : params_[s]) count += p->value.size();
    stages_.sums_.emplace(s, rt::LeafSum<float>::ForRank(count, job_.cut.global_microbatches, coords_[rt::kDp], dp));
  }
  rt::PipelineRunOptions run_options;
  run_options.stall_report_ms = 30000;
  GL_RETURN_IF_ERROR(rt::RunPipeline(job_.schedule, *groups_.group[rt::kPp], stages_, run_options));
  if (world_.rank() == o.slow_rank) std::this_thread::sleep_for(std::chrono::milliseconds(o.slow_ms));
  GL_RETURN_IF_ERROR(ReduceAndUpdate(step));
  GL_RETURN_IF_ERROR(ReportLoss(step));
  if (checkpointer_ && ((step + 1) % o.checkpoint_every == 0 || step + 1 == o.steps)) {
    GL_RETURN_IF_ERROR(checkpointer_->Save(step, SaveTrainState(all_params_, adam_, world_.rank() == 0 ? loss_log_ : "")));
  }
  return Status::Ok();
}

// Gradients: the same bits for every layout; then the optimizer step.
Status Trainer::ReduceAndUpdate(int step) {
  for (int s : my_stages_) {
    std::vector<float> grad(stages_.sums_.at(s).count());
    GL_RETURN_IF_ERROR(dp_reducer_.Allreduce(stages_.sums_.at(s), grad.data()));
    OptimizerStep(params_[s], grad, job_.opt.optimizer, job_.opt.lr, step, adam_);
  }
  return Status::Ok();
}

// The loss: an exact sum over every token of the global batch, reported by
// dp = 0's last stage.
Status Trainer::ReportLoss(int step) {
  const rt::PipelineSchedule& schedule = job_.schedule;
  const int last_stage_rank = schedule.RankOfStage(schedule.stages() - 1);
  double loss = 0;
  if (last_stage_rank == coords_[rt::kPp]) {
    GL_ASSIGN_OR_RETURN(double total, rt::ExactAllreduceSum(*groups_.group[rt::kDp], stages_.losses_,
                                                                  groups_.group_hosts[rt::kDp],
                                                                  groups_.group_switches[rt::kDp]));
    loss = total / (static_cast<double>(job_.opt.batch) * job_.opt.model.seq);
  }
  return LogLoss(world_, job_.layout.RankOf({0, last_stage_rank, 0}), step, loss, loss_log_);
}

Status Trainer::Finish(double seconds) {
  GL_ASSIGN_OR_RETURN(std::string weights, GatherWeights(world_, job_.layout, all_params_));
  if (world_.rank() != 0) return Status::Ok();
  const JobOptions& o = job_.opt;
  if (!o.loss_log.empty()) GL_RETURN_IF_ERROR(WriteFileAtomically(o.loss_log, loss_log_));
  if (!o.weights_out.empty()) GL_RETURN_IF_ERROR(WriteFileAtomically(o.weights_out, weights));
  std::printf("transformer_train: %d steps, %s, layout %s, schedule %s, stages %s; %.3f s; weights sha256 %s\n",
              o.steps, o.optimizer.c_str(), job_.layout.ToString().c_str(), job_.schedule.kind.c_str(),
              StageRanges(job_.split.first_layer).c_str(), seconds, Sha256Hex(weights).c_str());
  return Status::Ok();
}

int Run(int argc, char** argv) {
  auto rt = rt::Init(&argc, &argv);
  if (!rt.ok()) {
    std::cerr << "transformer_train: " << rt.status().message() << "\n";
    return 1;
  }
  rt::Communicator& world = (*rt)->world();
  auto usage = [&](const Status& s) {
    if (world.rank() == 0) std::cerr << "transformer_train: " << s.message() << "\n";
    return kExitUsage;
  };
  auto fail = [&](const Status& s) {
    std::cerr << "transformer_train: rank " << world.rank() << ": " << s.message() << "\n";
    return 1;
  };
  auto job = PlanTrainJob(argc, argv, (*rt)->layout(), world.size());
  if (!job.ok()) return usage(job.status());
  if (job->opt.device == "cuda") {
    if (Status s = rt::SetMatMulDevice(rt::MatMulDevice::kCuda); !s.ok()) return usage(s);
  }
  auto trainer = Trainer::Create(**rt, *job);
  if (!trainer.ok()) return fail(trainer.status());
  auto first_step = (*trainer)->Resume();
  if (!first_step.ok()) return fail(first_step.status());
  const auto start = std::chrono::steady_clock::now();
  for (int step = *first_step; step < job->opt.steps; ++step) {
    if (Status s = (*trainer)->RunStep(step); !s.ok()) return fail(s);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (Status s = (*trainer)->Finish(seconds); !s.ok()) return fail(s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }
