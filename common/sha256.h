// SHA-256 (FIPS 180-4). Used for plan hashes and result fingerprints; kept in
// common/ so neither needs a crypto library.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpulaunch {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  std::array<uint8_t, 32> Finish();

 private:
  void Block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex digest of `data`.
std::string Sha256Hex(std::string_view data);
std::string ToHex(const uint8_t* data, size_t size);

}  // namespace gpulaunch
