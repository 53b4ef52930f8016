#include "launcher/linkcheck/ucx_link.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "common/strings.h"

namespace gpulaunch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr ucp_tag_t kPing = 1, kPong = 2, kData = 3, kAck = 4;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
constexpr auto kPeerDeadline = std::chrono::seconds(30);

// ---- the control socket ----

bool SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool RecvAll(int fd, void* data, size_t n, int timeout_ms) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0) return false;
    const ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool SendBlob(int fd, const std::string& blob) {
  const uint32_t n = static_cast<uint32_t>(blob.size());
  return SendAll(fd, &n, sizeof n) && SendAll(fd, blob.data(), blob.size());
}

StatusOr<std::string> RecvBlob(int fd, const std::string& what) {
  uint32_t n = 0;
  if (!RecvAll(fd, &n, sizeof n, 30000) || n > (1u << 20)) return Unavailable("the peer did not send its " + what);
  std::string blob(n, '\0');
  if (!RecvAll(fd, blob.data(), n, 30000)) return Unavailable("the peer did not send its " + what);
  return blob;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// ---- UCX ----

Status UcxError(const std::string& what, ucs_status_t s) {
  return Unavailable(what + ": " + ucs_status_string(s));
}

// One UCP context, worker and (once connected) endpoint; released in order.
class UcxPeer {
 public:
  ~UcxPeer() {
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

  Status Init(const UcxSettings& s) {
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

  std::string Address() const { return std::string(reinterpret_cast<const char*>(address_), address_length_); }

  Status Connect(const std::string& remote) {
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    p.address = reinterpret_cast<const ucp_address_t*>(remote.data());
    p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    const ucs_status_t st = ucp_ep_create(worker_, &p, &ep_);
    return st == UCS_OK ? Status::Ok() : UcxError("ucp_ep_create", st);
  }

  Status Send(const void* data, size_t n, ucp_tag_t tag) { return Wait(Post(data, n, tag), "send"); }
  void* Post(const void* data, size_t n, ucp_tag_t tag) {
    ucp_request_param_t p{};
    return ucp_tag_send_nbx(ep_, data, n, tag, &p);
  }
  Status Recv(void* data, size_t n, ucp_tag_t tag) { return Wait(PostRecv(data, n, tag), "receive"); }
  void* PostRecv(void* data, size_t n, ucp_tag_t tag) {
    ucp_request_param_t p{};
    return ucp_tag_recv_nbx(worker_, data, n, tag, kFullMask, &p);
  }

  // Completes a request (nullptr: already complete), or fails after the deadline.
  Status Wait(void* req, const char* what) {
    if (req == nullptr) return Status::Ok();
    if (UCS_PTR_IS_ERR(req)) return UcxError(std::string("UCX ") + what, UCS_PTR_STATUS(req));
    const auto deadline = Clock::now() + kPeerDeadline;
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
      if (ucp_worker_progress(worker_) == 0 && Clock::now() > deadline) {
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

  std::string EndpointInfo() {
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

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_address_t* address_ = nullptr;
  size_t address_length_ = 0;
  ucp_ep_h ep_ = nullptr;
};

// "W I window size:count,size:count"
std::string PlanText(const LinkPlan& p, const std::vector<uint64_t>& counts) {
  std::string s = std::to_string(p.warmup) + " " + std::to_string(p.iterations) + " " + std::to_string(p.window);
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    s += (i ? "," : " ") + std::to_string(p.sizes[i]) + ":" + std::to_string(counts[i]);
  }
  return s;
}

struct ServerPlan {
  int warmup = 0, iterations = 0, window = 1;
  std::vector<std::pair<uint64_t, uint64_t>> sizes;  // size, count
};

StatusOr<ServerPlan> ParsePlan(const std::string& text) {
  ServerPlan p;
  std::istringstream in(text);
  std::string sizes;
  if (!(in >> p.warmup >> p.iterations >> p.window) || p.warmup < 0 || p.iterations < 1 || p.window < 1 ||
      p.window > 1024) {
    return InvalidArgument("a malformed test plan from the client: '" + text + "'");
  }
  in >> sizes;
  for (const std::string& entry : Split(sizes, ',')) {
    const size_t colon = entry.find(':');
    const auto size = colon == std::string::npos ? std::nullopt : ParseInt(entry.substr(0, colon));
    const auto count = colon == std::string::npos ? std::nullopt : ParseInt(entry.substr(colon + 1));
    if (!size || !count || *size < 1 || *size > (1ll << 30) || *count < 1 || *count > (1 << 24)) {
      return InvalidArgument("a malformed size in the client's test plan: '" + entry + "'");
    }
    p.sizes.emplace_back(static_cast<uint64_t>(*size), static_cast<uint64_t>(*count));
  }
  return p;
}

// The server's side of one client's tests.
Status ServeOne(int fd, const UcxSettings& settings, const ProgressFn& progress) {
  UcxPeer peer;
  GL_RETURN_IF_ERROR(peer.Init(settings));
  if (!SendBlob(fd, peer.Address())) return Unavailable("the client left before the address exchange");
  GL_ASSIGN_OR_RETURN(std::string remote, RecvBlob(fd, "UCX worker address"));
  GL_RETURN_IF_ERROR(peer.Connect(remote));
  GL_ASSIGN_OR_RETURN(std::string plan_text, RecvBlob(fd, "test plan"));
  GL_ASSIGN_OR_RETURN(ServerPlan plan, ParsePlan(plan_text));
  uint64_t word = 0;
  for (int i = 0; i < plan.warmup + plan.iterations; ++i) {
    GL_RETURN_IF_ERROR(peer.Recv(&word, sizeof word, kPing));
    GL_RETURN_IF_ERROR(peer.Send(&word, sizeof word, kPong));
  }
  for (const auto& [size, count] : plan.sizes) {
    std::vector<std::vector<char>> buffers(static_cast<size_t>(plan.window), std::vector<char>(size));
    // One unmeasured window first (memory registration, first touch), then
    // the measured messages.
    for (uint64_t done = 0; done < count + static_cast<uint64_t>(plan.window);) {
      std::vector<void*> reqs;
      for (int w = 0; w < plan.window && done < count + static_cast<uint64_t>(plan.window); ++w, ++done) {
        reqs.push_back(peer.PostRecv(buffers[static_cast<size_t>(w)].data(), size, kData));
      }
      for (void* r : reqs) GL_RETURN_IF_ERROR(peer.Wait(r, "receive"));
      if (done == static_cast<uint64_t>(plan.window)) GL_RETURN_IF_ERROR(peer.Send(&word, sizeof word, kAck));
    }
    GL_RETURN_IF_ERROR(peer.Send(&word, sizeof word, kAck));
  }
  // The client says when it is done with the endpoints.
  GL_ASSIGN_OR_RETURN(std::string bye, RecvBlob(fd, "goodbye"));
  if (progress) progress("served a client: " + std::to_string(plan.iterations) + " round trips, " +
                         std::to_string(plan.sizes.size()) + " message sizes");
  return Status::Ok();
}

int ConnectWithRetry(const std::string& host, int port, int timeout_ms, std::string& error) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
    if (rc != 0) {
      error = "cannot resolve " + host + ": " + gai_strerror(rc);
      return -1;
    }
    int fd = socket(list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool connected = fd >= 0 && connect(fd, list->ai_addr, list->ai_addrlen) == 0;
    freeaddrinfo(list);
    if (connected) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    error = "cannot connect to " + host + ":" + std::to_string(port) + ": " + std::strerror(errno) +
            " (is 'gpulaunch linkcheck --server' running there?)";
    if (fd >= 0) close(fd);
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

std::vector<std::string> ParseUcxLanes(const std::string& info) {
  // "#  lane[0]:  8:tcp/eth0.0 md[4]  -> ..." or "lane[1]: 1:posix/memory.0 md[1] ..."
  static const std::regex lane(R"(lane\[\d+\]:\s+\d+:([A-Za-z0-9_]+)/([^\s.]+(?:\.[^\s.]+)*?)(?:\.\d+)?\s)");
  std::vector<std::string> out;
  std::istringstream in(info);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, lane)) continue;
    const std::string name = m[1].str() + "/" + m[2].str();
    if (m[1].str() == "self") continue;  // loop-back lane to this worker itself
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

Status RunLinkServer(int port, const UcxSettings& settings, bool once, const ProgressFn& progress,
                     const std::function<void(int)>& on_listening) {
  Fd listener{socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  const int one = 1;
  setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  if (listener.fd < 0 || bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener.fd, 4) != 0 || getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Unavailable("cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno) +
                       "; choose another with --port");
  }
  if (on_listening) on_listening(ntohs(addr.sin_port));
  for (;;) {
    Fd client{accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC)};
    if (client.fd < 0) {
      if (errno == EINTR) continue;
      return Unavailable(std::string("accept failed: ") + std::strerror(errno));
    }
    Status s = ServeOne(client.fd, settings, progress);
    if (!s.ok() && progress) progress("a client's test failed: " + s.message());
    if (once) return s;
  }
}

StatusOr<LinkResult> RunLinkClient(const std::string& host, int port, const UcxSettings& settings, const LinkPlan& plan,
                                   int connect_timeout_ms, const ProgressFn& progress) {
  LinkResult result;
  result.to = host;
  std::string error;
  Fd control{ConnectWithRetry(host, port, connect_timeout_ms, error)};
  if (control.fd < 0) return Unavailable(error);
  UcxPeer peer;
  GL_RETURN_IF_ERROR(peer.Init(settings));
  GL_ASSIGN_OR_RETURN(std::string remote, RecvBlob(control.fd, "UCX worker address"));
  if (!SendBlob(control.fd, peer.Address())) return Unavailable("the server left during the address exchange");
  GL_RETURN_IF_ERROR(peer.Connect(remote));
  std::vector<uint64_t> counts;
  for (uint64_t size : plan.sizes) counts.push_back(std::max<uint64_t>(8, plan.bytes_per_size / size));
  if (!SendBlob(control.fd, PlanText(plan, counts))) return Unavailable("the server left before the test plan");

  uint64_t word = 0;
  std::vector<double> rtt_us;
  for (int i = 0; i < plan.warmup + plan.iterations; ++i) {
    const auto t0 = Clock::now();
    GL_RETURN_IF_ERROR(peer.Send(&word, sizeof word, kPing));
    GL_RETURN_IF_ERROR(peer.Recv(&word, sizeof word, kPong));
    if (i >= plan.warmup) rtt_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (i + 1 == plan.warmup) result.transports = ParseUcxLanes(peer.EndpointInfo());  // after wire-up
  }
  if (result.transports.empty()) result.transports = ParseUcxLanes(peer.EndpointInfo());
  result.iterations = plan.iterations;
  result.rtt_median_us = Quantile(rtt_us, 0.5);
  result.rtt_p99_us = Quantile(rtt_us, 0.99);
  if (progress) {
    char line[160];
    std::snprintf(line, sizeof line, "latency: %d round trips, median %.1f us, p99 %.1f us", plan.iterations,
                  result.rtt_median_us, result.rtt_p99_us);
    progress(line);
  }
  for (size_t i = 0; i < plan.sizes.size(); ++i) {
    const uint64_t size = plan.sizes[i], count = counts[i];
    std::vector<char> buffer(size, 'x');
    // The unmeasured window the server expects first, acknowledged.
    std::vector<void*> warm;
    for (int w = 0; w < plan.window; ++w) warm.push_back(peer.Post(buffer.data(), size, kData));
    for (void* r : warm) GL_RETURN_IF_ERROR(peer.Wait(r, "send"));
    GL_RETURN_IF_ERROR(peer.Recv(&word, sizeof word, kAck));
    const auto t0 = Clock::now();
    for (uint64_t done = 0; done < count;) {
      std::vector<void*> reqs;
      for (int w = 0; w < plan.window && done < count; ++w, ++done) reqs.push_back(peer.Post(buffer.data(), size, kData));
      for (void* r : reqs) GL_RETURN_IF_ERROR(peer.Wait(r, "send"));
    }
    GL_RETURN_IF_ERROR(peer.Recv(&word, sizeof word, kAck));
    BandwidthSample b{size, size * count, std::chrono::duration<double>(Clock::now() - t0).count()};
    result.bandwidth.push_back(b);
    if (progress) {
      char line[160];
      std::snprintf(line, sizeof line, "bandwidth: %llu x %llu bytes, %.2f Gbps (%.0f MiB/s)",
                    static_cast<unsigned long long>(count), static_cast<unsigned long long>(size), b.gbps(), b.mibs());
      progress(line);
    }
  }
  SendBlob(control.fd, "bye");
  return result;
}

}  // namespace gpulaunch
