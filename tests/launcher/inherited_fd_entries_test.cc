// ForgetInheritedFdEntries, in a forked child set up as Open MPI's daemon
// sets up a rank: the parent holds many descriptors, the child lists
// /proc/self/fd (which caches an entry for each), then closes them.
#include "launcher/shim/inherited_fd_entries.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <vector>

namespace gpulaunch {
namespace {

// Descriptors at and above kFirstExtra that the test process holds.
constexpr int kFirstExtra = 1000;

std::vector<int> OpenExtra(int count) {
  std::vector<int> fds;
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (int i = 0; i < count; ++i) {
    const int fd = fcntl(null, F_DUPFD_CLOEXEC, kFirstExtra);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  close(null);
  return fds;
}

long DentriesInUse() {
  long total = 0;
  if (FILE* f = std::fopen("/proc/sys/fs/dentry-state", "r")) {
    if (std::fscanf(f, "%ld", &total) != 1) total = 0;
    std::fclose(f);
  }
  return total;
}

struct ChildResult {
  long looked_up = -1;
  long dentries_dropped = 0;
};

// In a child: list /proc/self/fd, close `extra` unless `keep_extra`, then
// forget; reports the count and how many cached entries went meanwhile.
ChildResult InChild(const std::vector<int>& extra, bool keep_extra) {
  int out[2];
  if (pipe(out) != 0) return {};
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    close(out[0]);
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) (void)entry;
    if (!keep_extra) {
      for (int fd : extra) close(fd);
    }
    ChildResult r;
    const long before = DentriesInUse();
    r.looked_up = ForgetInheritedFdEntries(parent);
    r.dentries_dropped = before - DentriesInUse();
    [[maybe_unused]] ssize_t n = write(out[1], &r, sizeof r);
    _exit(0);
  }
  close(out[1]);
  ChildResult r;
  if (read(out[0], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) r = {};
  close(out[0]);
  waitpid(child, nullptr, 0);
  return r;
}

TEST(InheritedFdEntries, LooksUpExactlyTheParentsDescriptorsThisProcessClosed) {
  const std::vector<int> extra = OpenExtra(256);
  ASSERT_EQ(extra.size(), 256u);
  const ChildResult closed = InChild(extra, false);
  const ChildResult kept = InChild(extra, true);
  for (int fd : extra) close(fd);
  ASSERT_GE(closed.looked_up, 256);
  EXPECT_EQ(closed.looked_up - kept.looked_up, 256) << "a descriptor the child still holds was looked up, or one it "
                                                       "closed was not";
}

TEST(InheritedFdEntries, TheKernelDropsTheEntriesTheChildListed) {
  constexpr int kExtra = 8192;
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const rlimit saved = limit;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < kFirstExtra + kExtra + 64) {
    GTEST_SKIP() << "RLIMIT_NOFILE's hard limit " << limit.rlim_max << " is below " << kFirstExtra + kExtra + 64;
  }
  limit.rlim_cur = kFirstExtra + kExtra + 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  const std::vector<int> extra = OpenExtra(kExtra);
  ASSERT_EQ(extra.size(), static_cast<size_t>(kExtra));
  // The machine's other processes make and free entries too: the best of
  // three tries counts, and half the listed entries must go. Without the
  // lookups they all stay until the child is reaped (a drop near 0).
  long best = 0;
  for (int attempt = 0; attempt < 3 && best < kExtra / 2; ++attempt) {
    best = std::max(best, InChild(extra, false).dentries_dropped);
  }
  for (int fd : extra) close(fd);
  setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_GE(best, kExtra / 2);
}

}  // namespace
}  // namespace gpulaunch
