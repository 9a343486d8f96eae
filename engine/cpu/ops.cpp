#include "engine/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

// The hot loops are compiled twice (AVX2+FMA and baseline x86-64) and picked at load time, so the binary
// stays portable without -march=native.
#if defined(__x86_64__) && !defined(__clang__)
#define SPEC_MULTIVERSION __attribute__((target_clones("avx2,fma", "default")))
#else
#define SPEC_MULTIVERSION
#endif

namespace specscope::cpu {

SPEC_MULTIVERSION
void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + int64_t(r) * dim;
    float* yr = y + int64_t(r) * dim;
    float ss = 0.f;
    for (int i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    const float scale = 1.0f / std::sqrt(ss / float(dim) + eps);
    for (int i = 0; i < dim; ++i) yr[i] = w[i] * (xr[i] * scale);
  }
}

void rope(float* vec, int n_heads, int head_dim, int32_t pos, const float* inv_freq) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; ++i) {
    // The angle is formed in float32 as transformers does (position * inv_freq), then cos/sin.
    const float angle = float(pos) * inv_freq[i];
    const float c = std::cos(angle), s = std::sin(angle);
    for (int h = 0; h < n_heads; ++h) {
      float* v = vec + int64_t(h) * head_dim;
      const float a = v[i], b = v[i + half];
      v[i] = a * c - b * s;
      v[i + half] = b * c + a * s;
    }
  }
}

SPEC_MULTIVERSION
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, int n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  if (mx == -std::numeric_limits<float>::infinity()) {  // nothing attendable: uniform zeros
    std::fill(x, x + n, 0.f);
    return;
  }
  float sum = 0.f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.f / sum;
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

SPEC_MULTIVERSION
float dot(const float* a, const float* b, int n) {
  float s = 0.f;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

SPEC_MULTIVERSION
void axpy(float a, const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

SPEC_MULTIVERSION
void add(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace specscope::cpu
