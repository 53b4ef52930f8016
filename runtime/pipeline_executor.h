// Runs a checked PipelineSchedule over a Communicator: one call per
// pipeline rank, the communicator's rank being the pipeline rank. The model
// supplies what each stage computes (PipelineStages); the executor moves
// activations and gradients between ranks, each message tagged by its
// channel (direction, stage it enters) and carrying its micro-batch number,
// which the receiver verifies.
//
// On a stall (no action completed for stall_report_ms), every stuck rank
// prints, once, the last action it completed and the one it waits at, so a
// hung pipeline names where it hangs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/pipeline_schedule.h"

namespace gpulaunch::rt {

class StepProfiler;  // runtime/step_profiler.h

class PipelineStages {
 public:
  virtual ~PipelineStages() = default;
  // Floats of the activation entering `stage` (the previous stage's output)
  // for one micro-batch; the gradient entering stage s - 1 has the same size.
  virtual size_t ActivationFloats(int stage) const = 0;
  // `input` is empty at stage 0. Returns the output for the next stage
  // (ignored at the last stage, whose results the model keeps itself).
  virtual StatusOr<std::vector<float>> Forward(int microbatch, int stage, const std::vector<float>& input) = 0;
  // `grad_output` is empty at the last stage (the loss starts there).
  // Returns the gradient of the stage's input (ignored at stage 0).
  virtual StatusOr<std::vector<float>> Backward(int microbatch, int stage, const std::vector<float>& grad_output) {
    (void)microbatch, (void)stage, (void)grad_output;
    return FailedPrecondition("this model has no backward pass; run it with an inference (forward-only) schedule");
  }
};

struct PipelineRunOptions {
  int stall_report_ms = 0;  // 0: no stall reports
  // Where stall reports go (default: stderr, one line each).
  std::function<void(const std::string&)> report;
  // Where the measured bubble is counted (default: the process's profiler,
  // runtime/step_profiler.h); nothing is measured while it is disabled.
  StepProfiler* profiler = nullptr;
};

// Checks the schedule (CheckSchedule), then runs this rank's table.
Status RunPipeline(const PipelineSchedule& schedule, Communicator& pipeline, PipelineStages& stages,
                   const PipelineRunOptions& options = {});

}  // namespace gpulaunch::rt
