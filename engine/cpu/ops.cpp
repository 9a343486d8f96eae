#include "engine/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/cpu/isa_dispatch.h"
#include "engine/cpu/vec_math.h"

// The hot loops are compiled twice (AVX2+FMA and baseline x86-64) and picked at load time, so the binary
// stays portable without -march=native.
#if defined(__x86_64__) && !defined(__clang__) && !defined(SPECSCOPE_NO_TARGET_CLONES)
#define SPEC_MULTIVERSION __attribute__((target_clones("avx2,fma", "default")))
#define SPEC_MULTIVERSION_VEC __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SPEC_MULTIVERSION
#define SPEC_MULTIVERSION_VEC
#endif

namespace specscope::cpu {

// rmsnorm, dot and the rotation run in 16-lane vectors with one fixed horizontal sum (vec::hsum): a row's result
// depends only on that row, never on how many rows share the call. (A sequential f32 sum of squares was a chain of
// dependent adds: on the default base the norms of an 8-token step took as long as its RoPE and element-wise
// layers together.)
SPEC_MULTIVERSION_VEC
void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps) {
  using namespace vec;
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + int64_t(r) * dim;
    float* yr = y + int64_t(r) * dim;
    f16v acc = {};
    int i = 0;
    for (; i + kLanes <= dim; i += kLanes) {
      const f16v v = load(xr + i);
      acc += v * v;
    }
    if (i < dim) {
      const f16v v = load_part(xr + i, dim - i);
      acc += v * v;
    }
    const float scale = 1.0f / std::sqrt(hsum(acc) / float(dim) + eps);
    for (i = 0; i + kLanes <= dim; i += kLanes) store(yr + i, load(w + i) * (load(xr + i) * scale));
    if (i < dim) store_part(yr + i, load_part(w + i, dim - i) * (load_part(xr + i, dim - i) * scale), dim - i);
  }
}

SPEC_MULTIVERSION_VEC
void rope_rotate(float* vec, int n_heads, int head_dim, const float* cos_sin, int rotary_dim) {
  const int half = (rotary_dim > 0 ? rotary_dim : head_dim) / 2;
  const float* c = cos_sin;
  const float* s = cos_sin + half;
  for (int h = 0; h < n_heads; ++h) {
    float* v = vec + int64_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * c[i] - b * s[i];
      v[i + half] = b * c[i] + a * s[i];
    }
  }
}

void rope_angles(int32_t pos, const float* inv_freq, int half, float* cos_sin, float scale) {
  for (int i = 0; i < half; ++i) {
    // The angle is formed in float32 as transformers does (position * inv_freq), then cos/sin.
    const float angle = float(pos) * inv_freq[i];
    cos_sin[i] = std::cos(angle);
    cos_sin[half + i] = std::sin(angle);
  }
  if (scale != 1.f)
    for (int i = 0; i < 2 * half; ++i) cos_sin[i] *= scale;
}

void rope(float* vec, int n_heads, int head_dim, int32_t pos, const float* inv_freq, int rotary_dim, float scale) {
  const int turned = rotary_dim > 0 ? rotary_dim : head_dim;
  float on_stack[512];
  std::vector<float> on_heap;
  float* cs = turned <= 512 ? on_stack : (on_heap.resize(size_t(turned)), on_heap.data());
  rope_angles(pos, inv_freq, turned / 2, cs, scale);
  rope_rotate(vec, n_heads, head_dim, cs, turned);
}

// silu and softmax run on vec_math.h's exp in vectors (libm's scalar expf made silu alone ~18% of an 8-token step
// on the default base), at this CPU's width (isa_dispatch.h: 16-float vectors compiled for AVX2 became one scalar
// compare per lane in exp_v's clamps). Tails go through the same vector code, so an element's result does not
// depend on its position; softmax's sum is kept in 16 lanes at every width.
namespace {

template <int L>
SS_VEC_INLINE void silu_mul_with(const float* gate, const float* up, float* out, int64_t n) {
  using namespace vec;
  using V = vec_t<L>;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V g = load<V>(gate + i);
    store(out + i, g / (1.0f + exp_v(-g)) * load<V>(up + i));
  }
  if (i < n) {
    const int r = int(n - i);
    const V g = load_part<V>(gate + i, r);
    store_part(out + i, g / (1.0f + exp_v(-g)) * load_part<V>(up + i, r), r);
  }
}

