#include "common/strings.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

// What bash would expand is quoted; what it takes literally stays bare.
TEST(ShellQuote, QuotesWhatBashWouldExpand) {
  EXPECT_EQ(ShellQuote("{a,b}"), "'{a,b}'");
  EXPECT_EQ(ShellQuote("x{1..3}"), "'x{1..3}'");
  EXPECT_EQ(ShellQuote("{job_dir}/rankfile"), "{job_dir}/rankfile");
  EXPECT_EQ(ShellQuote("node[1-2],b"), "'node[1-2],b'");
  EXPECT_EQ(ShellQuote("a,b"), "a,b");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("~"), "'~'");
}

TEST(IdList, FormatsRuns) {
  EXPECT_EQ(FormatIdList({}), "");
  EXPECT_EQ(FormatIdList({3}), "3");
  EXPECT_EQ(FormatIdList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
}

TEST(IdList, ParsesAndNormalises) {
  EXPECT_EQ(ParseIdList("0-3,8"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(ParseIdList("5,1,1"), (std::vector<int>{1, 5}));
  EXPECT_EQ(ParseIdList(""), std::vector<int>{});
  for (const char* bad : {"a", "3-1", "-1", "1-", "1,,2", "1-2-3", "0-2000000000", "1048576", "0-1048575,0-9"}) {
    EXPECT_FALSE(ParseIdList(bad)) << bad;
  }
  EXPECT_EQ(ParseIdList("0-1048575")->size(), 1048576u);
}

TEST(IdList, RoundTrips) {
  const std::vector<int> ids = {0, 2, 3, 4, 9, 100, 101};
  EXPECT_EQ(ParseIdList(FormatIdList(ids)), ids);
}

TEST(ParseInt, RejectsJunk) {
  EXPECT_EQ(ParseInt("42"), 42);
  EXPECT_EQ(ParseInt("-7"), -7);
  for (const char* bad : {"", "+1", "1x", " 1", "99999999999999999999"}) EXPECT_FALSE(ParseInt(bad)) << bad;
}

TEST(SplitOutsideBrackets, KeepsBracketCommas) {
  EXPECT_EQ(SplitOutsideBrackets("a[1,2]:2,b", ','), (std::vector<std::string>{"a[1,2]:2", "b"}));
}

}  // namespace
}  // namespace gpulaunch
