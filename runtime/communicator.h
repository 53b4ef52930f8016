// The Communicator seam: what the runtime's collectives need from a transport.
// Implementations (one file each): MpiCommunicator (real ranks), the
// in-process ThreadCommunicator (N ranks as threads, real semantics), and
// FaultInjectingCommunicator (wraps another and fails on purpose). One
// conformance suite (tests/runtime/communicator_conformance.*) runs against
// all of them.
//
// Contract: every call is blocking; messages between a pair of ranks with the
// same tag arrive in the order sent; collective calls (Barrier, Allgather,
// Broadcast, Split) must be made by every rank of the communicator in the
// same order. Errors come back as Status, never as exceptions or aborts.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch::rt {

// Where a communicator's members run, by rank of that communicator: a label
// of each one's host and of its host's leaf switch (equal labels: the same
// host, the same switch; the values mean nothing else). Empty: not known.
// The reductions climb this hierarchy when not told another
// (deterministic_reducer.h, ReduceConfig).
struct MemberPlacement {
  std::vector<int> host_of_rank;
  std::vector<int> switch_of_rank;  // empty: not known, even with hosts known
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Short description for messages, e.g. "mpi(world)" or "threads(4)".
  virtual std::string Name() const = 0;

  virtual Status Send(int dst, int tag, const void* data, size_t bytes) = 0;
  virtual Status Recv(int src, int tag, void* data, size_t bytes) = 0;
  // Send to dst and receive from src at once (deadlock-free pairwise exchange).
  virtual Status SendRecv(int dst, const void* send, size_t send_bytes, int src, void* recv, size_t recv_bytes,
                          int tag) = 0;

  // Starts a send that never waits for the receiver: `data` must stay valid
  // and unchanged until FlushSends() returns. Ordered with Send on the same
  // (peer, tag). Pipelines use it so that two neighbours sending to each
  // other cannot deadlock.
  virtual Status PostSend(int dst, int tag, const void* data, size_t bytes) = 0;
  // Waits until every posted send has completed (its buffer may be reused).
  virtual Status FlushSends() = 0;

  virtual Status Barrier() = 0;
  // Every rank contributes `bytes`; `out` receives size() * bytes in rank order.
  virtual Status Allgather(const void* in, size_t bytes, void* out) = 0;
  virtual Status Broadcast(void* data, size_t bytes, int root) = 0;

  // Ranks with the same color form a new communicator, ordered by (key, old
  // rank). A negative color returns nullptr (not a member of any group).
  // When this communicator knows where its members run, the new one knows
  // where its own do (one Allgather of an int over it, made by SplitImpl's
  // result).
  StatusOr<std::unique_ptr<Communicator>> Split(int color, int key);

  // Where the members run; empty unless set here or inherited through Split.
  const MemberPlacement& placement() const { return placement_; }
  // Each vector empty or of size() entries (else the placement stays
  // unknown and this says so); libgpurt's Runtime sets the world's.
  Status SetPlacement(MemberPlacement placement);

 protected:
  // The transport's split, as Split says; Split adds the placement.
  virtual StatusOr<std::unique_ptr<Communicator>> SplitImpl(int color, int key) = 0;

 private:
  MemberPlacement placement_;
};

}  // namespace gpulaunch::rt
