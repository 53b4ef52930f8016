// Local arithmetic kernels with a fixed order of operations. Elementwise
// kernels have one add per element, so vectorisation and alignment cannot
// change a bit. Vector-to-scalar sums use W fixed lanes chosen by the
// element's global index (never by address or chunk), then a fixed tree over
// the lanes: the same bits for any buffer offset or alignment.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpulaunch::rt {

inline constexpr int kSumLanes = 16;

// out[i] = a[i] + b[i]
void AddInto(const float* a, const float* b, float* out, size_t n);
void AddInto(const double* a, const double* b, double* out, size_t n);

// Sum of x[0..n) as elements global_offset.. of a longer vector.
float FixedLaneSum(const float* x, size_t n, size_t global_offset = 0);
double FixedLaneSum(const double* x, size_t n, size_t global_offset = 0);

// bfloat16 / IEEE half stored as uint16_t, widened exactly to float.
float Bf16ToFloat(uint16_t v);
float HalfToFloat(uint16_t v);
uint16_t FloatToBf16(float v);  // round to nearest even (for tests and examples)

}  // namespace gpulaunch::rt
