#include "engine/cpu/panel_act.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string_view>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "engine/cpu/matmul.h"
#include "engine/cpu/round_even.h"

namespace specscope::cpu::detail {
namespace {

// The token's scale and 1/scale; false when the row holds a NaN or infinity.
bool token_scale(float amax, bool finite, float* s, float* inv) {
  if (!finite) {
    *s = std::numeric_limits<float>::quiet_NaN();
    return false;
  }
  const float sx = amax / 127.f;
  if (!(sx >= FLT_MIN)) {  // all (near) zero: codes 0, scale 0
    *s = 0.f;
    return false;
  }
  *s = sx;
  *inv = 1.f / sx;
  return true;
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void quantize_row_avx512(const float* x, int k, int kp,
                                                                                       uint8_t offset, uint8_t* q,
                                                                                       float* s) {
  const __m512 big = _mm512_set1_ps(FLT_MAX);
  __m512 vmax = _mm512_setzero_ps();
  __mmask16 finite = 0xFFFF;
  for (int i = 0; i < k; i += 16) {
    const __mmask16 m = k - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (k - i)) - 1u);
    const __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(m, x + i));
    finite &= _mm512_cmp_ps_mask(a, big, _CMP_LE_OQ);  // false for NaN and infinities (the masked-off lanes are 0)
    vmax = _mm512_max_ps(vmax, a);
  }
  float inv = 0.f;
  std::memset(q, offset, size_t(kp));
  if (!token_scale(_mm512_reduce_max_ps(vmax), finite == 0xFFFF, s, &inv)) return;  // max is exact: any order
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  const __m128i off = _mm_set1_epi8(char(offset));
  for (int i = 0; i < k; i += 16) {
    const __mmask16 m = k - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (k - i)) - 1u);
    const __m512i c = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vinv)), lo), hi);
    _mm_mask_storeu_epi8(q + i, m, _mm_add_epi8(_mm512_cvtepi32_epi8(c), off));
  }
}
#endif

void quantize_row_scalar(const float* x, int k, int kp, uint8_t offset, uint8_t* q, float* s) {
  float amax = 0.f;
  bool finite = true;
  for (int i = 0; i < k; ++i) {
    const float a = std::fabs(x[i]);
    finite = finite && a <= FLT_MAX;
    amax = a > amax ? a : amax;
  }
  float inv = 0.f;
  std::memset(q, offset, size_t(kp));
  if (!token_scale(amax, finite, s, &inv)) return;
  for (int i = 0; i < k; ++i) {
    const int r = round_even(x[i] * inv);
    q[i] = uint8_t((r > 127 ? 127 : r < -127 ? -127 : r) + offset);
  }
}

}  // namespace

void quantize_token_rows_scalar(const float* X, int n, int k, int kp, uint8_t offset, uint8_t* q, float* s) {
  for (int t = 0; t < n; ++t) quantize_row_scalar(X + size_t(t) * size_t(k), k, kp, offset, q + size_t(t) * size_t(kp), s + t);
}

void quantize_token_rows(const float* X, int n, int k, int kp, uint8_t offset, uint8_t* q, float* s) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) {
    for (int t = 0; t < n; ++t)
      quantize_row_avx512(X + size_t(t) * size_t(k), k, kp, offset, q + size_t(t) * size_t(kp), s + t);
    return;
  }
#endif
  quantize_token_rows_scalar(X, n, k, kp, offset, q, s);
}

bool panels_have_avx512_vnni() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                         __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("f16c");
  return ok;
#else
  return false;
#endif
}

bool panels_use_avx512_vnni() { return panels_have_avx512_vnni() && std::string_view(active_isa()) == "avx512"; }

bool panels_avx2_supported() {
#if defined(__x86_64__)
  static const bool ok =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return ok;
#else
  return false;
#endif
}

}  // namespace specscope::cpu::detail
