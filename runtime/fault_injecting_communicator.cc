#include "runtime/fault_injecting_communicator.h"

#include <cstring>
#include <vector>

namespace gpulaunch::rt {

FaultInjectingCommunicator::FaultInjectingCommunicator(std::unique_ptr<Communicator> inner, FaultPlan plan)
    : inner_(std::move(inner)), plan_(plan) {}

Status FaultInjectingCommunicator::Tick(const char* what) {
  if (plan_.lose_peer_after >= 0 && calls_ >= plan_.lose_peer_after) {
    return Unavailable(std::string("injected fault: peer lost before ") + what + " (call " + std::to_string(calls_) +
                       ")");
  }
  ++calls_;
  return Status::Ok();
}

StatusOr<const void*> FaultInjectingCommunicator::PrepareSend(const void* data, size_t bytes) {
  const int index = sends_++;
  if (index == plan_.fail_send) return Unavailable("injected fault: send " + std::to_string(index) + " failed");
  if (index == plan_.corrupt_send && bytes > 0) {
    corrupted_.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    corrupted_[0] ^= 0x10;
    return static_cast<const void*>(corrupted_.data());
  }
  return data;
}

Status FaultInjectingCommunicator::Send(int dst, int tag, const void* data, size_t bytes) {
  GL_RETURN_IF_ERROR(Tick("send"));
  GL_ASSIGN_OR_RETURN(const void* payload, PrepareSend(data, bytes));
  return inner_->Send(dst, tag, payload, bytes);
}

Status FaultInjectingCommunicator::PostSend(int dst, int tag, const void* data, size_t bytes) {
  GL_RETURN_IF_ERROR(Tick("send"));
  GL_ASSIGN_OR_RETURN(const void* payload, PrepareSend(data, bytes));  // a corrupted copy lives in corrupted_
  return inner_->PostSend(dst, tag, payload, bytes);
}

Status FaultInjectingCommunicator::FlushSends() {
  GL_RETURN_IF_ERROR(Tick("flush"));
  return inner_->FlushSends();
}

Status FaultInjectingCommunicator::Recv(int src, int tag, void* data, size_t bytes) {
  GL_RETURN_IF_ERROR(Tick("recv"));
  return inner_->Recv(src, tag, data, bytes);
}

Status FaultInjectingCommunicator::SendRecv(int dst, const void* send, size_t send_bytes, int src, void* recv,
                                            size_t recv_bytes, int tag) {
  GL_RETURN_IF_ERROR(Tick("sendrecv"));
  GL_ASSIGN_OR_RETURN(const void* payload, PrepareSend(send, send_bytes));
  return inner_->SendRecv(dst, payload, send_bytes, src, recv, recv_bytes, tag);
}

Status FaultInjectingCommunicator::Barrier() {
  GL_RETURN_IF_ERROR(Tick("barrier"));
  return inner_->Barrier();
}

Status FaultInjectingCommunicator::Allgather(const void* in, size_t bytes, void* out) {
  GL_RETURN_IF_ERROR(Tick("allgather"));
  GL_ASSIGN_OR_RETURN(const void* payload, PrepareSend(in, bytes));
  return inner_->Allgather(payload, bytes, out);
}

Status FaultInjectingCommunicator::Broadcast(void* data, size_t bytes, int root) {
  GL_RETURN_IF_ERROR(Tick("broadcast"));
  return inner_->Broadcast(data, bytes, root);
}

StatusOr<std::unique_ptr<Communicator>> FaultInjectingCommunicator::SplitImpl(int color, int key) {
  GL_RETURN_IF_ERROR(Tick("split"));
  GL_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> child, inner_->Split(color, key));
  if (!child) return child;
  return std::unique_ptr<Communicator>(std::make_unique<FaultInjectingCommunicator>(std::move(child), FaultPlan{}));
}

}  // namespace gpulaunch::rt
