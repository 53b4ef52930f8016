// N ranks as threads of one process, with the same semantics as MPI ranks
// (blocking point-to-point, ordered per (src, dst, tag), collectives in call
// order, Split). For tests, for single-process runs of parallel code, and as
// a conformance reference.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "runtime/communicator.h"

namespace gpulaunch::rt {

class ThreadWorld;

class ThreadCommunicator : public Communicator {
 public:
  // One communicator per rank of a new world of `n` ranks.
  static std::vector<std::unique_ptr<Communicator>> CreateWorld(int n);

  ThreadCommunicator(std::shared_ptr<ThreadWorld> world, int rank);
  ~ThreadCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override;
  std::string Name() const override;
  Status Send(int dst, int tag, const void* data, size_t bytes) override;
  Status Recv(int src, int tag, void* data, size_t bytes) override;
  Status SendRecv(int dst, const void* send, size_t send_bytes, int src, void* recv, size_t recv_bytes,
                  int tag) override;
  Status PostSend(int dst, int tag, const void* data, size_t bytes) override { return Send(dst, tag, data, bytes); }
  Status FlushSends() override { return Status::Ok(); }  // sends are copied at once
  Status Barrier() override;
  Status Allgather(const void* in, size_t bytes, void* out) override;
  Status Broadcast(void* data, size_t bytes, int root) override;
  StatusOr<std::unique_ptr<Communicator>> SplitImpl(int color, int key) override;

 private:
  std::shared_ptr<ThreadWorld> world_;
  int rank_;
  int splits_ = 0;  // collective call counter: names child worlds consistently
};

// Runs fn(comm) on `n` threads, one per rank, and waits for all of them.
void RunOnThreads(int n, const std::function<void(Communicator&)>& fn);

}  // namespace gpulaunch::rt
