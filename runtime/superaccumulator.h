// Exact summation (determinism level L3): a fixed-point integer wide enough
// for every finite double (2^-1074 .. 2^1024) plus headroom, in base-2^32
// digits held in int64 so additions need no carry until Normalize(). Integer
// addition is associative, so the sum is the same in any order and on any
// number of ranks; rounding happens once, correctly (to nearest, ties to
// even), into double or float.
#pragma once

#include <array>
#include <cstdint>
#include <cstddef>

namespace gpulaunch::rt {

class Superaccumulator {
 public:
  static constexpr int kDigits = 68;  // 2176 bits: 2098 needed + carry headroom
  using Digits = std::array<int64_t, kDigits>;

  void Add(double x);
  void Add(const double* x, size_t n);
  void Add(const float* x, size_t n);  // floats widen exactly
  void Merge(const Superaccumulator& other);

  // Correctly rounded value of the exact sum.
  double RoundToDouble() const;
  float RoundToFloat() const;
  bool IsZero() const;

  // Wire form for exchanging between ranks: kDigits normalised digits then
  // the flags word. Merge of decoded forms equals merging the originals.
  static constexpr size_t kWireWords = kDigits + 1;
  void ToWire(int64_t* out) const;
  static Superaccumulator FromWire(const int64_t* in);

 private:
  void Normalize();
  double Round(int precision, int min_ulp_exponent) const;

  Digits d_{};
  int64_t pending_ = 0;  // additions since the last Normalize()
  // Non-finite and signed-zero bookkeeping, as IEEE addition would do it.
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
  bool any_input_ = false, only_negative_zeros_ = true;
};

}  // namespace gpulaunch::rt