// 0.5 x (1 + tanh(u)) is x / (1 + exp(-2u)): silu's form, on the same vector exp (a scalar libm tanh took ~9% of a
// Gemma-3-1B decode step: 180k of them per token).
template <int L>
SS_VEC_INLINE void gelu_tanh_mul_with(const float* gate, const float* up, float* out, int64_t n) {
  using namespace vec;
  using V = vec_t<L>;
  constexpr float kTwoBeta = 2.f * 0.7978845608028654f;  // 2 sqrt(2 / pi)
  constexpr float kKappa = 0.044715f;
  // Written out twice rather than as a lambda: a lambda is not compiled for the caller's ISA, and passing a vector
  // to it across that boundary breaks the calling convention.
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V x = load<V>(gate + i);
    store(out + i, x / (1.0f + exp_v(-kTwoBeta * (x + kKappa * x * x * x))) * load<V>(up + i));
  }
  if (i < n) {
    const int r = int(n - i);
    const V x = load_part<V>(gate + i, r);
    store_part(out + i, x / (1.0f + exp_v(-kTwoBeta * (x + kKappa * x * x * x))) * load_part<V>(up + i, r), r);
  }
}

// GPT-OSS's clamped SwiGLU: g = min(gate, limit), u = clamp(up, -limit, limit), out = g * sigmoid(alpha g) * (u + 1),
// as transformers' GptOssExperts._apply_gate (sigmoid as silu's 1 / (1 + exp(-z)), on the same vector exp).
template <int L>
SS_VEC_INLINE void swiglu_clamped_mul_with(const float* gate, const float* up, float* out, int64_t n, float limit,
                                           float alpha) {
  using namespace vec;
  using V = vec_t<L>;
  const V hi = splat<V>(limit), lo = splat<V>(-limit);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V g = vmin(load<V>(gate + i), hi), u = vmax(vmin(load<V>(up + i), hi), lo);
    store(out + i, g / (1.0f + exp_v(-alpha * g)) * (u + 1.0f));
  }
  if (i < n) {
    const int r = int(n - i);
    const V g = vmin(load_part<V>(gate + i, r), hi), u = vmax(vmin(load_part<V>(up + i, r), hi), lo);
    store_part(out + i, g / (1.0f + exp_v(-alpha * g)) * (u + 1.0f), r);
  }
}

// x = cap * tanh(x / cap) (Gemma 2's final logits): vec::soft_cap at this CPU's width.
template <int L>
SS_VEC_INLINE void soft_cap_with(float* x, float cap, int64_t n) {
  vec::soft_cap<false, L>(x, n, cap);
}

template <int L>
SS_VEC_INLINE void softmax_with(float* x, int n) {
  const float mx = vec::max_of<false, L>(x, n);
  if (mx == -std::numeric_limits<float>::infinity()) {  // nothing attendable: uniform zeros
    std::fill(x, x + n, 0.f);
    return;
  }
  vec::scale<false, L>(x, n, 1.f / vec::sum_exp<false, L>(x, n, mx, true));
}

// x[i] -= log(sum_j exp(x[j])), with the maximum subtracted first; the sum in 16 lanes and one fixed horizontal sum.
template <int L>
SS_VEC_INLINE void log_softmax_with(float* x, int n) {
  const float mx = vec::max_of<false, L>(x, n);
  const float lse = mx + std::log(vec::sum_exp<false, L>(x, n, mx, false));
  for (int i = 0; i < n; ++i) x[i] -= lse;
}

}  // namespace

SS_PER_ISA_KERNEL(void, silu_mul, (const float* gate, const float* up, float* out, int64_t n), (gate, up, out, n))
SS_PER_ISA_KERNEL(void, gelu_tanh_mul, (const float* gate, const float* up, float* out, int64_t n),
                  (gate, up, out, n))
SS_PER_ISA_KERNEL(void, swiglu_clamped_mul,
                  (const float* gate, const float* up, float* out, int64_t n, float limit, float alpha),
                  (gate, up, out, n, limit, alpha))
SS_PER_ISA_KERNEL(void, soft_cap, (float* x, float cap, int64_t n), (x, cap, n))
SS_PER_ISA_KERNEL(void, softmax, (float* x, int n), (x, n))
SS_PER_ISA_KERNEL(void, log_softmax, (float* x, int n), (x, n))

SPEC_MULTIVERSION_VEC
float dot(const float* a, const float* b, int n) {
  using namespace vec;
  f16v acc = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) acc += load(a + i) * load(b + i);
  if (i < n) acc += load_part(a + i, n - i) * load_part(b + i, n - i);
  return hsum(acc);
}

SPEC_MULTIVERSION
void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

SPEC_MULTIVERSION
void add(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void divide(float* x, float d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] /= d;
}

}  // namespace specscope::cpu
