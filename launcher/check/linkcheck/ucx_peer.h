// One side of a linkcheck measurement on UCX's ucp tag API: a context, a
// worker and (once connected) an endpoint to the other side, released in
// that order. Every wait on the peer has a deadline (kPeerDeadline), so a
// peer that vanishes is an error, not a hang.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "common/status.h"
#include "launcher/check/linkcheck/ucx_link.h"

namespace gpulaunch {

inline constexpr auto kPeerDeadline = std::chrono::seconds(30);

class UcxPeer {
 public:
  UcxPeer() = default;
  UcxPeer(const UcxPeer&) = delete;
  UcxPeer& operator=(const UcxPeer&) = delete;
  ~UcxPeer();

  // UCX_TLS and UCX_NET_DEVICES from `s`, the tag feature, one worker.
  Status Init(const UcxSettings& s);
  // This worker's address, to send to the peer.
  std::string Address() const;
  Status Connect(const std::string& remote_address);

  // Blocking send and receive (up to the deadline), and their non-blocking
  // halves: a request to Wait() on (nullptr: already complete).
  Status Send(const void* data, size_t n, ucp_tag_t tag) { return Wait(Post(data, n, tag), "send"); }
  void* Post(const void* data, size_t n, ucp_tag_t tag);
  Status Recv(void* data, size_t n, ucp_tag_t tag) { return Wait(PostRecv(data, n, tag), "receive"); }
  void* PostRecv(void* data, size_t n, ucp_tag_t tag);
  Status Wait(void* request, const char* what);

  // ucp_ep_print_info's text for the endpoint (its lanes and transports).
  std::string EndpointInfo();

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_address_t* address_ = nullptr;
  size_t address_length_ = 0;
  ucp_ep_h ep_ = nullptr;
};

}  // namespace gpulaunch
