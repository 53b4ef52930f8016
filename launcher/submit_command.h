// `gpulaunch submit -N NODES [-n RANKS] [--gpus-per-node G] [--time T]
//  [--partition P] [--job-name NAME] [--output FILE] [--script FILE]
//  [--sbatch-arg ARG]... [--test-only] [gpulaunch options] [--] PROGRAM ARGS`
// writes a batch script (like slurm/gpulaunch.sbatch, with the resources set
// and every word shell-quoted), submits it with sbatch and prints the job id.
#pragma once

#include <string>
#include <vector>

#include "launcher/core/options.h"

namespace gpulaunch {

// One word of an #SBATCH line as sbatch reads it back: sbatch splits the
// line at blanks, groups with double or single quotes and takes a backslash
// as escaping the next character.
std::string SbatchWord(const std::string& word);

// The batch script for these options; `gpulaunch` is the binary the job runs.
std::string RenderBatchScript(const SubmitOptions& options, const std::string& gpulaunch);

// Exit code: 0, 2 for usage errors (and when --test-only hears sbatch refuse
// the request), 125 when sbatch refused or failed the submission.
int RunSubmitCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
