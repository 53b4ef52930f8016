// The measuring engine of `gpulaunch linkcheck`, on UCX's ucp tag API.
//
// A server listens on a TCP port; a client connects, and the two exchange
// their UCP worker addresses and the test plan over that socket, then each
// creates an endpoint to the other. Everything measured goes over UCX:
//   - latency: 8-byte ping-pong, `warmup` round trips unmeasured, then
//     `iterations` measured one by one at the client (median and p99);
//   - bandwidth: for each message size, one unmeasured window of messages
//     (registration, first touch), then `count` messages with `window`
//     sends in flight, timed until the server's 8-byte acknowledgement of
//     the last one arrives.
// The client reads which transports UCX chose for the endpoint
// (ucp_ep_print_info: the lanes' "transport/device"). `tls` and
// `net_devices` become UCX_TLS and UCX_NET_DEVICES (e.g. "tcp" forces the
// network path between namespaces of one machine, where UCX would use shared
// memory otherwise). Every wait on the peer has a deadline, so a peer that
// vanishes is an error, not a hang.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/check/linkcheck/link_result.h"

namespace gpulaunch {

struct UcxSettings {
  std::string tls;          // UCX_TLS, empty: UCX's choice
  std::string net_devices;  // UCX_NET_DEVICES, empty: all
};

struct LinkPlan {
  int warmup = 100;
  int iterations = 1000;
  std::vector<uint64_t> sizes = {1u << 20, 2u << 20, 4u << 20};
  uint64_t bytes_per_size = 256ull << 20;  // count = bytes_per_size / size (at least 8)
  int window = 8;
  // Client only: begin the bandwidth half at this wall-clock time (Unix
  // milliseconds; 0: at once), so that flows on several hosts run together
  // (linkcheck --concurrent). Hosts' clocks must agree to well under a
  // measurement; the result says how late the client began.
  int64_t bandwidth_start_unix_ms = 0;
};

using ProgressFn = std::function<void(const std::string&)>;

// Both ends prove they know the run's secret before anything else is sent
// (kLinkcheckSecretEnv, 64 hex digits, the same on both hosts; gpulaunch
// linkcheck --hosts makes one per run and passes it in the environment):
// the server sends a nonce, the client its nonce and proof, the server its
// proof (control_auth.h's HMAC). A peer without it is dropped before the
// server allocates anything, and the server never allocates more than its
// own `limits` allow (its --sizes and --window, or their defaults): a
// client's plan past them is refused.
inline constexpr const char* kLinkcheckSecretEnv = "GPULAUNCH_LINKCHECK_SECRET";

// Serves clients on `port` (0.0.0.0) one after another; with `once`, returns
// after the first. `on_listening` gets the port once it listens.
Status RunLinkServer(int port, const UcxSettings& settings, bool once, const ProgressFn& progress,
                     const std::string& secret_hex, const LinkPlan& limits,
                     const std::function<void(int)>& on_listening = {});

// Measures the link to the server at host:port, retrying the connection for
// up to connect_timeout_ms.
StatusOr<LinkResult> RunLinkClient(const std::string& host, int port, const UcxSettings& settings, const LinkPlan& plan,
                                   int connect_timeout_ms, const ProgressFn& progress, const std::string& secret_hex);

// The "transport/device" names of the lanes in ucp_ep_print_info's text.
std::vector<std::string> ParseUcxLanes(const std::string& ep_info);

}  // namespace gpulaunch
