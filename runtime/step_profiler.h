// Per-step runtime metrics (issue "Observability"): for every step of a rank,
// its wall time, the time spent inside each group's communication (dp, tp,
// pp, world), the bytes moved there, and for pipelines the time spent waiting
// for neighbours. Record format and units: common/step_metrics.h.
//
//   for (int step = 0; step < steps; ++step) {
//     rt::ProfiledStep profiled(step);   // one record when it goes out of scope
//     ...
//   }
//
// Turned on by GPULAUNCH_PROFILE=1 in the rank's environment (`gpulaunch
// --profile` sets it). Off, the cost is one branch per step and nothing per
// communication call: communicators are not wrapped at all. On, each
// communication call costs two clock reads and a short locked update.
//
// Where records go (the process-wide profiler, set up by rt::Init): to
// GPULAUNCH_METRICS_FD, a pipe to the rank's exec shim, which forwards them
// to gpulaunch; without it (a plain mpirun run), appended to
// $GPULAUNCH_PROFILE_DIR/metrics-rank<R>.jsonl (default directory: the
// current one).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/step_metrics.h"
#include "runtime/communicator.h"

namespace gpulaunch::rt {

class StepProfiler {
 public:
  using Sink = std::function<void(const StepMetrics&)>;
  using Clock = std::function<double()>;  // seconds, monotonic

  StepProfiler() = default;  // disabled
  // Enabled: every finished step goes to `sink`. `clock` is for tests.
  StepProfiler(int rank, Sink sink, Clock clock = {});

  // The process's profiler; disabled until ConfigureFromEnvironment.
  static StepProfiler& Process();
  // Enables the process's profiler when GPULAUNCH_PROFILE=1 (rt::Init calls it).
  static void ConfigureFromEnvironment(int rank);

  bool enabled() const { return static_cast<bool>(sink_); }
  double Now() const;

  // Communication outside a step is not counted. A BeginStep without EndStep
  // drops the unfinished step.
  void BeginStep(int64_t step);
  void EndStep();
  // `inter_host_bytes`: the part of what this rank sent that went to
  // another host.
  void AddCommunication(const std::string& group, double seconds, uint64_t bytes, uint64_t inter_host_bytes = 0);
  // Pipeline executor: time blocked on a neighbour, and the schedule's
  // textbook bubble fraction.
  void AddBubble(double seconds, double theory);

 private:
  void Enable(int rank, Sink sink, Clock clock);
  int rank_ = -1;
  Sink sink_;
  Clock clock_;
  std::mutex mu_;
  bool in_step_ = false;
  int64_t step_ = 0;
  double started_ = 0;
  StepMetrics current_;
  std::map<std::string, GroupTraffic> groups_;
};

// RAII step for the process's profiler (or another one).
class ProfiledStep {
 public:
  explicit ProfiledStep(int64_t step, StepProfiler& profiler = StepProfiler::Process());
  ~ProfiledStep();
  ProfiledStep(const ProfiledStep&) = delete;
  ProfiledStep& operator=(const ProfiledStep&) = delete;

 private:
  StepProfiler& profiler_;
};

// `inner` itself when `profiler` is disabled; else a communicator that counts
// every call's time and bytes under `group`. Split returns the inner
// communicator's split unwrapped: whoever names the new group wraps it.
// `host_of_rank` (the host of each of inner's ranks, any labels; empty:
// unknown) lets it count what point-to-point sends carry to other hosts.
std::unique_ptr<Communicator> ProfileCommunicator(std::unique_ptr<Communicator> inner, const std::string& group,
                                                  StepProfiler& profiler = StepProfiler::Process(),
                                                  std::vector<int> host_of_rank = {});

}  // namespace gpulaunch::rt
