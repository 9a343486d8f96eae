// CPU references of kernels/gemv.cu (kernel_refs.h): the definition, each output summed in double over the exact
// products of the widened weights and activations (the kernel sums in f32, so the test allows for its rounding).
#include <vector>

#include "engine/util/dtype.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

namespace {

float widen(const void* p, WType t, int64_t i) {
  switch (t) {
    case WType::F16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case WType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

}  // namespace

void gemv(const void* W, WType t, const void* X, int n, int m, int k, float* Y) {
  std::vector<double> x(size_t(n) * k);
  for (int64_t i = 0; i < int64_t(n) * k; ++i) x[i] = widen(X, t, i);
  for (int j = 0; j < m; ++j)
    for (int r = 0; r < n; ++r) {
      double acc = 0;
      for (int c = 0; c < k; ++c) acc += double(widen(W, t, int64_t(j) * k + c)) * x[size_t(r) * k + c];
      Y[int64_t(r) * m + j] = float(acc);
    }
}

void block_gemv(const void* W, WType t, const float* X, int n, int m, int k, float* Y) {
  // Each row of W widened by the engine (embed_gather's reference), then the definition in double.
  std::vector<float> w(static_cast<size_t>(k));
  for (int j = 0; j < m; ++j) {
    const int32_t row = j;
    embed_gather(W, t, &row, 1, k, w.data());
    for (int r = 0; r < n; ++r) {
      double acc = 0;
      for (int c = 0; c < k; ++c) acc += double(w[size_t(c)]) * X[size_t(r) * k + c];
      Y[int64_t(r) * m + j] = float(acc);
    }
  }
}

}  // namespace specscope::cuda::ref
