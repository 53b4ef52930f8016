// Communicator over an MPI communicator. Errors are returned (the
// communicator is set to MPI_ERRORS_RETURN), messages larger than INT_MAX
// bytes are sent in pieces.
#pragma once

#include <mpi.h>

#include <vector>

#include "runtime/communicator.h"

namespace gpulaunch::rt {

class MpiCommunicator : public Communicator {
 public:
  // Wraps `comm`; frees it on destruction only when `owned`.
  MpiCommunicator(MPI_Comm comm, bool owned, std::string name = "world");
  ~MpiCommunicator() override;

  MPI_Comm comm() const { return comm_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string Name() const override { return "mpi(" + name_ + ")"; }
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

 private:
  MPI_Comm comm_;
  bool owned_;
  std::string name_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<MPI_Request> posted_;  // PostSend requests not yet flushed
};

}  // namespace gpulaunch::rt
