#include <cstdlib>
#include <functional>

#include "common/env.h"
#include "launcher/engine/engine.h"
#include "launcher/engine/hydra_engine.h"
#include "launcher/engine/mpirun_engine.h"
#include "launcher/engine/srun_engine.h"

namespace gpulaunch {
namespace {

struct Registered {
  const char* name;
  std::function<std::unique_ptr<Engine>()> make;
};

// Every engine, in the order "auto" prefers them for a program of either MPI.
const std::vector<Registered>& Registry() {
  static const std::vector<Registered> engines = {
      {"mpirun", [] { return std::unique_ptr<Engine>(new MpirunEngine); }},
      {"hydra", [] { return std::unique_ptr<Engine>(new HydraEngine); }},
      {"srun", [] { return std::unique_ptr<Engine>(new SrunEngine); }},
  };
  return engines;
}

std::string Choices() {
  std::string names = "auto";
  for (const Registered& r : Registry()) names += std::string(", ") + r.name;
  return names;
}

// How to run a program of `family`: the engine here that starts it, else
// what to install.
std::string Fix(MpiFamily family) {
  for (const Registered& r : Registry()) {
    const std::unique_ptr<Engine> engine = r.make();
    if (engine->StartsMpi(family) && engine->IsViable().ok()) return std::string("use --launcher ") + r.name + " (or auto)";
  }
  return family == MpiFamily::kMpich ? "install MPICH's mpiexec.hydra (Debian: apt-get install mpich), then use "
                                       "--launcher hydra (or auto)"
                                     : "install Open MPI's mpirun (Debian: apt-get install openmpi-bin), then use "
                                       "--launcher mpirun (or auto)";
}

}  // namespace

bool InSlurmAllocation() { return HasEnv("SLURM_JOB_ID"); }

StatusOr<std::unique_ptr<Engine>> SelectEngine(const std::string& name) {
  const std::string wanted = name == "auto" ? (InSlurmAllocation() ? "srun" : "mpirun") : name;
  for (const Registered& r : Registry()) {
    if (wanted == r.name) return r.make();
  }
  return InvalidArgument("--launcher '" + name + "': use " + Choices());
}

StatusOr<EngineChoice> ChooseEngine(const std::string& name, const std::string& program) {
  ProgramMpi mpi;
  if (program.empty()) {
    mpi.why_none = "no program given, so no MPI read";
  } else {
    mpi = ReadProgramMpi(program);
  }
  const std::string found = program.empty() ? mpi.why_none : mpi.Describe(program);
  if (name != "auto") {
    GL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, SelectEngine(name));
    if (mpi.family && !engine->StartsMpi(*mpi.family)) {
      return FailedPrecondition(found + ", which " + engine->Name() +
                                " cannot start: every rank would run alone, as an MPI singleton; " + Fix(*mpi.family));
    }
    return EngineChoice{std::move(engine), "--launcher " + name + " (" + found + ")"};
  }
  GL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> fallback, SelectEngine("auto"));
  const std::string where = InSlurmAllocation() ? "inside a Slurm allocation" : "outside Slurm";
  if (!mpi.family || fallback->StartsMpi(*mpi.family)) {
    std::string reason = fallback->Name() + ": " + where + " (" + found + ")";
    return EngineChoice{std::move(fallback), reason};
  }
  // The program's MPI is not the default engine's: the first that starts it
  // and can run here. srun starts ranks only inside an allocation, so the
  // others are tried there too.
  for (const Registered& r : Registry()) {
    std::unique_ptr<Engine> engine = r.make();
    if (engine->StartsMpi(*mpi.family) && engine->IsViable().ok()) {
      std::string reason = engine->Name() + ": " + found + ", which " + fallback->Name() + " cannot start";
      return EngineChoice{std::move(engine), reason};
    }
  }
  return FailedPrecondition(found + ", and no engine here starts it (" + fallback->Name() +
                            " would run every rank as an MPI singleton); " + Fix(*mpi.family) +
                            ", or launch a script that starts the program if it really is not an MPI program");
}

}  // namespace gpulaunch
