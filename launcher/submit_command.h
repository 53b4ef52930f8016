// `gpulaunch submit -N NODES [-n RANKS] [--gpus-per-node G] [--time T]
//  [--partition P] [--job-name NAME] [--output FILE] [--script FILE]
//  [--sbatch-arg ARG]... [--test-only] [gpulaunch options] [--] PROGRAM ARGS`
// writes a batch script (slurm/batch_script.h), submits it with sbatch and
// prints the job id.
#pragma once

#include <string>
#include <vector>


namespace gpulaunch {

// Exit code: 0, 2 for usage errors (and when --test-only hears sbatch refuse
// the request), 125 when sbatch refused or failed the submission.
int RunSubmitCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
