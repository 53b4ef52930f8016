#include "runtime/superaccumulator.h"

#include <bit>
#include <cmath>
#include <limits>

namespace gpulaunch::rt {
namespace {

constexpr int kBias = 1074;           // bit 0 of the integer is 2^-1074
constexpr int64_t kNormalizeEvery = 1 << 29;

}  // namespace

void Superaccumulator::Add(double x) {
  any_input_ = true;
  if (!(x == 0.0 && std::signbit(x))) only_negative_zeros_ = false;
  if (std::isnan(x)) { nan_ = true; return; }
  if (std::isinf(x)) { (x > 0 ? pos_inf_ : neg_inf_) = true; return; }
  if (x == 0.0) return;
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  const int raw_exp = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  int exp = -1074;
  if (raw_exp != 0) {
    mantissa |= uint64_t{1} << 52;
    exp = raw_exp - 1075;
  }
  const int pos = exp + kBias;  // >= 0
  const int digit = pos / 32;
  const unsigned __int128 v = static_cast<unsigned __int128>(mantissa) << (pos % 32);
  const int64_t parts[3] = {static_cast<int64_t>(v & 0xffffffffu), static_cast<int64_t>((v >> 32) & 0xffffffffu),
                            static_cast<int64_t>(v >> 64)};
  const bool negative = bits >> 63;
  for (int k = 0; k < 3; ++k) d_[digit + k] += negative ? -parts[k] : parts[k];
  if (++pending_ >= kNormalizeEvery) Normalize();
}

void Superaccumulator::Add(const double* x, size_t n) {
  for (size_t i = 0; i < n; ++i) Add(x[i]);
}

void Superaccumulator::Add(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) Add(static_cast<double>(x[i]));
}

void Superaccumulator::Normalize() {
  for (int i = 0; i + 1 < kDigits; ++i) {
    const int64_t carry = d_[i] >> 32;  // floor division by 2^32, also for negatives
    d_[i] -= carry * (int64_t{1} << 32);
    d_[i + 1] += carry;
  }
  pending_ = 0;
}

void Superaccumulator::Merge(const Superaccumulator& o) {
  Superaccumulator other = o;
  other.Normalize();
  Normalize();
  for (int i = 0; i < kDigits; ++i) d_[i] += other.d_[i];
  Normalize();
  nan_ |= other.nan_;
  pos_inf_ |= other.pos_inf_;
  neg_inf_ |= other.neg_inf_;
  only_negative_zeros_ = only_negative_zeros_ && other.only_negative_zeros_;
  any_input_ = any_input_ || other.any_input_;
}

bool Superaccumulator::IsZero() const {
  Superaccumulator c = *this;
  c.Normalize();
  for (int64_t v : c.d_)
    if (v != 0) return false;
  return true;
}

double Superaccumulator::Round(int precision, int min_ulp_exponent) const {
  if (nan_ || (pos_inf_ && neg_inf_)) return std::numeric_limits<double>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<double>::infinity();
  if (neg_inf_) return -std::numeric_limits<double>::infinity();
  Superaccumulator c = *this;
  c.Normalize();
  // Magnitude and sign: the top digit carries the sign after normalising.
  const bool negative = c.d_[kDigits - 1] < 0;
  if (negative) {
    for (int64_t& v : c.d_) v = -v;
    c.Normalize();
  }
  int top = -1;  // highest set bit
  for (int i = kDigits - 1; i >= 0 && top < 0; --i) {
    if (c.d_[i] != 0) top = i * 32 + 63 - std::countl_zero(static_cast<uint64_t>(c.d_[i]));
  }
  if (top < 0) return any_input_ && only_negative_zeros_ ? -0.0 : 0.0;
  const auto bit = [&](int j) -> uint64_t { return j < 0 ? 0 : (static_cast<uint64_t>(c.d_[j / 32]) >> (j % 32)) & 1; };
  // Exponent of the result's last place, then round the integer to it.
  const int ulp_exp = std::max(top - kBias - (precision - 1), min_ulp_exponent);
  const int shift = ulp_exp + kBias;  // bits below this are rounded away
  uint64_t m = 0;
  for (int j = top; j >= shift; --j) m = (m << 1) | bit(j);
  if (shift > 0) {
    const bool round = bit(shift - 1);
    bool sticky = false;
    for (int j = shift - 2; j >= 0 && !sticky; --j) {
      if (j % 32 == 31 && (c.d_[j / 32] & 0xffffffff) == 0) {
        j -= 31;  // skip a zero digit
        continue;
      }
      sticky = bit(j);
    }
    if (round && (sticky || (m & 1))) ++m;
  }
  const double magnitude = std::ldexp(static_cast<double>(m), ulp_exp);  // exact, or inf on overflow
  return negative ? -magnitude : magnitude;
}

double Superaccumulator::RoundToDouble() const { return Round(53, -1074); }

float Superaccumulator::RoundToFloat() const {
  // Rounded once to float's precision; the double holding it is exact.
  return static_cast<float>(Round(24, -149));
}

void Superaccumulator::ToWire(int64_t* out) const {
  Superaccumulator c = *this;
  c.Normalize();
  for (int i = 0; i < kDigits; ++i) out[i] = c.d_[i];
  out[kDigits] = (nan_ ? 1 : 0) | (pos_inf_ ? 2 : 0) | (neg_inf_ ? 4 : 0) | (any_input_ ? 8 : 0) |
                 (only_negative_zeros_ ? 16 : 0);
}

Superaccumulator Superaccumulator::FromWire(const int64_t* in) {
  Superaccumulator s;
  for (int i = 0; i < kDigits; ++i) s.d_[i] = in[i];
  const int64_t f = in[kDigits];
  s.nan_ = f & 1;
  s.pos_inf_ = f & 2;
  s.neg_inf_ = f & 4;
  s.any_input_ = f & 8;
  s.only_negative_zeros_ = f & 16;
  return s;
}

}  // namespace gpulaunch::rt
