// AVX-512 kernels for linear() (AVX512F/BW/VL; F16C-style widening via vcvtph2ps): the widening kernels of
// matmul_rows.h and bf16_widen_panels.h on the Avx512 mapping (simd_map.h), plus a one-row stream for one token over long f16 rows. Only
// called after a run-time check (matmul.cpp). Everything below the pragma is compiled for that target; the
// standard headers are included above it so that no inline library code is compiled for AVX-512 by this file.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "engine/cpu/matmul_kernels.h"

#pragma GCC push_options
// GCC 12 warns about the deliberately undefined vectors inside its own AVX-512 intrinsics.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#define SPECSCOPE_SIMD_AVX512
#include "engine/cpu/matmul_rows.h"  // after the target pragma: compiled for AVX-512 here
#include "engine/cpu/bf16_widen_panels.h"

#include "engine/cpu/matmul_bf16widen.h"

namespace specscope::cpu::detail {
namespace {

// One token, one long f16 row (one_row_stream, matmul_kernels.h): y = x . w (+ bias), summed exactly as the 4-row
// tiles sum a row (the k blocks of k_block(k, 2), each one accumulator from its k % 16 tail on, the same reduction, the
// blocks' sums added in order through y), but in one call and one sequential stream, with the line
// kOneRowPrefetchBytes ahead prefetched at each element k where (k & pf_mask) == 0 (pf_mask < 0: none). Per row,
// through the tiles, each k block cost a call, a reduction and a store: one row at a time that way measured
// slower than 4 rows, while this loop streams faster. x is f32, or (X) the f16 fast path's f16 bits, widened here
// to the very values the tiles read as f32: half the bytes beside the weight stream in L1 and L2.
template <class X>
void one_row_f16(const X* x, int k, const uint16_t* w, const float* bias, float* y, int pf_mask) {
  using Xs = std::conditional_t<std::is_same_v<X, float>, Avx512::F32, Avx512::F16>;
  const int KC = k_block(k, sizeof(uint16_t));
  const __m512 z = _mm512_setzero_ps();
  float sum = 0.f;
  for (int kb = 0; kb < k; kb += KC) {
    const int kl = std::min(KC, k - kb);
    const X* xb = x + kb;
    const uint16_t* wb = w + kb;
    __m512 acc = z;
    int kk = kl & 15;
    if (kk) {
      const __mmask16 m = __mmask16((1u << kk) - 1u);
      acc = _mm512_mul_ps(Avx512::F16::load(wb, m), Xs::load(xb, m));
    }
    for (; kk < kl; kk += 16) {
      if (pf_mask >= 0 && ((kb + kk) & pf_mask) == 0) _mm_prefetch(reinterpret_cast<const char*>(wb + kk) + kOneRowPrefetchBytes, _MM_HINT_T1);
      acc = _mm512_fmadd_ps(Avx512::F16::load(wb + kk), Xs::load(xb + kk), acc);
    }
    float s = _mm_cvtss_f32(reduce4(acc, z, z, z));
    s = s + (kb == 0 && bias ? *bias : 0.f);
    sum = kb == 0 ? s : s + sum;
  }
  *y = sum;
}

}  // namespace

void panels_bf16widen_avx512(const float* X, int n, const Bf16Panels& w, const float* bias, float* Y, int p0,
                             int p1) {
  widen_panels<Avx512>(X, n, w, bias, Y, p0, p1);
}

void rows_avx512(const LinearArgs& a, int r0, int r1, float* scratch) {
  if (a.wtype == DType::F16 && a.n == 1 && one_row_stream(a.k, sizeof(uint16_t))) {
    const uint16_t* W = static_cast<const uint16_t*>(a.W);
    const int ahead = one_row_prefetch_rows(a.k, sizeof(uint16_t));
    const int lines = one_row_prefetch_lines(a.Xh ? OneRowKernel::F16Bits : OneRowKernel::F16);
    const int mask = one_row_prefetch_mask(lines, sizeof(uint16_t));
    for (int r = r0; r < r1; ++r) {
      const int pf = r + ahead < r1 ? mask : -1;
      float* y = a.Y + r;
      const float* bias = a.bias ? a.bias + r : nullptr;
      if (a.Xh) one_row_f16(a.Xh, a.k, W + size_t(r) * a.k, bias, y, pf);
      else one_row_f16(a.X, a.k, W + size_t(r) * a.k, bias, y, pf);
    }
    return;
  }
  rows_for<Avx512>(a, r0, r1, scratch);
}

void convert_avx512(DType t, const void* src, float* dst, size_t count) { convert_row<Avx512>(t, src, dst, count); }

}  // namespace specscope::cpu::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options
