// What the control channel's authentication costs each rank: `ranks`
// shims join one control server over its Unix socket (as a one-host job's
// do) and fetch their slot row. BM_ControlJoin/authenticated does the whole
// handshake (hello, auth, welcome: one more round trip and four HMACs) and a
// tagged slot exchange; BM_ControlJoin/greeting_only, the anchor, connects and
// reads the greeting alone. The suite reports the difference per rank
// (run-suite, section launch).
#include <benchmark/benchmark.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "launcher/base/control_server.h"
#include "launcher/shim/control_client.h"

namespace gpulaunch {
namespace {

ControlKey Key() { return *DecodeControlSecret(std::string(64, '3')); }

void BM_ControlJoin(benchmark::State& state, bool authenticate) {
  const int ranks = static_cast<int>(state.range(0));
  char dir[] = "/tmp/gl-control-bench-XXXXXX";
  if (!mkdtemp(dir)) {
    state.SkipWithError("no scratch folder");
    return;
  }
  const std::string path = std::string(dir) + "/control";
  std::vector<std::string> rows(static_cast<size_t>(ranks), "localhost/0/1/0/0/-/-1/-/0/-");
  for (auto _ : state) {
    state.PauseTiming();
    ControlServer server;
    ControlServerOptions o;
    o.unix_path = path;
    o.job_id = "gl-bench";
    o.secret = Key();
    o.expected_hash = "H";
    o.world = ranks;
    o.slot_rows = rows;
    if (!server.Start(o).ok()) {
      state.SkipWithError("the server did not start");
      break;
    }
    std::vector<ControlClient> clients(static_cast<size_t>(ranks));
    const char* error = nullptr;
    state.ResumeTiming();
    for (int r = 0; r < ranks && !error; ++r) {
      ControlClient& c = clients[static_cast<size_t>(r)];
      if (!c.Connect(server.address())) {
        error = "cannot connect";
      } else if (authenticate) {
        if (!c.Authenticate({"gl-bench", r, Key()}).ok() || !c.FetchSlotRow(r, "H", 10000).ok()) error = "the handshake failed";
      } else {
        char hello[64];
        pollfd p{c.fd(), POLLIN, 0};
        if (poll(&p, 1, 10000) != 1 || read(c.fd(), hello, sizeof hello) <= 0) error = "no greeting";
      }
    }
    state.PauseTiming();
    for (ControlClient& c : clients) c.Close();
    server.Stop();
    unlink(path.c_str());
    if (error) {
      state.SkipWithError(error);
      break;
    }
    state.ResumeTiming();
  }
  rmdir(dir);
  state.counters["ranks"] = ranks;
}

BENCHMARK_CAPTURE(BM_ControlJoin, authenticated, true)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ControlJoin, greeting_only, false)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gpulaunch

BENCHMARK_MAIN();
