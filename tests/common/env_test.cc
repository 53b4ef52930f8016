#include "common/env.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace gpulaunch {
namespace {

TEST(Env, UnsetEmptyAndSetAreThreeCases) {
  unsetenv("GL_ENV_TEST");
  EXPECT_FALSE(GetEnv("GL_ENV_TEST").has_value());
  EXPECT_FALSE(HasEnv("GL_ENV_TEST"));
  EXPECT_EQ(EnvOr("GL_ENV_TEST", "fallback"), "fallback");
  EXPECT_FALSE(EnvIs("GL_ENV_TEST", ""));
  setenv("GL_ENV_TEST", "", 1);
  EXPECT_EQ(GetEnv("GL_ENV_TEST"), std::optional<std::string>(""));
  EXPECT_TRUE(HasEnv("GL_ENV_TEST"));
  EXPECT_EQ(EnvOr("GL_ENV_TEST", "fallback"), "");
  EXPECT_TRUE(EnvIs("GL_ENV_TEST", ""));
  setenv("GL_ENV_TEST", "1", 1);
  EXPECT_TRUE(EnvIs("GL_ENV_TEST", "1"));
  EXPECT_FALSE(EnvIs("GL_ENV_TEST", "10"));
  EXPECT_EQ(ProcessEnv()("GL_ENV_TEST"), std::string("1"));
  unsetenv("GL_ENV_TEST");
}

TEST(Env, DescriptorsAreNumbersFromThreeUp) {
  for (const auto& [text, want] : std::vector<std::pair<const char*, int>>{
           {"3", 3}, {"65535", 65535}, {"2", -1}, {"65536", -1}, {"", -1}, {"7x", -1}, {"-4", -1}, {" 5", 5}}) {
    setenv("GL_ENV_TEST_FD", text, 1);
    EXPECT_EQ(DescriptorFromEnv("GL_ENV_TEST_FD"), want) << "'" << text << "'";
  }
  unsetenv("GL_ENV_TEST_FD");
  EXPECT_EQ(DescriptorFromEnv("GL_ENV_TEST_FD"), -1);
}

}  // namespace
}  // namespace gpulaunch
