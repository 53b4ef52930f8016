#include "examples/transformer/kernels.h"

#include <cmath>
#include <cstring>
#include <utility>

namespace gpulaunch::examples {
namespace {

// A row's mean and 1 / sqrt(variance + eps), sums in ascending order.
std::pair<float, float> RowStats(const float* in, size_t width) {
  float mean = 0, var = 0;
  for (size_t i = 0; i < width; ++i) mean += in[i];
  mean /= static_cast<float>(width);
  for (size_t i = 0; i < width; ++i) var += (in[i] - mean) * (in[i] - mean);
  var /= static_cast<float>(width);
  return {mean, 1.0f / std::sqrt(var + 1e-5f)};
}

}  // namespace

// Row-wise layer norm without gain and bias; sums in ascending order.
std::vector<float> LayerNorm(const std::vector<float>& x, size_t width) {
  std::vector<float> y(x.size());
  for (size_t row = 0; row < x.size() / width; ++row) {
    const float* in = &x[row * width];
    const auto [mean, inv] = RowStats(in, width);
    for (size_t i = 0; i < width; ++i) y[row * width + i] = (in[i] - mean) * inv;
  }
  return y;
}

// dx of LayerNorm at input x, given dy: inv * (dy - mean(dy) - y mean(dy y)).
std::vector<float> LayerNormBackward(const std::vector<float>& x, const std::vector<float>& dy, size_t width) {
  const std::vector<float> y = LayerNorm(x, width);
  std::vector<float> dx(x.size());
  for (size_t row = 0; row < x.size() / width; ++row) {
    const float* in = &x[row * width];
    const auto [mean, inv] = RowStats(in, width);
    float mdy = 0, mdyy = 0;
    for (size_t i = 0; i < width; ++i) {
      mdy += dy[row * width + i];
      mdyy += dy[row * width + i] * y[row * width + i];
    }
    mdy /= static_cast<float>(width);
    mdyy /= static_cast<float>(width);
    for (size_t i = 0; i < width; ++i) {
      dx[row * width + i] = inv * (dy[row * width + i] - mdy - y[row * width + i] * mdyy);
    }
  }
  return dx;
}

namespace {
constexpr float kGeluC = 0.7978845608f;
}  // namespace

float Gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + 0.044715f * x * x * x))); }
float GeluGrad(float x) {
  const float t = std::tanh(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * x * x);
}

void AddBias(std::vector<float>& y, const std::vector<float>& b) {
  for (size_t i = 0; i < y.size(); ++i) y[i] += b[i % b.size()];
}

// out (k x n) = a^T b for a (t x k), b (t x n): sums over t in order.
void MatMulTN(const float* a, size_t t, size_t k, const float* b, size_t n, float* out) {
  std::memset(out, 0, k * n * sizeof(float));
  for (size_t r = 0; r < t; ++r) {
    for (size_t i = 0; i < k; ++i) {
      const float x = a[r * k + i];
      for (size_t j = 0; j < n; ++j) out[i * n + j] += x * b[r * n + j];
    }
  }
}

// out (t x k) = a b^T for a (t x n), b (k x n): sums over n in order.
void MatMulNT(const float* a, size_t t, size_t n, const float* b, size_t k, float* out) {
  for (size_t r = 0; r < t; ++r) {
    for (size_t i = 0; i < k; ++i) {
      float sum = 0;
      for (size_t j = 0; j < n; ++j) sum += a[r * n + j] * b[i * n + j];
      out[r * k + i] = sum;
    }
  }
}

// Column sums of a (t x n), over t in order.
void ColumnSums(const std::vector<float>& a, size_t n, std::vector<float>& out) {
  out.assign(n, 0.0f);
  for (size_t r = 0; r < a.size() / n; ++r)
    for (size_t j = 0; j < n; ++j) out[j] += a[r * n + j];
}

}  // namespace gpulaunch::examples
