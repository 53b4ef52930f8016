#include "launcher/check/linkcheck/ucx_link.h"

#include <thread>

#include "launcher/base/control_auth.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstring>
#include <regex>
#include <sstream>

#include "common/strings.h"
#include "launcher/check/linkcheck/link_socket.h"
#include "launcher/check/linkcheck/ucx_peer.h"

namespace gpulaunch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr ucp_tag_t kPing = 1, kPong = 2, kData = 3, kAck = 4;

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

// The handshake of ucx_link.h, from either side; an error names who failed.
Status ProveServer(int fd, const ControlKey& key) {
  const std::string nonce = NewControlNonceHex();
  if (!SendBlob(fd, "linkcheck-v1 " + nonce)) return Unavailable("the client left before the handshake");
  GL_ASSIGN_OR_RETURN(std::string answer, RecvBlob(fd, "handshake"));
  const size_t space = answer.find(' ');
  const std::string client_nonce = answer.substr(0, space);
  if (space == std::string::npos || client_nonce.size() != kControlNonceHexChars ||
      !ControlProofsEqual(answer.substr(space + 1),
                          ControlProof(key, ControlSide::kClient, "linkcheck", 0, nonce, client_nonce))) {
    return FailedPrecondition("a client without this run's secret (" + std::string(kLinkcheckSecretEnv) + ") was refused");
  }
  if (!SendBlob(fd, ControlProof(key, ControlSide::kServer, "linkcheck", 0, nonce, client_nonce))) {
    return Unavailable("the client left during the handshake");
  }
  return Status::Ok();
}

Status ProveClient(int fd, const ControlKey& key) {
  GL_ASSIGN_OR_RETURN(std::string hello, RecvBlob(fd, "handshake"));
  if (hello.rfind("linkcheck-v1 ", 0) != 0) return FailedPrecondition("the server does not speak linkcheck-v1");
  const std::string nonce = hello.substr(13), client_nonce = NewControlNonceHex();
  if (!SendBlob(fd, client_nonce + " " + ControlProof(key, ControlSide::kClient, "linkcheck", 0, nonce, client_nonce))) {
    return Unavailable("the server left during the handshake");
  }
  const auto proof = RecvBlob(fd, "handshake");
  if (!proof.ok() || !ControlProofsEqual(*proof, ControlProof(key, ControlSide::kServer, "linkcheck", 0, nonce, client_nonce))) {
    return FailedPrecondition("the server refused this client, or could not prove it knows the run's secret (" +
                              std::string(kLinkcheckSecretEnv) + " must be the same on both hosts)");
  }
  return Status::Ok();
}

// A client's plan within the server's own limits: no larger message, no
// wider window, no more messages than it would send itself.
Status WithinLimits(const ServerPlan& plan, const LinkPlan& limits) {
  const uint64_t largest = limits.sizes.empty() ? 0 : *std::max_element(limits.sizes.begin(), limits.sizes.end());
  for (const auto& [size, count] : plan.sizes) {
    if (size > largest || plan.window > limits.window || plan.sizes.size() > limits.sizes.size() ||
        count > std::max<uint64_t>(8, limits.bytes_per_size / size) || plan.iterations > limits.iterations ||
        plan.warmup > limits.warmup) {
      return InvalidArgument("the client's plan (" + std::to_string(size) + "-byte messages, window " +
                             std::to_string(plan.window) + ") is larger than this server allows; start the server "
                             "with the client's --sizes, --window, --mib-per-size and --iterations");
    }
  }
  return Status::Ok();
}

// The server's side of one client's tests.
Status ServeOne(int fd, const UcxSettings& settings, const ProgressFn& progress, const ControlKey& key,
                const LinkPlan& limits) {
  GL_RETURN_IF_ERROR(ProveServer(fd, key));
  UcxPeer peer;
  GL_RETURN_IF_ERROR(peer.Init(settings));
  if (!SendBlob(fd, peer.Address())) return Unavailable("the client left before the address exchange");
  GL_ASSIGN_OR_RETURN(std::string remote, RecvBlob(fd, "UCX worker address"));
  GL_RETURN_IF_ERROR(peer.Connect(remote));
  GL_ASSIGN_OR_RETURN(std::string plan_text, RecvBlob(fd, "test plan"));
  GL_ASSIGN_OR_RETURN(ServerPlan plan, ParsePlan(plan_text));
  const Status allowed = WithinLimits(plan, limits);
  // The verdict goes back before any buffer exists: a refused client stops at once.
  if (!SendBlob(fd, allowed.ok() ? "plan ok" : "refused: " + allowed.message()) || !allowed.ok()) {
    return allowed.ok() ? Unavailable("the client left before the measurements") : allowed;
  }
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
                     const std::string& secret_hex, const LinkPlan& limits, const std::function<void(int)>& on_listening) {
  const auto key = DecodeControlSecret(secret_hex);
  if (!key.ok()) {
    return InvalidArgument(std::string(kLinkcheckSecretEnv) + " must hold the run's secret, 64 hex digits, the same for "
                           "--server and --client (gpulaunch linkcheck --hosts sets it itself)");
  }
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
    Status s = ServeOne(client.fd, settings, progress, *key, limits);
    if (!s.ok() && progress) progress("a client's test failed: " + s.message());
    if (once) return s;
  }
}

