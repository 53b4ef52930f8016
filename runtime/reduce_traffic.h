// What a deterministic reduction sent, by where the receiver runs, and the
// one place that counts it: every send of the reductions goes through
// CountingSender (or counts itself the same way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"

namespace gpulaunch::rt {

// Bytes a reducer sent, by where the receiver runs.
struct ReduceTraffic {
  uint64_t inter_host_bytes = 0;
  uint64_t intra_host_bytes = 0;
  // Adds `bytes` sent from rank `from` to rank `to`; host_of: every rank's host.
  void Count(const std::vector<int>& host_of, int from, int to, size_t bytes) {
    (host_of[static_cast<size_t>(to)] == host_of[static_cast<size_t>(from)] ? intra_host_bytes : inter_host_bytes) +=
        bytes;
  }
};

// Posts sends (Communicator::PostSend: never waits for the receiver),
// counting their bytes. Zero-byte sends are skipped: the receiver skips them
// too, by the same arithmetic.
class CountingSender {
 public:
  CountingSender(Communicator& comm, const std::vector<int>& host_of, ReduceTraffic& traffic)
      : comm_(comm), host_of_(host_of), traffic_(traffic) {}
  Status Post(int dst, int tag, const void* data, size_t bytes) {
    if (bytes == 0) return Status::Ok();
    traffic_.Count(host_of_, comm_.rank(), dst, bytes);
    return comm_.PostSend(dst, tag, data, bytes);
  }

 private:
  Communicator& comm_;
  const std::vector<int>& host_of_;
  ReduceTraffic& traffic_;
};

}  // namespace gpulaunch::rt
