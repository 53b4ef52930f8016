// Command-line options shared by transformer_infer and transformer_train,
// and the layout they ask for.
#pragma once

#include <string>
#include <vector>

#include "common/parallel_layout.h"
#include "common/status.h"
#include "examples/transformer/model.h"

namespace gpulaunch::examples {

struct JobOptions {
  std::string input, output, parallel, layout, weights;
  std::string device = "cpu";  // cpu | cuda: where the tensor-parallel products run
  int batch = 8, stages = 1, gpus_per_stage = 1, microbatches = 4;  // micro-batches of the whole batch
  ModelConfig model;
  // Training only.
  int steps = 3, chunks = 1;
  std::string optimizer = "adam", schedule = "1f1b", loss_log, weights_out;
  double lr = 1e-3;
  // --checkpoint-dir: save every --checkpoint-every steps and resume from the
  // last complete checkpoint when there is one (runtime/checkpoint.h).
  std::string checkpoint_dir;
  int checkpoint_every = 1;
  // A planted host failure for tests: on the first launch only
  // (GPULAUNCH_RESTART_COUNT 0), every rank on --crash-host kills itself
  // (SIGKILL) when step --crash-at-step begins.
  std::string crash_host;
  int crash_at_step = 0;
  // A planted straggler for tests of the run report (--slow-rank R:MS): rank
  // R computes MS milliseconds longer in every step (it sleeps before its
  // gradient reduction), so the others wait for it there.
  int slow_rank = -1;
  int slow_ms = 0;
};

// Parses "--flag value" pairs; training-only flags are refused by the
// inference job and --input/--output by the trainer. The error text ends
// with `usage`.
StatusOr<JobOptions> ParseJobOptions(int argc, char** argv, bool training, const std::string& usage);

// The job's layout over `world_size` ranks: --layout, else --parallel with
// --stages and --gpus-per-stage, else `planned` (the runtime's: what
// gpulaunch planned, or one replica per rank without it).
StatusOr<ParallelLayout> JobLayout(const JobOptions& options, const ParallelLayout& planned, int world_size);

// How a job cuts its batch of `batch` sequences: into `microbatches` global
// micro-batches (the leaves of every reduction, the same for every layout),
// each of the `dp` replicas running its share. Fails when the micro-batches
// do not divide the batch or are no multiple of dp; the message begins with
// `batch_text` (how the job names its batch, e.g. "--batch 8").
struct BatchCut {
  int global_microbatches = 1;
  int replica_microbatches = 1;  // global / dp
  int seqs_per_microbatch = 1;
};
StatusOr<BatchCut> CutBatch(const std::string& batch_text, int batch, int microbatches, int dp);

}  // namespace gpulaunch::examples