namespace {

// The latency half of the client's test: warm-up, then timed ping-pongs;
// the transports UCX chose are read once the endpoint is wired up.
Status MeasureLatency(UcxPeer& peer, const LinkPlan& plan, const ProgressFn& progress, LinkResult& result) {
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
  return Status::Ok();
}

// One message size of the bandwidth half: the unmeasured window the server
// expects first, acknowledged; then `count` messages, `plan.window` in
// flight, timed until the server acknowledges the last.
StatusOr<BandwidthSample> MeasureBandwidth(UcxPeer& peer, const LinkPlan& plan, uint64_t size, uint64_t count,
                                           const ProgressFn& progress) {
  uint64_t word = 0;
  std::vector<char> buffer(size, 'x');
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
  BandwidthSample b{size, size * count, std::chrono::duration<double>(Clock::now() - t0).count(),
                    size * static_cast<uint64_t>(plan.window)};
  if (progress) {
    char line[160];
    std::snprintf(line, sizeof line, "bandwidth: %llu x %llu bytes, %.2f Gbps (%.0f MiB/s)",
                  static_cast<unsigned long long>(count), static_cast<unsigned long long>(size), b.gbps(), b.mibs());
    progress(line);
  }
  return b;
}

}  // namespace

StatusOr<LinkResult> RunLinkClient(const std::string& host, int port, const UcxSettings& settings, const LinkPlan& plan,
                                   int connect_timeout_ms, const ProgressFn& progress, const std::string& secret_hex) {
  LinkResult result;
  result.to = host;
  const auto key = DecodeControlSecret(secret_hex);
  if (!key.ok()) {
    return InvalidArgument(std::string(kLinkcheckSecretEnv) + " must hold the run's secret, 64 hex digits, the same for "
                           "--server and --client (gpulaunch linkcheck --hosts sets it itself)");
  }
  std::string error;
  Fd control{ConnectWithRetry(host, port, connect_timeout_ms, error)};
  if (control.fd < 0) return Unavailable(error);
  GL_RETURN_IF_ERROR(ProveClient(control.fd, *key));
  UcxPeer peer;
  GL_RETURN_IF_ERROR(peer.Init(settings));
  GL_ASSIGN_OR_RETURN(std::string remote, RecvBlob(control.fd, "UCX worker address"));
  if (!SendBlob(control.fd, peer.Address())) return Unavailable("the server left during the address exchange");
  GL_RETURN_IF_ERROR(peer.Connect(remote));
  std::vector<uint64_t> counts;
  for (uint64_t size : plan.sizes) counts.push_back(std::max<uint64_t>(8, plan.bytes_per_size / size));
  if (!SendBlob(control.fd, PlanText(plan, counts))) return Unavailable("the server left before the test plan");
  GL_ASSIGN_OR_RETURN(std::string verdict, RecvBlob(control.fd, "answer to the test plan"));
  if (verdict != "plan ok") return FailedPrecondition("the server at " + host + " " + Excerpt(verdict, 300));
  GL_RETURN_IF_ERROR(MeasureLatency(peer, plan, progress, result));
  const std::chrono::system_clock::time_point start{std::chrono::milliseconds(plan.bandwidth_start_unix_ms)};
  auto ms_after_start = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now() - start).count();
  };
  if (plan.bandwidth_start_unix_ms > 0) {
    if (std::chrono::system_clock::now() < start) std::this_thread::sleep_until(start);
    result.started_late_ms = ms_after_start();
  }
  for (size_t i = 0; i < plan.sizes.size(); ++i) {
    GL_ASSIGN_OR_RETURN(BandwidthSample b, MeasureBandwidth(peer, plan, plan.sizes[i], counts[i], progress));
    result.bandwidth.push_back(b);
  }
  if (plan.bandwidth_start_unix_ms > 0) result.ended_ms = ms_after_start();
  SendBlob(control.fd, "bye");
  return result;
}

}  // namespace gpulaunch
