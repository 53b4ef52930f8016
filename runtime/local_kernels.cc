#include "runtime/local_kernels.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace gpulaunch::rt {
namespace {

template <typename T>
void AddIntoImpl(const T* __restrict a, const T* __restrict b, T* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
T FixedLaneSumImpl(const T* x, size_t n, size_t global_offset) {
  T lanes[kSumLanes] = {};
  // Head: elements until the global index is a multiple of the lane count.
  size_t i = 0;
  for (; i < n && (global_offset + i) % kSumLanes != 0; ++i) lanes[(global_offset + i) % kSumLanes] += x[i];
  // Body: whole rows of kSumLanes elements, lane j takes element j of each.
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (int j = 0; j < kSumLanes; ++j) lanes[j] += x[i + j];
  }
  for (; i < n; ++i) lanes[(global_offset + i) % kSumLanes] += x[i];
  // Fixed pairwise tree over the lanes.
  for (int width = kSumLanes / 2; width >= 1; width /= 2) {
    for (int j = 0; j < width; ++j) lanes[j] = lanes[2 * j] + lanes[2 * j + 1];
  }
  return lanes[0];
}

}  // namespace

void AddInto(const float* a, const float* b, float* out, size_t n) { AddIntoImpl(a, b, out, n); }
void AddInto(const double* a, const double* b, double* out, size_t n) { AddIntoImpl(a, b, out, n); }

float FixedLaneSum(const float* x, size_t n, size_t off) { return FixedLaneSumImpl(x, n, off); }
double FixedLaneSum(const double* x, size_t n, size_t off) { return FixedLaneSumImpl(x, n, off); }

float Bf16ToFloat(uint16_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v) << 16); }

uint16_t FloatToBf16(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  if (std::isnan(v)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t frac = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: frac * 2^-24, exact in float
    const float mag = std::ldexp(static_cast<float>(frac), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (frac << 13));
  return std::bit_cast<float>(sign | (static_cast<uint32_t>(exp - 15 + 127) << 23) | (frac << 13));
}

}  // namespace gpulaunch::rt
