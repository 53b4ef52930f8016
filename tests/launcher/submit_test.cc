#include "launcher/core/options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "launcher/base/process.h"
#include "slurm/batch_script.h"

namespace gpulaunch {
namespace {

TEST(Submit, ParsesItsOwnOptionsAndPassesTheRestOn) {
  auto o = ParseSubmitCommandLine({"-N", "4", "--gpus-per-node", "4", "-n", "16", "--time", "10:00", "--layout",
                                   "tp=4", "--tag", "--", "./train", "--lr", "0.1"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->job.nodes, 4);
  EXPECT_EQ(o->job.ranks, 16);
  EXPECT_EQ(o->job.launch, (std::vector<std::string>{"--layout", "tp=4", "--tag", "--", "./train", "--lr", "0.1"}));
  const std::string script = RenderBatchScript(o->job, "/opt/gl/bin/gpulaunch");
  EXPECT_EQ(script,
            "#!/bin/bash\n# Written by gpulaunch submit.\n#SBATCH --job-name=gpulaunch\n#SBATCH --nodes=4\n"
            "#SBATCH --ntasks=16\n#SBATCH --gpus-per-node=4\n#SBATCH --time=10:00\n"
            "exec /opt/gl/bin/gpulaunch --layout tp=4 --tag -- ./train --lr 0.1\n");
}

TEST(Submit, QuotesWordsForTheShell) {
  auto o = ParseSubmitCommandLine({"-N", "1", "./job", "a b", "it's", "$HOME"});
  ASSERT_TRUE(o.ok());
  EXPECT_NE(RenderBatchScript(o->job, "/g").find("exec /g ./job 'a b' 'it'\\''s' '$HOME'\n"), std::string::npos);
}

TEST(Submit, BadInput) {
  EXPECT_FALSE(ParseSubmitCommandLine({"./job"}).ok());               // no -N
  EXPECT_FALSE(ParseSubmitCommandLine({"-N", "0", "./job"}).ok());
  EXPECT_FALSE(ParseSubmitCommandLine({"-N", "2"}).ok());             // no program
  EXPECT_FALSE(ParseSubmitCommandLine({"-N", "2", "--time"}).ok());   // missing value
  EXPECT_FALSE(ParseSubmitCommandLine({"-N", "2", "-J", "a\nb", "./job"}).ok());
}

// The script hands the job the exact argv, whatever the words hold: it is
// run with bash here, with printf standing in for gpulaunch, on random bytes.
TEST(Submit, TheScriptPassesEveryWordByteForByte) {
  std::mt19937 rng(20261201);
  for (int round = 0; round < 40; ++round) {
    BatchJob job;
    job.nodes = 1;
    job.launch = {"-c", "printf '%s\\0' \"$@\"", "argv0"};
    std::vector<std::string> words = {"{a,b}", "{1..3}", "*", "~", "!x", "$HOME", "a\nb", "-n", "it's", "\\", ""};
    for (int w = 0; w < 4; ++w) {
      std::string word;
      for (int n = static_cast<int>(rng() % 12); n > 0; --n) word += static_cast<char>(1 + rng() % 255);
      words.push_back(word);
    }
    job.launch.insert(job.launch.end(), words.begin(), words.end());
    const std::string script = (std::filesystem::temp_directory_path() /
                                ("gl-submit-test-" + std::to_string(getpid()) + ".sbatch")).string();
    std::ofstream(script) << RenderBatchScript(job, "/bin/bash");
    const CapturedRun run = RunCaptured({"/bin/bash", script}, EnvironmentWith({}), 10000);
    std::filesystem::remove(script);
    std::string want;
    for (const std::string& w : words) want += w + std::string(1, '\0');
    ASSERT_EQ(run.out, want) << round << ": " << run.err;
  }
}

// Found by fuzz_command_line: an empty long name made Boost throw
// (ambiguous_option) out of WordsAfter instead of a usage error.
TEST(Submit, AnEmptyLongOptionNameIsAUsageError) {
  const std::vector<std::string> args = {"-n", "16", std::string("--=b\0\0\0\\-tim]out", 14), "30", "--o",
                                         "-fai,ure=restart:2job", "arg"};
  const Status s = ParseSubmitCommandLine(args).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(ParseSubmitCommandLine({"-N", "1", "--=x", "./job"}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Submit, SbatchOptionsGoToTheirOwnQuotedLines) {
  auto o = ParseSubmitCommandLine({"-N", "2", "-J", "my job", "--sbatch-arg=--overcommit", "--sbatch-arg",
                                   "--comment=a \"b\" c\\d", "--test-only", "--tag", "./job"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->job.sbatch_args, (std::vector<std::string>{"--overcommit", "--comment=a \"b\" c\\d"}));
  EXPECT_TRUE(o->test_only);
  EXPECT_EQ(o->job.launch, (std::vector<std::string>{"--tag", "./job"}));
  const std::string script = RenderBatchScript(o->job, "/g");
  EXPECT_NE(script.find("#SBATCH \"--job-name=my job\"\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --overcommit\n#SBATCH \"--comment=a \\\"b\\\" c\\\\d\"\nexec /g --tag ./job\n"),
            std::string::npos)
      << script;
  EXPECT_EQ(SbatchWord("--qos=high"), "--qos=high");
  EXPECT_EQ(SbatchWord("--mail-user=it's"), "\"--mail-user=it's\"");
}

// What the job's gpulaunch would refuse is refused now, before sbatch runs.
TEST(Submit, TheJobsCommandLineIsCheckedAtSubmitTime) {
  const Status sbatch_option = ParseSubmitCommandLine({"-N", "2", "--account=proj", "./job"}).status();
  EXPECT_EQ(sbatch_option.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sbatch_option.message().find("unknown option '--account=proj'"), std::string::npos)
      << sbatch_option.message();
  EXPECT_NE(sbatch_option.message().find("give it as --sbatch-arg=--account=proj"), std::string::npos);
  EXPECT_NE(sbatch_option.message().find("nothing was submitted"), std::string::npos);
  EXPECT_NE(ParseSubmitCommandLine({"-N", "2", "--timeout", "0", "./job"}).status().message().find("--timeout 0"),
            std::string::npos);
  EXPECT_NE(ParseSubmitCommandLine({"-N", "2", "--tag"}).status().message().find("no program to run"),
            std::string::npos);
  EXPECT_EQ(ParseSubmitCommandLine({"-N", "2", "--sbatch-arg", "account=x", "./job"}).status().message(),
            "submit: --sbatch-arg 'account=x': give one sbatch option as sbatch spells it, e.g. "
            "--sbatch-arg=--account=proj");
  EXPECT_EQ(ParseSubmitCommandLine({"-N", "2", "--sbatch-arg", "--comment=a\nb", "./job"}).status().message(),
            "submit: --sbatch-arg: a value must be one line");
  EXPECT_EQ(ParseSubmitCommandLine({"-N", "x", "./job"}).status().message(), "submit: --nodes x: give nodes from 1 to 1000000");
  EXPECT_NE(ParseSubmitCommandLine({"-N", "1", "--time", "banana", "./job"}).status().message().find("--time banana: give"),
            std::string::npos);
  for (const char* time : {"30", "10:00", "1:00:00", "2-12", "1-12:30", "1-12:30:15", "UNLIMITED"}) {
    EXPECT_TRUE(ParseSubmitCommandLine({"-N", "1", "--time", time, "./job"}).ok()) << time;
  }
  const std::string layout = ParseSubmitCommandLine({"-N", "1", "--", "-n", "abc", "--layout", "tp=0", "./job"})
                                 .status().message();
  EXPECT_NE(layout.find("the job's gpulaunch command line"), std::string::npos) << layout;
  EXPECT_NE(ParseSubmitCommandLine({"-N", "1", "--", "--layout", "tp=0", "./job"}).status().message().find("tp"),
            std::string::npos);
  EXPECT_NE(ParseSubmitCommandLine({"-N", "1", "--hostfile", "/nonexistent", "./job"}).status().message()
                .find("--hostfile /nonexistent: no such file here; nothing was submitted"),
            std::string::npos);
  EXPECT_TRUE(ParseSubmitCommandLine({"-h"}).value().help);
  EXPECT_TRUE(ParseSubmitCommandLine({"-N", "1", "--validate", "./job"}).value().validate);
  EXPECT_EQ(ParseSubmitCommandLine({"-N", "1", "--validate", "--test-only", "./job"}).status().message(),
            "submit: --test-only submits nothing and --validate submits; give one");
  for (const char* common : {"--account", "--qos", "--constraint", "--exclusive", "--overcommit", "--gres",
                             "--gpus-per-task", "--signal", "--dependency", "--array", "--mail-type"}) {
    EXPECT_NE(SubmitHelpText().find(common), std::string::npos) << common;
  }
}

}  // namespace
}  // namespace gpulaunch
