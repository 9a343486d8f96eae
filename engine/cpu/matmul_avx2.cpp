// AVX2 + FMA + F16C kernels for linear(): the widening kernels of matmul_rows.h and bf16_widen_panels.h on the Avx2
// mapping (simd_map.h: 8-wide vectors, 4 rows x 3 tokens register tiles). Only called after a run-time check (matmul.cpp).
// The standard headers are included above the target pragma so that no inline library code is compiled for
// AVX2 by this file.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "engine/cpu/matmul_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define SPECSCOPE_SIMD_AVX2
#include "engine/cpu/matmul_rows.h"  // after the target pragma: compiled for AVX2 here
#include "engine/cpu/bf16_widen_panels.h"

#include "engine/cpu/matmul_bf16widen.h"

namespace specscope::cpu::detail {

void rows_avx2(const LinearArgs& a, int r0, int r1, float* scratch) { rows_for<Avx2>(a, r0, r1, scratch); }

void panels_bf16widen_avx2(const float* X, int n, const Bf16Panels& w, const float* bias, float* Y, int p0, int p1) {
  widen_panels<Avx2>(X, n, w, bias, Y, p0, p1);
}

bool to_f16_row_avx2(const float* x, int k, float* xr, uint16_t* xh) {
  const __m256 limit = _mm256_set1_ps(65520.f), sign = _mm256_set1_ps(-0.f);
  __m256 over = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= k; i += 8)
    over = _mm256_or_ps(over, _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), limit, _CMP_GE_OQ));
  bool too_big = _mm256_movemask_ps(over) != 0;
  for (; i < k; ++i) too_big = too_big || std::fabs(x[i]) >= 65520.f;  // false for NaN, as _CMP_GE_OQ
  if (too_big) return false;
  constexpr int kNearestEven = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  for (i = 0; i + 8 <= k; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), kNearestEven);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(xh + i), h);
    _mm256_storeu_ps(xr + i, _mm256_cvtph_ps(h));
  }
  for (; i < k; ++i) {
    xh[i] = _cvtss_sh(x[i], kNearestEven);
    xr[i] = _cvtsh_ss(xh[i]);
  }
  return true;
}

void convert_avx2(DType t, const void* src, float* dst, size_t count) { convert_row<Avx2>(t, src, dst, count); }

}  // namespace specscope::cpu::detail

#pragma GCC pop_options
