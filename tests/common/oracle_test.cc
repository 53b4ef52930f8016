// gpulaunch's reading of hostlists and hostfiles against what the real tools
// printed for the same text (tests/data/oracles/, recorded by record.sh with
// Slurm 22.05 and Open MPI 4.1). Where they accept a text, gpulaunch reads
// it the same way or refuses it with a message that names the tool; where
// they refuse it, gpulaunch refuses it, except for the extensions listed
// here (and in docs/launch.md).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/host_spec.h"
#include "common/hostlist.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

// The TSV's rows: text, the tool's verdict.
std::vector<std::pair<std::string, std::string>> ReadOracle(const std::string& name) {
  std::ifstream in(std::string(GL_TEST_DATA) + "/oracles/" + name);
  EXPECT_TRUE(in) << name;
  std::vector<std::pair<std::string, std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << line;
    if (tab != std::string::npos) rows.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return rows;
}

// printf %b's escapes, as record.sh wrote the hostfiles with.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out.push_back(c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

TEST(SlurmOracle, HostlistsReadAsScontrolReadsThem) {
  const auto rows = ReadOracle("slurm-hostnames.tsv");
  ASSERT_GE(rows.size(), 40u);
  int followed = 0, refused_as_slurm = 0;
  for (const auto& [expr, slurm] : rows) {
    auto ours = ExpandHostlist(expr);
    if (slurm == "invalid") {
      EXPECT_FALSE(ours.ok()) << "'" << expr << "': Slurm refuses it, gpulaunch read " << Join(*ours, " ");
      refused_as_slurm += !ours.ok();
      continue;
    }
    if (ours.ok()) {
      EXPECT_EQ(Join(*ours, " "), slurm) << "'" << expr << "'";
      followed += Join(*ours, " ") == slurm;
    } else {
      EXPECT_NE(ours.status().message().find("Slurm"), std::string::npos)
          << "'" << expr << "': Slurm reads " << slurm << "; a refusal must name the difference: "
          << ours.status().message();
    }
  }
  EXPECT_GE(followed, 20);
  EXPECT_GE(refused_as_slurm, 15);
}

// What gpulaunch accepts although mpirun refuses it, each on purpose.
const std::map<std::string, std::string> kHostfileExtensions = {
    {"localhost slots=2\\r\\n", "CRLF line ends are read as LF"},
    {"localhost:2\\n", "the Hydra (MPICH) form host:N"},
    {"node[1-2] slots=2\\n", "Slurm hostlists"},
};

TEST(OpenMpiOracle, HostfilesReadAsMpirunReadsThem) {
  const auto rows = ReadOracle("mpirun-hostfiles.tsv");
  ASSERT_GE(rows.size(), 25u);
  int compared = 0;
  for (const auto& [escaped, mpirun] : rows) {
    const auto ours = ParseHostfileText(Unescape(escaped), "hosts");
    if (kHostfileExtensions.count(escaped)) {
      EXPECT_TRUE(ours.ok()) << escaped << " (" << kHostfileExtensions.at(escaped) << "): " << ours.status().message();
      continue;
    }
    if (mpirun.rfind("refused:", 0) == 0) {
      EXPECT_FALSE(ours.ok()) << escaped << ": mpirun " << mpirun;
      if (!ours.ok()) {
        EXPECT_NE(ours.status().message().find("hosts:"), std::string::npos) << ours.status().message();
      }
      ++compared;
      continue;
    }
    int slots = -1, max_slots = -1;
    ASSERT_EQ(std::sscanf(mpirun.c_str(), "slots=%d max_slots=%d", &slots, &max_slots), 2) << mpirun;
    if (slots == 0) {
      // mpirun takes slots=0 and then cannot place a rank; gpulaunch refuses it up front.
      EXPECT_FALSE(ours.ok()) << escaped;
      continue;
    }
    ASSERT_TRUE(ours.ok()) << escaped << ": mpirun reads " << mpirun << "; gpulaunch: " << ours.status().message();
    ASSERT_EQ(ours->size(), 1u) << escaped;
    const HostSpec& h = ours->front();
    EXPECT_EQ(h.name, "localhost");
    EXPECT_EQ(h.slots.value_or(-1), slots) << escaped;
    EXPECT_EQ(h.max_slots.value_or(0), max_slots) << escaped;
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

TEST(OpenMpiOracle, ARepeatedSlotCountNamesTheFirstLine) {
  auto got = ParseHostfileText("# rack 1\nn1 slots=2\nn2 slots=2\nn1 slots=3\n", "hosts");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("hosts:4: 'n1' already appears on line 2"), std::string::npos)
      << got.status().message();
}

}  // namespace
}  // namespace gpulaunch
