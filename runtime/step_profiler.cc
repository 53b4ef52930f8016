#include "runtime/step_profiler.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "common/env.h"

namespace gpulaunch::rt {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Writes whole lines to a descriptor; gives up (and says so once) on error.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void operator()(const StepMetrics& m) {
    if (fd_ < 0) return;
    const std::string line = StepMetricsJson(m) + "\n";
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t n = write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::cerr << "gpurt: cannot write step metrics: " << std::strerror(errno) << "; profiling stops\n";
        fd_ = -1;
        return;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
};

// Bytes this rank sends plus receives in each kind of call, and what its
// point-to-point sends carry to other hosts when the hosts are known.
class ProfiledCommunicator : public Communicator {
 public:
  ProfiledCommunicator(std::unique_ptr<Communicator> inner, std::string group, StepProfiler& profiler,
                       std::vector<int> host_of_rank)
      : inner_(std::move(inner)), group_(std::move(group)), profiler_(profiler), host_of_rank_(std::move(host_of_rank)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string Name() const override { return inner_->Name(); }
  Status Send(int dst, int tag, const void* data, size_t bytes) override {
    return Timed(bytes, [&] { return inner_->Send(dst, tag, data, bytes); }, InterHost(dst, bytes));
  }
  Status Recv(int src, int tag, void* data, size_t bytes) override {
    return Timed(bytes, [&] { return inner_->Recv(src, tag, data, bytes); });
  }
  Status SendRecv(int dst, const void* send, size_t send_bytes, int src, void* recv, size_t recv_bytes,
                  int tag) override {
    return Timed(send_bytes + recv_bytes,
                 [&] { return inner_->SendRecv(dst, send, send_bytes, src, recv, recv_bytes, tag); },
                 InterHost(dst, send_bytes));
  }
  Status PostSend(int dst, int tag, const void* data, size_t bytes) override {
    return Timed(bytes, [&] { return inner_->PostSend(dst, tag, data, bytes); }, InterHost(dst, bytes));
  }
  Status FlushSends() override {
    return Timed(0, [&] { return inner_->FlushSends(); });
  }
  Status Barrier() override {
    return Timed(0, [&] { return inner_->Barrier(); });
  }
  Status Allgather(const void* in, size_t bytes, void* out) override {
    return Timed(bytes * static_cast<size_t>(size()), [&] { return inner_->Allgather(in, bytes, out); });
  }
  Status Broadcast(void* data, size_t bytes, int root) override {
    return Timed(bytes, [&] { return inner_->Broadcast(data, bytes, root); });
  }
  StatusOr<std::unique_ptr<Communicator>> SplitImpl(int color, int key) override { return inner_->Split(color, key); }

 private:
  template <typename Call>
  Status Timed(size_t bytes, Call&& call, size_t inter_host_bytes = 0) {
    const double start = profiler_.Now();
    Status s = call();
    profiler_.AddCommunication(group_, profiler_.Now() - start, bytes, inter_host_bytes);
    return s;
  }
  size_t InterHost(int dst, size_t bytes) const {
    if (host_of_rank_.empty() || dst < 0 || dst >= size()) return 0;
    return host_of_rank_[static_cast<size_t>(dst)] == host_of_rank_[static_cast<size_t>(rank())] ? 0 : bytes;
  }
  std::unique_ptr<Communicator> inner_;
  std::string group_;
  StepProfiler& profiler_;
  std::vector<int> host_of_rank_;
};

}  // namespace

StepProfiler::StepProfiler(int rank, Sink sink, Clock clock) { Enable(rank, std::move(sink), std::move(clock)); }

void StepProfiler::Enable(int rank, Sink sink, Clock clock) {
  std::lock_guard<std::mutex> lock(mu_);
  rank_ = rank;
  sink_ = std::move(sink);
  clock_ = std::move(clock);
  in_step_ = false;
}

StepProfiler& StepProfiler::Process() {
  static StepProfiler profiler;
  return profiler;
}

void StepProfiler::ConfigureFromEnvironment(int rank) {
  if (!EnvIs("GPULAUNCH_PROFILE", "1")) return;
  int fd = DescriptorFromEnv("GPULAUNCH_METRICS_FD");
  if (fd < 0) {
    std::string dir = EnvOr("GPULAUNCH_PROFILE_DIR", "");
    if (dir.empty()) dir = ".";
    // A new file for this run, never one that is there already or a link
    // planted in its place (O_EXCL|O_NOFOLLOW), private to the user (it may
    // hold job output): when the plain name exists, one with this process's
    // pid in it, else profiling stays off.
    std::string path = dir + "/metrics-rank" + std::to_string(rank) + ".jsonl";
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {
      const std::string taken = path;
      path = dir + "/metrics-rank" + std::to_string(rank) + "-" + std::to_string(getpid()) + ".jsonl";
      fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
      if (fd >= 0) std::cerr << "gpurt: " << taken << " exists; this run's metrics go to " << path << "\n";
    }
    if (fd < 0) {
      std::cerr << "gpurt: GPULAUNCH_PROFILE=1 but " << path << " cannot be opened: " << std::strerror(errno)
                << "; set GPULAUNCH_PROFILE_DIR to a writable directory. Profiling is off.\n";
      return;
    }
  }
  Process().Enable(rank, LineWriter(fd), {});
}

double StepProfiler::Now() const { return clock_ ? clock_() : SteadySeconds(); }

void StepProfiler::BeginStep(int64_t step) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  in_step_ = true;
  step_ = step;
  groups_.clear();
  current_ = StepMetrics();
  started_ = Now();
}

void StepProfiler::EndStep() {
  if (!enabled()) return;
  StepMetrics m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!in_step_) return;
    in_step_ = false;
    m = std::move(current_);
    m.rank = rank_;
    m.step = step_;
    m.step_s = Now() - started_;
    for (auto& [name, traffic] : groups_) m.groups.push_back(traffic);
    m.compute_s = std::max(0.0, m.step_s - m.comm_s());
  }
  sink_(m);
}

void StepProfiler::AddCommunication(const std::string& group, double seconds, uint64_t bytes,
                                    uint64_t inter_host_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_step_) return;
  GroupTraffic& t = groups_[group];
  t.group = group;
  t.comm_s += seconds;
  t.bytes += bytes;
  t.calls += 1;
  t.inter_host_bytes += inter_host_bytes;
}

void StepProfiler::AddBubble(double seconds, double theory) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_step_) return;
  current_.bubble_s += seconds;
  current_.bubble_theory = theory;
}

ProfiledStep::ProfiledStep(int64_t step, StepProfiler& profiler) : profiler_(profiler) { profiler_.BeginStep(step); }
ProfiledStep::~ProfiledStep() { profiler_.EndStep(); }

std::unique_ptr<Communicator> ProfileCommunicator(std::unique_ptr<Communicator> inner, const std::string& group,
                                                  StepProfiler& profiler, std::vector<int> host_of_rank) {
  if (!profiler.enabled() || !inner) return inner;
  if (host_of_rank.size() != static_cast<size_t>(inner->size())) host_of_rank.clear();
  return std::make_unique<ProfiledCommunicator>(std::move(inner), group, profiler, std::move(host_of_rank));
}

}  // namespace gpulaunch::rt
