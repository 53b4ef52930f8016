#include "common/strings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

// Error messages quote one screen line of the input, binary bytes escaped.
TEST(Excerpt, CutsToAScreenLineAndEscapesBinary) {
  EXPECT_EQ(Excerpt("submit,duration"), "submit,duration");
  EXPECT_EQ(Excerpt(std::string("a\0b\n\x7f\xff\\", 7)), "a\\x00b\\n\\x7f\\xff\\\\");
  const std::string big(16 << 20, 'x');
  const std::string e = Excerpt(big);
  EXPECT_EQ(e, std::string(kExcerptBytes, 'x') + "... (16777216 bytes)");
  EXPECT_LT(e.size(), 100u);
}

// A line over the limit is refused without reading the rest of the file; a
// directory is named as one.
TEST(ReadTextLines, RefusesALongLineAndADirectory) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("gl-lines-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir + "/ok") << "a\r\nb\n\nc";
    std::ofstream(dir + "/long") << "h\n" << std::string(100, 'y') << "\n";
  }
  auto ok = ReadTextLines(dir + "/ok", "trace");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok, (std::vector<std::string>{"a", "b", "", "c"}));
  auto long_line = ReadTextLines(dir + "/long", "trace", 64);
  ASSERT_FALSE(long_line.ok());
  EXPECT_EQ(long_line.status().message(),
            dir + "/long:2: a line longer than the 64 bytes a trace line may hold (" + std::string(60, 'y') +
                "... (65 bytes)): is it the right file?");
  auto is_dir = ReadTextFile(dir, "hostfile");
  ASSERT_FALSE(is_dir.ok());
  EXPECT_EQ(is_dir.status().message(), "hostfile '" + dir + "' is a directory; give the file in it");
  EXPECT_EQ(ReadTextLines(dir + "/none", "trace").status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(ForEachConfigLine, RefusesALineOverTheLimit) {
  int seen = 0;
  const std::string text = "a\n" + std::string(kMaxTextLineBytes + 1, 'z') + "\nb\n";
  const Status s = ForEachConfigLine(text, "hosts", [&](int, std::string_view) {
    ++seen;
    return Status::Ok();
  });
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(s.message(), "hosts:2: a line of 65537 bytes, longer than the 65536 a line may hold (" +
                             std::string(60, 'z') + "... (65537 bytes))");
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

// Words reads what `>>` on a string stream would: words between any white
// space, integers only when the whole word is one that fits.
TEST(Words, ReadsWordsIntegersAndTheRestOfALine) {
  Words w(" checkin\t12  -3 host  free text here \nnext 99999999999 x1");
  EXPECT_EQ(w.Next(), "checkin");
  EXPECT_EQ(w.NextInt<int>(), 12);
  EXPECT_EQ(w.NextInt<int>(), -3);
  EXPECT_EQ(w.Next(), "host");
  EXPECT_EQ(w.RestOfLine(), " free text here ");  // one separating space dropped, the rest kept
  EXPECT_EQ(w.Next(), "next");
  EXPECT_EQ(w.NextInt<int>(), std::nullopt) << "over int's range";
  EXPECT_EQ(w.NextInt<int>(), std::nullopt) << "not a number";
  EXPECT_EQ(w.Next(), std::nullopt);
  EXPECT_EQ(w.RestOfLine(), "");
  EXPECT_EQ(Words("7").NextInt<uint8_t>(), 7);
  EXPECT_EQ(Words("-1").NextInt<uint64_t>(), std::nullopt);
  EXPECT_EQ(Words("300").NextInt<uint8_t>(), std::nullopt);
  EXPECT_EQ(Words("\n\r\v\f ").Next(), std::nullopt);
}

// Files are read whole whatever their reported size: /proc files say 0.
TEST(ReadTextFile, ReadsFilesWholeIncludingProcFiles) {
  const std::string path = (std::filesystem::temp_directory_path() / ("gl-read-" + std::to_string(getpid()))).string();
  const std::string big(200000, 'z');  // several reads
  std::ofstream(path) << big << "\nend";
  auto text = ReadTextFile(path, "hostfile");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, big + "\nend");
  EXPECT_EQ(ReadFileOrEmpty(path), big + "\nend");
  std::remove(path.c_str());
  EXPECT_EQ(ReadTextFile(path, "hostfile").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadFileOrEmpty(path), "");
  auto status = ReadTextFile("/proc/self/status", "status");
  ASSERT_TRUE(status.ok());
  EXPECT_NE(status->find("Pid:\t" + std::to_string(getpid()) + "\n"), std::string::npos) << *status;
}

TEST(SplitOutsideBrackets, KeepsBracketCommas) {
  EXPECT_EQ(SplitOutsideBrackets("a[1,2]:2,b", ','), (std::vector<std::string>{"a[1,2]:2", "b"}));
}

}  // namespace
}  // namespace gpulaunch
