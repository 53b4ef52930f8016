// Who may speak on a control connection (control_protocol.h), and how every
// line proves it came from that party. The cryptography is libsodium's
// (HMAC-SHA-256, its CSPRNG, constant-time comparison); nothing here is a
// primitive of our own.
//
// The job secret: 32 random bytes that gpulaunch makes for each launch. It
// travels hex-encoded in GPULAUNCH_CONTROL_SECRET, in the environment the
// engine forwards to the ranks (mpirun `-x NAME`, srun's propagated
// environment: never argv), and each rank's shim removes it before the job's
// own process starts. It is in no file, log, plan or summary.
//
// The handshake, one round trip before any message counts:
//   gpulaunch -> shim   hello v2 <server nonce>
//   shim -> gpulaunch   auth <rank> <client nonce> <client proof>
//   gpulaunch -> shim   welcome <server proof>
// Nonces are 16 random bytes each (hex); the proofs are
//   HMAC(secret, "gpulaunch-control-v2 client|" job | rank | server nonce | client nonce)
// and the same with "server", compared in constant time. A replayed `auth`
// fails (a fresh server nonce on every connection), as does one for another
// job or another rank; a server without the secret cannot answer `welcome`.
//
// After the handshake every line, both ways, ends in " ~" and a 128-bit tag:
// HMAC(session key, direction | sequence number | line [| payload]) with the
// session key HMAC(secret, "session|" job | rank | both nonces). A line that
// is altered, replayed, reordered, dropped before a later one, or sent on
// another connection fails its tag, and the connection is closed. Traffic is
// not encrypted (docs/security.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpulaunch {

inline constexpr const char* kControlSecretEnv = "GPULAUNCH_CONTROL_SECRET";
inline constexpr const char* kControlProtocolVersion = "v2";
inline constexpr size_t kControlKeyBytes = 32;
inline constexpr size_t kControlNonceHexChars = 32;
inline constexpr size_t kControlProofHexChars = 64;
// " ~" + 32 hex characters, before the newline.
inline constexpr size_t kControlTagChars = 2 + 32;

using ControlKey = std::array<unsigned char, kControlKeyBytes>;

// 32 fresh random bytes, hex-encoded: a new job's secret.
std::string NewControlSecretHex();
// The key from its hex form; an error that never repeats the text.
StatusOr<ControlKey> DecodeControlSecret(std::string_view hex);
// 16 fresh random bytes, hex-encoded.
std::string NewControlNonceHex();

enum class ControlSide { kClient, kServer };

// The proof that `side` knows the secret, for this job, rank and nonce pair.
std::string ControlProof(const ControlKey& secret, ControlSide side, std::string_view job_id, int rank,
                         std::string_view server_nonce, std::string_view client_nonce);
// Constant-time comparison of two proofs (false when a length differs).
bool ControlProofsEqual(std::string_view a, std::string_view b);

// One authenticated connection's tags. `self` is the side that holds it.
// Lines are given and returned without their newline.
class ControlSession {
 public:
  ControlSession() = default;
  ControlSession(const ControlKey& secret, ControlSide self, std::string_view job_id, int rank,
                 std::string_view server_nonce, std::string_view client_nonce);

  // `line` + " ~TAG" + "\n"; the tag covers `payload` (raw bytes sent right
  // after the line) too.
  std::string Seal(std::string_view line, std::string_view payload = "");
  // The same without allocating, for a vfork child (job_start.h): writes
  // line, tag and newline to `out` (room for n + kControlTagChars + 1) with
  // sequence number `seq` taken by ReserveSend(), and returns the length.
  size_t SealInto(uint64_t seq, const char* line, size_t n, char* out) const;
  uint64_t ReserveSend() { return send_seq_++; }

  // The line without its tag when the tag is this peer's next one (the
  // sequence number advances), else nullopt: the connection must be closed.
  std::optional<std::string_view> Open(std::string_view sealed, std::string_view payload = "");
  // The line with its tag cut off, unverified: only to learn how many payload
  // bytes a header announces before Open can check it with them.
  static std::string_view Unsealed(std::string_view sealed);

 private:
  void Tag(bool from_client, uint64_t seq, std::string_view line, std::string_view payload, char* hex) const;
  ControlKey key_{};
  ControlSide self_ = ControlSide::kClient;
  uint64_t send_seq_ = 0, recv_seq_ = 0;
};

}  // namespace gpulaunch
