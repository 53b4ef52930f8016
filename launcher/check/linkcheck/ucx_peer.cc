#include "launcher/check/linkcheck/ucx_peer.h"

#include <cstdio>
#include <cstdlib>

namespace gpulaunch {
namespace {

constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

Status UcxError(const std::string& what, ucs_status_t s) { return Unavailable(what + ": " + ucs_status_string(s)); }

}  // namespace

UcxPeer::~UcxPeer() {
  if (ep_) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(ep_, &p);
    if (UCS_PTR_IS_PTR(req)) {
      while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(worker_);
      ucp_request_free(req);
    }
  }
  if (address_) ucp_worker_release_address(worker_, address_);
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

Status UcxPeer::Init(const UcxSettings& s) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcxError("reading UCX's configuration", st);
  if (!s.tls.empty() && (st = ucp_config_modify(config, "TLS", s.tls.c_str())) != UCS_OK) {
    ucp_config_release(config);
    return InvalidArgument("UCX refuses --tls " + s.tls + ": " + ucs_status_string(st));
  }
  if (!s.net_devices.empty() && (st = ucp_config_modify(config, "NET_DEVICES", s.net_devices.c_str())) != UCS_OK) {
    ucp_config_release(config);
    return InvalidArgument("UCX refuses --nic " + s.net_devices + ": " + ucs_status_string(st));
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return UcxError("ucp_init", st);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  if ((st = ucp_worker_create(context_, &wp, &worker_)) != UCS_OK) return UcxError("ucp_worker_create", st);
  if ((st = ucp_worker_get_address(worker_, &address_, &address_length_)) != UCS_OK) {
    return UcxError("ucp_worker_get_address", st);
  }
  return Status::Ok();
}

std::string UcxPeer::Address() const {
  return std::string(reinterpret_cast<const char*>(address_), address_length_);
}

Status UcxPeer::Connect(const std::string& remote) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  p.address = reinterpret_cast<const ucp_address_t*>(remote.data());
  p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  const ucs_status_t st = ucp_ep_create(worker_, &p, &ep_);
  return st == UCS_OK ? Status::Ok() : UcxError("ucp_ep_create", st);
}

void* UcxPeer::Post(const void* data, size_t n, ucp_tag_t tag) {
  ucp_request_param_t p{};
  return ucp_tag_send_nbx(ep_, data, n, tag, &p);
}

void* UcxPeer::PostRecv(void* data, size_t n, ucp_tag_t tag) {
  ucp_request_param_t p{};
  return ucp_tag_recv_nbx(worker_, data, n, tag, kFullMask, &p);
}

Status UcxPeer::Wait(void* req, const char* what) {
  if (req == nullptr) return Status::Ok();
  if (UCS_PTR_IS_ERR(req)) return UcxError(std::string("UCX ") + what, UCS_PTR_STATUS(req));
  const auto deadline = std::chrono::steady_clock::now() + kPeerDeadline;
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
    if (ucp_worker_progress(worker_) == 0 && std::chrono::steady_clock::now() > deadline) {
      ucp_request_cancel(worker_, req);
      while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(worker_);
      ucp_request_free(req);
      return Unavailable(std::string("the peer stopped answering (a UCX ") + what + " waited " +
                         std::to_string(kPeerDeadline.count()) + " s)");
    }
  }
  ucp_request_free(req);
  return st == UCS_OK ? Status::Ok() : UcxError(std::string("UCX ") + what, st);
}

std::string UcxPeer::EndpointInfo() {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) return "";
  ucp_ep_print_info(ep_, f);
  std::fclose(f);
  std::string out(text ? text : "", size);
  std::free(text);
  return out;
}

}  // namespace gpulaunch
