#include "runtime/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "runtime/heartbeat.h"

namespace gpulaunch::rt {
namespace {

constexpr size_t kPiece = size_t{1} << 30;

// Every MPI call goes through here: a completed one is progress.
Status Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) {
    ReportProgress();
    return Status::Ok();
  }
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return Internal(std::string(what) + " failed: " + std::string(text, len));
}

int Piece(size_t left) { return static_cast<int>(std::min(left, kPiece)); }

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned, std::string name)
    : comm_(comm), owned_(owned), name_(std::move(name)) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    for (MPI_Request& r : posted_) MPI_Request_free(&r);  // an error path left sends unflushed
  }
  if (owned_ && !finalized) MPI_Comm_free(&comm_);
}

Status MpiCommunicator::Send(int dst, int tag, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  do {
    const int n = Piece(bytes);
    GL_RETURN_IF_ERROR(Check(MPI_Send(p, n, MPI_BYTE, dst, tag, comm_), "MPI_Send"));
    p += n;
    bytes -= static_cast<size_t>(n);
  } while (bytes > 0);
  return Status::Ok();
}

Status MpiCommunicator::Recv(int src, int tag, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  do {
    const int n = Piece(bytes);
    MPI_Status st;
    GL_RETURN_IF_ERROR(Check(MPI_Recv(p, n, MPI_BYTE, src, tag, comm_, &st), "MPI_Recv"));
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (got != n) return Internal("MPI_Recv got " + std::to_string(got) + " bytes, expected " + std::to_string(n));
    p += n;
    bytes -= static_cast<size_t>(n);
  } while (bytes > 0);
  return Status::Ok();
}

Status MpiCommunicator::PostSend(int dst, int tag, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  do {
    const int n = Piece(bytes);
    MPI_Request request;
    GL_RETURN_IF_ERROR(Check(MPI_Isend(p, n, MPI_BYTE, dst, tag, comm_, &request), "MPI_Isend"));
    posted_.push_back(request);
    p += n;
    bytes -= static_cast<size_t>(n);
  } while (bytes > 0);
  return Status::Ok();
}

Status MpiCommunicator::FlushSends() {
  if (posted_.empty()) return Status::Ok();
  const int rc = MPI_Waitall(static_cast<int>(posted_.size()), posted_.data(), MPI_STATUSES_IGNORE);
  posted_.clear();
  return Check(rc, "MPI_Waitall");
}

Status MpiCommunicator::SendRecv(int dst, const void* send, size_t send_bytes, int src, void* recv,
                                 size_t recv_bytes, int tag) {
  const char* s = static_cast<const char*>(send);
  char* r = static_cast<char*>(recv);
  // Pieces pair up because both sides cut at the same boundaries.
  do {
    const int ns = Piece(send_bytes), nr = Piece(recv_bytes);
    GL_RETURN_IF_ERROR(Check(MPI_Sendrecv(s, ns, MPI_BYTE, dst, tag, r, nr, MPI_BYTE, src, tag, comm_,
                                          MPI_STATUS_IGNORE),
                             "MPI_Sendrecv"));
    s += ns;
    r += nr;
    send_bytes -= static_cast<size_t>(ns);
    recv_bytes -= static_cast<size_t>(nr);
  } while (send_bytes > 0 || recv_bytes > 0);
  return Status::Ok();
}

Status MpiCommunicator::Barrier() { return Check(MPI_Barrier(comm_), "MPI_Barrier"); }

Status MpiCommunicator::Allgather(const void* in, size_t bytes, void* out) {
  if (bytes > INT_MAX) return InvalidArgument("Allgather of more than 2 GiB per rank");
  return Check(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, comm_),
               "MPI_Allgather");
}

Status MpiCommunicator::Broadcast(void* data, size_t bytes, int root) {
  char* p = static_cast<char*>(data);
  do {
    const int n = Piece(bytes);
    GL_RETURN_IF_ERROR(Check(MPI_Bcast(p, n, MPI_BYTE, root, comm_), "MPI_Bcast"));
    p += n;
    bytes -= static_cast<size_t>(n);
  } while (bytes > 0);
  return Status::Ok();
}

StatusOr<std::unique_ptr<Communicator>> MpiCommunicator::SplitImpl(int color, int key) {
  MPI_Comm child = MPI_COMM_NULL;
  GL_RETURN_IF_ERROR(Check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &child), "MPI_Comm_split"));
  if (child == MPI_COMM_NULL) return std::unique_ptr<Communicator>();
  return std::unique_ptr<Communicator>(
      std::make_unique<MpiCommunicator>(child, true, name_ + "/" + std::to_string(color)));
}

}  // namespace gpulaunch::rt
