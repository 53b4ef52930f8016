#include "launcher/base/control_auth.h"

#include <sodium.h>

#include <cstring>

namespace gpulaunch {
namespace {

constexpr size_t kTagBytes = 16;  // HMAC-SHA-256 cut to 128 bits

void InitSodium() {
  // Idempotent and thread-safe; fails only without a usable random source.
  if (sodium_init() < 0) std::abort();
}

std::string RandomHex(size_t bytes) {
  InitSodium();
  unsigned char buf[64];
  randombytes_buf(buf, bytes);
  std::string hex(bytes * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), buf, bytes);
  hex.pop_back();
  sodium_memzero(buf, sizeof buf);
  return hex;
}

void HexOf(const unsigned char* bytes, size_t n, char* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 15];
  }
}

// HMAC(key, label | job | rank | server nonce | client nonce), fields joined by '|'.
void Derive(const ControlKey& key, std::string_view label, std::string_view job_id, int rank,
            std::string_view server_nonce, std::string_view client_nonce, unsigned char out[32]) {
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key.data(), key.size());
  const std::string rank_text = std::to_string(rank);
  for (std::string_view part : {label, job_id, std::string_view(rank_text), server_nonce, client_nonce}) {
    crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(part.data()), part.size());
    crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>("|"), 1);
  }
  crypto_auth_hmacsha256_final(&st, out);
  sodium_memzero(&st, sizeof st);
}

}  // namespace

std::string NewControlSecretHex() { return RandomHex(kControlKeyBytes); }

std::string NewControlNonceHex() { return RandomHex(kControlNonceHexChars / 2); }

StatusOr<ControlKey> DecodeControlSecret(std::string_view hex) {
  ControlKey key{};
  size_t len = 0;
  if (hex.size() != 2 * kControlKeyBytes ||
      sodium_hex2bin(key.data(), key.size(), hex.data(), hex.size(), nullptr, &len, nullptr) != 0 ||
      len != key.size()) {
    return InvalidArgument(std::string(kControlSecretEnv) + " is not " + std::to_string(2 * kControlKeyBytes) +
                           " hex digits; start jobs with gpulaunch");
  }
  return key;
}

std::string ControlProof(const ControlKey& secret, ControlSide side, std::string_view job_id, int rank,
                         std::string_view server_nonce, std::string_view client_nonce) {
  unsigned char mac[32];
  Derive(secret, side == ControlSide::kClient ? "gpulaunch-control-v2 client" : "gpulaunch-control-v2 server", job_id,
         rank, server_nonce, client_nonce, mac);
  std::string hex(64, '0');
  HexOf(mac, sizeof mac, hex.data());
  return hex;
}

bool ControlProofsEqual(std::string_view a, std::string_view b) {
  return a.size() == kControlProofHexChars && b.size() == kControlProofHexChars &&
         sodium_memcmp(a.data(), b.data(), kControlProofHexChars) == 0;
}

ControlSession::ControlSession(const ControlKey& secret, ControlSide self, std::string_view job_id, int rank,
                               std::string_view server_nonce, std::string_view client_nonce)
    : self_(self) {
  Derive(secret, "session", job_id, rank, server_nonce, client_nonce, key_.data());
}

void ControlSession::Tag(bool from_client, uint64_t seq, std::string_view line, std::string_view payload,
                         char* hex) const {
  crypto_auth_hmacsha256_state st;
  unsigned char header[9];
  header[0] = from_client ? 'c' : 's';
  for (int i = 0; i < 8; ++i) header[1 + i] = static_cast<unsigned char>(seq >> (8 * i));
  crypto_auth_hmacsha256_init(&st, key_.data(), key_.size());
  crypto_auth_hmacsha256_update(&st, header, sizeof header);
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(line.data()), line.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>("\n"), 1);
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(payload.data()), payload.size());
  unsigned char mac[32];
  crypto_auth_hmacsha256_final(&st, mac);
  HexOf(mac, kTagBytes, hex);
}

std::string ControlSession::Seal(std::string_view line, std::string_view payload) {
  std::string out(line.size() + kControlTagChars + 1, '\0');
  out.resize(SealInto(ReserveSend(), line.data(), line.size(), out.data()));
  if (!payload.empty()) {  // the tag covers the payload too: write it again with it
    char hex[2 * kTagBytes];
    Tag(self_ == ControlSide::kClient, send_seq_ - 1, line, payload, hex);
    std::memcpy(out.data() + line.size() + 2, hex, sizeof hex);
  }
  return out;
}

size_t ControlSession::SealInto(uint64_t seq, const char* line, size_t n, char* out) const {
  if (out != line) std::memmove(out, line, n);
  out[n] = ' ';
  out[n + 1] = '~';
  Tag(self_ == ControlSide::kClient, seq, std::string_view(out, n), "", out + n + 2);
  out[n + kControlTagChars] = '\n';
  return n + kControlTagChars + 1;
}

std::string_view ControlSession::Unsealed(std::string_view sealed) {
  if (sealed.size() < kControlTagChars || sealed.substr(sealed.size() - kControlTagChars, 2) != " ~") return {};
  return sealed.substr(0, sealed.size() - kControlTagChars);
}

std::optional<std::string_view> ControlSession::Open(std::string_view sealed, std::string_view payload) {
  const std::string_view line = Unsealed(sealed);
  if (line.data() == nullptr) return std::nullopt;
  char want[2 * kTagBytes];
  Tag(self_ != ControlSide::kClient, recv_seq_, line, payload, want);
  if (sodium_memcmp(want, sealed.data() + line.size() + 2, sizeof want) != 0) return std::nullopt;
  ++recv_seq_;
  return line;
}

}  // namespace gpulaunch
