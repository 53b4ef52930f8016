// libFuzzer: the control server's handshake and message state machine
// (launcher/base/control_server.h), over a real Unix socket. The first byte
// chooses the peer: a stranger (even: raw bytes, no handshake) or rank
// (byte/2 % world) that completes the handshake and then sends each further
// input line with a valid tag, so the fuzzer reaches the message handling.
// Invariants: nothing a stranger sends is recorded; every record is of a
// rank in [0, world) and holds no raw control byte; without --profile no
// metric is kept; no stack dump is kept that was not asked for.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "launcher/base/control_server.h"

namespace {

using namespace gpulaunch;

constexpr int kWorld = 3;
const std::string kJob = "gl-fuzz";

ControlKey Key() { return *DecodeControlSecret(std::string(64, '7')); }

int Connect(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{30, 0};  // a hang detector: a loaded machine may take seconds to answer
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (line.size() < 512 && read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

bool HasRawControl(const std::string& s, bool newlines_ok) {
  for (unsigned char c : s)
    if ((c < 0x20 && !(newlines_ok && (c == '\n' || c == '\t'))) || c == 0x7f) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string dir = [] {
    char t[] = "/tmp/gl-fuzz-control-XXXXXX";
    std::string made = mkdtemp(t);
    // libFuzzer ends with exit(): the folder goes with the process.
    static std::string to_remove;
    to_remove = made;
    std::atexit([] {
      unlink((to_remove + "/control").c_str());
      rmdir(to_remove.c_str());
    });
    return made;
  }();
  const std::string path = dir + "/control";
  unlink(path.c_str());
  ControlServer server;
  ControlServerOptions o;
  o.unix_path = path;
  o.job_id = kJob;
  o.secret = Key();
  o.expected_hash = "H";
  o.world = kWorld;
  o.slot_rows = {"h/0/1/0/0/-/-1/-/0/-", "h/0/1/0/0/-/-1/-/0/-", "h/0/1/0/0/-/-1/-/0/-"};
  // Long enough that a loaded machine still authenticates the fuzzer's rank
  // (200 ms closed it before its welcome once, under a parallel build);
  // Stop() ends a stranger's connection anyway.
  o.auth_timeout_ms = 20000;
  if (!server.Start(o).ok()) __builtin_trap();
  const int fd = Connect(path);
  if (fd < 0) __builtin_trap();
  const bool stranger = data[0] % 2 == 0;
  const int rank = (data[0] / 2) % kWorld;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string hello = ReadLine(fd);
  if (hello.rfind("hello v2 ", 0) != 0) __builtin_trap();
  if (stranger) {
    [[maybe_unused]] ssize_t n = send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
  } else {
    const std::string server_nonce = hello.substr(9), client_nonce(32, '5');
    const std::string auth = "auth " + std::to_string(rank) + " " + client_nonce + " " +
                             ControlProof(Key(), ControlSide::kClient, kJob, rank, server_nonce, client_nonce) + "\n";
    [[maybe_unused]] ssize_t n = send(fd, auth.data(), auth.size(), MSG_NOSIGNAL);
    if (ReadLine(fd).rfind("welcome ", 0) != 0) __builtin_trap();
    ControlSession session(Key(), ControlSide::kClient, kJob, rank, server_nonce, client_nonce);
    size_t at = 0;
    while (at < rest.size()) {
      const size_t nl = rest.find('\n', at);
      const std::string line = rest.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
      at = nl == std::string::npos ? rest.size() : nl + 1;
      const std::string sealed = session.Seal(line);
      if (send(fd, sealed.data(), sealed.size(), MSG_NOSIGNAL) < 0) break;
    }
  }
  const auto records = server.Records();
  if (stranger && !records.empty()) __builtin_trap();
  for (const auto& [r, rec] : records) {
    if (r < 0 || r >= kWorld || (!stranger && r != rank)) __builtin_trap();
    if (HasRawControl(rec.refusal, false) || HasRawControl(rec.host, false)) __builtin_trap();
    for (const std::string& t : rec.stderr_tail)
      if (HasRawControl(t, false)) __builtin_trap();
    if (!rec.stacks.empty()) __builtin_trap();  // never asked for
  }
  if (!server.Metrics().empty()) __builtin_trap();  // no --profile
  close(fd);
  server.Stop();
  return 0;
}
