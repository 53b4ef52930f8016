// The policies `gpulaunch sim` compares (simulator.h says what each does).
#include "policies/pool/simulator.h"

namespace gpulaunch::pool {

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> names = {"topology", "fifo-first-fit", "best-fit",
                                                 "tiresias", "sjf-oracle",     "slurm-multifactor"};
  return names;
}

StatusOr<SchedulerConfig> PolicyConfig(const std::string& name, const QuotaBook& quotas) {
  SchedulerConfig c;
  c.quotas = quotas;
  if (name == "topology") {
    // One policy whatever it knows: jobs rank by size (GPUs x expected run
    // time; unknown sizes from the service they had, as under LAS), a level
    // per week waited; a job that does not fit holds no one back, and one
    // that ranks a level above running jobs suspends them for its room.
    c.style = PlacementStyle::kTopology;
    c.order = QueueOrder::kPriorityAging;
    c.size_reference = 64.0 * 7 * 86400;  // a week on 64 GPUs: level 0
    c.aging_s = 7 * 86400;
    c.uninformative_limit_s = UserLimitModel().site_max_s;
    c.backfill = true;
    c.skip_blocked = true;
    c.preempt = true;
    c.preempt_by_service = true;
    c.defragment = true;
  } else if (name == "fifo-first-fit") {
    c.style = PlacementStyle::kFirstFit;
    c.order = QueueOrder::kFifo;
    c.backfill = false;
    c.preempt = false;
  } else if (name == "best-fit") {
    c.style = PlacementStyle::kBestFit;
    c.order = QueueOrder::kFifo;
    c.backfill = true;
    c.preempt = false;
  } else if (name == "tiresias") {
    c.style = PlacementStyle::kTopology;
    c.align_ends = false;
    c.order = QueueOrder::kLeastAttained;
    c.backfill = false;
    c.skip_blocked = true;
    c.preempt = quotas.enabled();
    c.preempt_by_service = true;
  } else if (name == "sjf-oracle") {
    c.style = PlacementStyle::kTopology;
    c.align_ends = false;
    c.order = QueueOrder::kShortestFirst;
    c.backfill = true;
    c.preempt = false;
  } else if (name == "slurm-multifactor") {
    c.style = PlacementStyle::kTopology;
    c.align_ends = false;
    c.order = QueueOrder::kSlurmMultifactor;
    c.backfill = true;
    c.preempt = false;
  } else {
    std::string known;
    for (const std::string& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
    return InvalidArgument("unknown policy '" + name + "': choose " + known);
  }
  return c;
}

}  // namespace gpulaunch::pool
