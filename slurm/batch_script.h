// The batch script `gpulaunch submit` hands to sbatch: #SBATCH lines for
// the resources and any other sbatch options, then one exec of gpulaunch
// with the job's command line, every word shell-quoted.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

struct BatchJob {
  int nodes = 0;          // --nodes, required
  int ranks = 0;          // --ntasks (0: Slurm's default, one task per node)
  int gpus_per_node = 0;  // 0: not asked for
  std::string time, partition, job_name = "gpulaunch", output;  // empty: not asked for
  std::vector<std::string> sbatch_args;  // other sbatch options, one word each, after ours
  std::vector<std::string> launch;       // the job's gpulaunch arguments: options, program, its arguments
};

// One word of an #SBATCH line as sbatch reads it back: sbatch splits the
// line at blanks, groups with double or single quotes and takes a backslash
// as escaping the next character. A word must not hold a newline.
std::string SbatchWord(const std::string& word);

// The script; `gpulaunch` is the binary the job runs.
std::string RenderBatchScript(const BatchJob& job, const std::string& gpulaunch);

}  // namespace gpulaunch
