#include <cstdlib>

#include "common/env.h"
#include "launcher/engine/engine.h"
#include "launcher/engine/mpirun_engine.h"
#include "launcher/engine/srun_engine.h"

namespace gpulaunch {

bool InSlurmAllocation() { return HasEnv("SLURM_JOB_ID"); }

StatusOr<std::unique_ptr<Engine>> SelectEngine(const std::string& name) {
  if (name == "mpirun" || (name == "auto" && !InSlurmAllocation())) return std::unique_ptr<Engine>(new MpirunEngine);
  if (name == "srun" || name == "auto") return std::unique_ptr<Engine>(new SrunEngine);
  return InvalidArgument("--launcher '" + name + "': use auto, mpirun or srun");
}

}  // namespace gpulaunch
