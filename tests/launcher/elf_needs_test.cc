#include "launcher/base/elf_needs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace gpulaunch {
namespace {

std::string Bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

const std::string kSelf = std::filesystem::read_symlink("/proc/self/exe");
const std::string kSmall = std::string(GL_BIN_DIR) + "/mpi_hello_ompi";  // a few KiB: cheap to damage byte by byte

TEST(ElfNeeds, ReadsTheDynamicSectionOfARealProgram) {
  auto small = ParseElfDynamic(Bytes(kSmall));
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_TRUE(small->is_elf);
  EXPECT_NE(std::find(small->needed.begin(), small->needed.end(), "libc.so.6"), small->needed.end());
  EXPECT_NE(std::find(small->needed.begin(), small->needed.end(), "libmpi.so.40"), small->needed.end());
}

TEST(ElfNeeds, AScriptOrTextIsNotElfAndNeedsNothing) {
  for (const std::string text : {"#!/bin/sh\necho hi\n", "", "\x7f" "EL", "plain words"}) {
    auto parsed = ParseElfDynamic(text);
    ASSERT_TRUE(parsed.ok());
    EXPECT_FALSE(parsed->is_elf);
    EXPECT_TRUE(parsed->needed.empty());
  }
}

// Every prefix of a real program, and the program with bytes overwritten
// across its headers, parses or fails cleanly: never reads past the end.
TEST(ElfNeeds, TruncatedOrDamagedFilesFailCleanly) {
  const std::string real = Bytes(kSmall);
  ASSERT_GT(real.size(), 4096u);
  int failures = 0;
  for (size_t cut : {5ul, 16ul, 20ul, 40ul, 63ul, 64ul, 100ul, 500ul, 1000ul, 4000ul, real.size() / 2}) {
    auto parsed = ParseElfDynamic(std::string_view(real).substr(0, cut));
    failures += !parsed.ok();
  }
  EXPECT_GT(failures, 0) << "a cut header must be an error";
  for (size_t at = 16; at < 128; ++at) {
    std::string damaged = real;
    damaged[at] = static_cast<char>(0xff);
    (void)ParseElfDynamic(damaged);  // ASan and UBSan watch this
  }
  auto short_header = ParseElfDynamic(real.substr(0, 40));
  ASSERT_FALSE(short_header.ok());
  EXPECT_NE(short_header.status().message().find("malformed ELF"), std::string::npos);
}

TEST(ElfNeeds, FindsLibrariesWhereTheLoaderWould) {
  std::vector<NeededLibrary> seen;
  auto found = FindNeededLibrary(kSelf, [&](const NeededLibrary& lib) {
    seen.push_back(lib);
    return lib.name == "libc.so.6";
  });
  ASSERT_TRUE(found.ok()) << found.status().message();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->name, "libc.so.6");
  EXPECT_TRUE(std::filesystem::exists((*found)->path)) << (*found)->path;
  EXPECT_EQ((*found)->needed_by, kSelf);
  // A name no library has: every library is visited once, and none matches.
  std::set<std::string> names;
  auto none = FindNeededLibrary(kSelf, [&](const NeededLibrary& lib) {
    EXPECT_TRUE(names.insert(lib.name).second) << lib.name << " visited twice";
    return false;
  });
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_GT(names.size(), seen.size() - 1) << "the walk follows the libraries' own needs";
  EXPECT_FALSE(FindNeededLibrary("/no/such/program", [](const NeededLibrary&) { return true; }).ok());
}

}  // namespace
}  // namespace gpulaunch
