#include "launcher/base/tag_demux.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpulaunch {
namespace {

std::vector<std::string> Demux(const std::vector<std::string>& chunks) {
  std::vector<std::string> lines;
  TagDemux d([&](int r, const std::string& l) {
    lines.push_back((r < 0 ? std::string() : "[" + std::to_string(r) + "@n" + std::to_string(r) + "]: ") + l + "\n");
  });
  for (const auto& c : chunks) d.Feed(c.data(), c.size());
  d.Finish();
  return lines;
}

TEST(TagDemux, WholeLinesPassThroughRetagged) {
  EXPECT_EQ(Demux({"[1,0]<stdout>:hello\n[1,1]<stdout>:world\n"}),
            (std::vector<std::string>{"[0@n0]: hello\n", "[1@n1]: world\n"}));
}

TEST(TagDemux, ReassemblesLinesTornBetweenRanks) {
  // What mpirun really emits when rank 0's chunk ends mid-line.
  EXPECT_EQ(Demux({"[1,0]<stdout>:line=51 xx", "xx[1,1]<stdout>:rank=1 first\n[1,0]<stdout>:yy\n"}),
            (std::vector<std::string>{"[1@n1]: rank=1 first\n", "[0@n0]: line=51 xxxxyy\n"}));
}

TEST(TagDemux, TagsSplitAcrossReads) {
  EXPECT_EQ(Demux({"[1,", "12]<std", "err>:oops\n"}), (std::vector<std::string>{"[12@n12]: oops\n"}));
}

TEST(TagDemux, UntaggedEngineMessagesAndUnterminatedText) {
  EXPECT_EQ(Demux({"-----\nmpirun noticed\n[1,2]<stdout>:no newline"}),
            (std::vector<std::string>{"-----\n", "mpirun noticed\n", "[2@n2]: no newline\n"}));
}

TEST(TagDemux, BracketsInJobOutputAreText) {
  EXPECT_EQ(Demux({"[1,0]<stdout>:a[3] = [x,y]\n"}), (std::vector<std::string>{"[0@n0]: a[3] = [x,y]\n"}));
}

}  // namespace
}  // namespace gpulaunch
