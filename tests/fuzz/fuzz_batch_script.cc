// libFuzzer: the batch script `gpulaunch submit` writes (slurm/batch_script.h)
// must hand the job the exact argv and sbatch the exact option words,
// whatever bytes they hold. The input is split at NUL bytes: words before an
// empty word go to #SBATCH lines, the rest to the job's command line.
//   - argv: the script runs under bash with a printf loop standing in for
//     gpulaunch, and what printf prints must be the words, byte for byte;
//   - #SBATCH: each line read back as sbatch reads it (split at blanks,
//     double or single quotes group, a backslash escapes the next
//     character) must be the word. sbatch reads #SBATCH lines only up to
//     the script's first line that is neither blank nor a comment, so a
//     job argument that holds "\n#SBATCH " inside the exec line's quotes
//     is not a directive, and the reader stops there as sbatch does.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "launcher/base/process.h"
#include "slurm/batch_script.h"

namespace {

// One #SBATCH line's words as sbatch's _get_argument reads them.
std::vector<std::string> SbatchRead(const std::string& line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    std::string w;
    char quote = 0;
    for (; i < line.size(); ++i) {
      const char c = line[i];
      if (quote) {
        if (c == quote) {
          quote = 0;
        } else if (c == '\\' && i + 1 < line.size()) {
          w += line[++i];
        } else {
          w += c;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '\\' && i + 1 < line.size()) {
        w += line[++i];
      } else if (c == ' ' || c == '\t') {
        break;
      } else {
        w += c;
      }
    }
    words.push_back(w);
  }
  return words;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;  // a few words are enough; each input runs bash once
  std::vector<std::string> words(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.emplace_back();
    } else {
      words.back() += static_cast<char>(data[i]);
    }
  }
  gpulaunch::BatchJob job;
  job.nodes = 1;
  size_t at = 0;
  for (; at < words.size() && !words[at].empty(); ++at) {
    if (words[at].find('\n') == std::string::npos && words[at].find('\r') == std::string::npos) {
      job.sbatch_args.push_back(words[at]);
    }
  }
  const std::vector<std::string> argv(words.begin() + static_cast<long>(std::min(at + 1, words.size())), words.end());
  // printf with no words would still print one empty one: a loop prints exactly the words.
  job.launch = {"-c", "for a in \"$@\"; do printf '%s\\0' \"$a\"; done", "argv0"};
  job.launch.insert(job.launch.end(), argv.begin(), argv.end());
  const std::string script_text = gpulaunch::RenderBatchScript(job, "/bin/bash");

  // #SBATCH lines: ours first, then one per sbatch word in order.
  std::vector<std::string> read;
  size_t from = 0;
  while (from < script_text.size()) {
    const size_t end = script_text.find('\n', from);
    const std::string line = script_text.substr(from, end - from);
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] != '#') break;  // a command: sbatch stops here
    if (line.rfind("#SBATCH ", 0) == 0) {
      const auto w = SbatchRead(line.substr(8));
      if (w.size() != 1) __builtin_trap();  // one word per line
      read.push_back(w[0]);
    }
    if (end == std::string::npos) break;
    from = end + 1;
  }
  if (read.size() < job.sbatch_args.size()) __builtin_trap();
  for (size_t k = 0; k < job.sbatch_args.size(); ++k) {
    if (read[read.size() - job.sbatch_args.size() + k] != job.sbatch_args[k]) __builtin_trap();
  }

  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gl-fuzz-batch-" + std::to_string(getpid()) + ".sh")).string();
  std::ofstream(path) << script_text;
  const gpulaunch::CapturedRun run =
      gpulaunch::RunCaptured({"/bin/bash", path}, gpulaunch::EnvironmentWith({}), 10000);
  std::filesystem::remove(path);
  std::string want;
  for (const std::string& w : argv) want += w + std::string(1, '\0');
  if (run.out != want) __builtin_trap();
  return 0;
}
