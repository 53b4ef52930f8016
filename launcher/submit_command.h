// `gpulaunch submit -N NODES [-n RANKS] [--gpus-per-node G] [--time T]
//  [--partition P] [--job-name NAME] [--output FILE] [--script FILE]
//  [gpulaunch options] [--] PROGRAM ARGS`
// writes a batch script (like slurm/gpulaunch.sbatch, with the resources set
// and every word shell-quoted), submits it with sbatch and prints the job id.
#pragma once

#include <string>
#include <vector>

#include "launcher/core/options.h"

namespace gpulaunch {

// The batch script for these options; `gpulaunch` is the binary the job runs.
std::string RenderBatchScript(const SubmitOptions& options, const std::string& gpulaunch);

// Exit code: 0, 2 for usage errors, 125 when sbatch refused or failed.
int RunSubmitCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
