// Output an engine labelled by task ("3: line" from srun --label, "[3] line"
// from Hydra's -prepend-rank), split back into each task's text.
#pragma once

#include <map>
#include <regex>
#include <string>

#include "common/strings.h"

namespace gpulaunch {

// `label` matches a line's label at its start; its first group is the task
// index. Lines without a label are dropped.
inline std::map<int, std::string> SplitLabelledLines(const std::string& output, const std::regex& label) {
  std::map<int, std::string> by_task;
  for (const std::string& line : Split(output, '\n')) {
    std::smatch m;
    if (std::regex_search(line, m, label)) by_task[std::stoi(m[1].str())] += line.substr(m[0].length()) + "\n";
  }
  return by_task;
}

}  // namespace gpulaunch
