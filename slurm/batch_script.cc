#include "slurm/batch_script.h"

#include "common/strings.h"

namespace gpulaunch {

std::string SbatchWord(const std::string& word) {
  if (!word.empty() && word.find_first_of(" \t\"'\\#") == std::string::npos) return word;
  std::string out = "\"";
  for (char c : word) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string RenderBatchScript(const BatchJob& o, const std::string& gpulaunch) {
  std::string s = "#!/bin/bash\n# Written by gpulaunch submit.\n";
  auto directive = [&s](const std::string& word) { s += "#SBATCH " + SbatchWord(word) + "\n"; };
  directive("--job-name=" + o.job_name);
  directive("--nodes=" + std::to_string(o.nodes));
  if (o.ranks > 0) directive("--ntasks=" + std::to_string(o.ranks));
  if (o.gpus_per_node > 0) directive("--gpus-per-node=" + std::to_string(o.gpus_per_node));
  if (!o.time.empty()) directive("--time=" + o.time);
  if (!o.partition.empty()) directive("--partition=" + o.partition);
  if (!o.output.empty()) directive("--output=" + o.output);
  for (const std::string& a : o.sbatch_args) directive(a);  // after ours: sbatch lets the last one win
  s += "exec " + ShellQuote(gpulaunch);
  for (const std::string& a : o.launch) s += " " + ShellQuote(a);
  return s + "\n";
}

}  // namespace gpulaunch
