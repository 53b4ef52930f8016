// What a deterministic reduction sent, by where the receiver runs, and the
// one place that counts it: every send of the reductions goes through
// CountingSender (or counts itself the same way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"

namespace gpulaunch::rt {

// Bytes a reducer sent, by where the receiver runs.
struct ReduceTraffic {
  uint64_t inter_host_bytes = 0;
  uint64_t intra_host_bytes = 0;
  // Of inter_host_bytes, those to ranks under another leaf switch (0 when
  // the switches are unknown).
  uint64_t inter_switch_bytes = 0;
  // Adds `bytes` sent from rank `from` to rank `to`; host_of: every rank's
  // host, switch_of: every rank's switch or empty.
  void Count(const std::vector<int>& host_of, int from, int to, size_t bytes,
             const std::vector<int>& switch_of = {}) {
    const auto f = static_cast<size_t>(from), t = static_cast<size_t>(to);
    (host_of[t] == host_of[f] ? intra_host_bytes : inter_host_bytes) += bytes;
    if (!switch_of.empty() && switch_of[t] != switch_of[f]) inter_switch_bytes += bytes;
  }
};

// Buffers a reduction keeps between calls. Fresh ones fault in their pages
// on every call: 64 MiB allreduces over 8 ranks ran at 2.9x MPI_Allreduce
// that way, against about 1x for 16 MiB.
struct ReduceScratch {
  template <typename T>
  struct Of {
    std::vector<std::vector<T>> levels;  // a rank's pure-node values at each level of the climb
    std::vector<T> assembled;
    std::vector<std::vector<T>> packs, received;
    // packs[i] sized n, keeping what earlier calls allocated.
    T* Pack(size_t i, size_t n) {
      if (packs.size() <= i) packs.resize(i + 1);
      packs[i].resize(n);
      return packs[i].data();
    }
  };
  Of<float> f32;
  Of<double> f64;
  template <typename T>
  Of<T>& For() {
    if constexpr (std::is_same_v<T, float>) {
      return f32;
    } else {
      return f64;
    }
  }
};

// Posts sends (Communicator::PostSend: never waits for the receiver),
// counting their bytes. Zero-byte sends are skipped: the receiver skips them
// too, by the same arithmetic.
class CountingSender {
 public:
  CountingSender(Communicator& comm, const std::vector<int>& host_of, ReduceTraffic& traffic,
                 const std::vector<int>* switch_of = nullptr)
      : comm_(comm), host_of_(host_of), switch_of_(switch_of), traffic_(traffic) {}
  Status Post(int dst, int tag, const void* data, size_t bytes) {
    if (bytes == 0) return Status::Ok();
    traffic_.Count(host_of_, comm_.rank(), dst, bytes, switch_of_ ? *switch_of_ : kNone);
    return comm_.PostSend(dst, tag, data, bytes);
  }

 private:
  Communicator& comm_;
  inline static const std::vector<int> kNone;
  const std::vector<int>& host_of_;
  const std::vector<int>* switch_of_;
  ReduceTraffic& traffic_;
};

}  // namespace gpulaunch::rt
