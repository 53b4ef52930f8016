// Whether an engine that outlives its job is still doing something or is
// hung. Open MPI 4.1.4's mpirun sometimes never exits after its ranks: every
// thread asleep, no CPU, no I/O. One that is still passing on the ranks' last
// output uses CPU or moves bytes, or waits on a reader downstream that has
// not taken what it wrote; that one must not be killed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace gpulaunch {

class EngineActivity {
 public:
  explicit EngineActivity(pid_t pid);

  // True when the engine used CPU or read or wrote bytes since the previous
  // call (the first call only takes the baseline and says true), or when
  // gpulaunch's own stdout or stderr, which the engine writes to as well,
  // cannot take more now.
  bool Sample();

 private:
  struct Counters {
    uint64_t cpu_ticks = 0;   // utime + stime, /proc/PID/stat
    uint64_t io_bytes = 0;    // rchar + wchar, /proc/PID/io (0 when unreadable)
    bool operator==(const Counters&) const = default;
  };
  std::optional<Counters> Read() const;

  const pid_t pid_;
  std::optional<Counters> last_;
};

// True when fd is a descriptor that would block a write now (a full pipe or
// a stopped terminal); false when it can take more, is closed, or is a file.
bool OutputBlocked(int fd);

}  // namespace gpulaunch
