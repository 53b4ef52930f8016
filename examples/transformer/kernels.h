// Row-wise numerics of the transformer example, each in one fixed order of
// operations (sums ascending), shared by its forward and backward passes.
#pragma once

#include <cstddef>
#include <vector>

namespace gpulaunch::examples {

// Row-wise layer norm without gain and bias.
std::vector<float> LayerNorm(const std::vector<float>& x, size_t width);
// dx of LayerNorm at input x, given dy: inv * (dy - mean(dy) - y mean(dy y)).
std::vector<float> LayerNormBackward(const std::vector<float>& x, const std::vector<float>& dy, size_t width);
// GELU (tanh approximation) and its derivative.
float Gelu(float x);
float GeluGrad(float x);
// y[i] += b[i % b.size()]
void AddBias(std::vector<float>& y, const std::vector<float>& b);
// out (k x n) = a^T b for a (t x k), b (t x n): sums over t in order.
void MatMulTN(const float* a, size_t t, size_t k, const float* b, size_t n, float* out);
// out (t x k) = a b^T for a (t x n), b (k x n): sums over n in order.
void MatMulNT(const float* a, size_t t, size_t n, const float* b, size_t k, float* out);
// Column sums of a (t x n), over t in order.
void ColumnSums(const std::vector<float>& a, size_t n, std::vector<float>& out);

}  // namespace gpulaunch::examples
