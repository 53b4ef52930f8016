// Wraps a Communicator and fails on purpose: the Nth send fails, the Nth
// send's payload is corrupted (one bit flipped), or every call fails after a
// "peer lost" point. For testing that failures come back as Status and that
// the runtime fails closed.
#pragma once

#include <memory>
#include <vector>

#include "runtime/communicator.h"

namespace gpulaunch::rt {

struct FaultPlan {
  int fail_send = -1;      // 0-based index of the send (Send or SendRecv) that fails
  int corrupt_send = -1;   // 0-based index of the send whose first byte gets a bit flipped
  int lose_peer_after = -1;  // after this many calls of any kind, every call fails
};

class FaultInjectingCommunicator : public Communicator {
 public:
  FaultInjectingCommunicator(std::unique_ptr<Communicator> inner, FaultPlan plan);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string Name() const override { return "faulty(" + inner_->Name() + ")"; }
  Status Send(int dst, int tag, const void* data, size_t bytes) override;
  Status Recv(int src, int tag, void* data, size_t bytes) override;
  Status SendRecv(int dst, const void* send, size_t send_bytes, int src, void* recv, size_t recv_bytes,
                  int tag) override;
  Status PostSend(int dst, int tag, const void* data, size_t bytes) override;
  Status FlushSends() override;
  Status Barrier() override;
  Status Allgather(const void* in, size_t bytes, void* out) override;
  Status Broadcast(void* data, size_t bytes, int root) override;
  StatusOr<std::unique_ptr<Communicator>> SplitImpl(int color, int key) override;

  int sends() const { return sends_; }

 private:
  Status Tick(const char* what);
  // Applies the send-side faults; may hand back a corrupted copy to send.
  StatusOr<const void*> PrepareSend(const void* data, size_t bytes);

  std::unique_ptr<Communicator> inner_;
  FaultPlan plan_;
  int calls_ = 0;
  int sends_ = 0;
  std::vector<char> corrupted_;
};

}  // namespace gpulaunch::rt
