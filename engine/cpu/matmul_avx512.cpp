// AVX-512 kernels for linear() (AVX512F/BW/VL; F16C-style widening via vcvtph2ps). Only called after a
// run-time check (matmul.cpp). Everything below the pragma is compiled for that target; the standard headers
// are included above it so that no inline library code is compiled for AVX-512 by this file.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "engine/cpu/matmul_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace specscope::cpu::detail {
namespace {

constexpr int kTmax = 6;  // tokens per register tile: 4 rows x 6 tokens = 24 accumulators + 6 x + 1 w

#define SS_INLINE __attribute__((always_inline)) inline

// Loaders: 16 consecutive weights widened to f32 (exact), and the same for a masked tail.
struct WF32 {
  using T = float;
  static SS_INLINE __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  static SS_INLINE __m512 load_tail(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct WF16 {
  using T = uint16_t;
  static SS_INLINE __m512 load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static SS_INLINE __m512 load_tail(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
};
struct WBF16 {
  using T = uint16_t;
  static SS_INLINE __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static SS_INLINE __m512 load(const uint16_t* p) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static SS_INLINE __m512 load_tail(const uint16_t* p, __mmask16 m) { return widen(_mm256_maskz_loadu_epi16(m, p)); }
};

// [sum(a), sum(b), sum(c), sum(d)] with 13 instructions instead of four full horizontal sums.
SS_INLINE __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // Per 128-bit block j: [a_j0+a_j1, a_j2+a_j3, b_j0+b_j1, b_j2+b_j3], same for c, d.
  __m512 ab = _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
  __m512 cd = _mm512_add_ps(_mm512_shuffle_ps(c, d, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(c, d, _MM_SHUFFLE(3, 1, 3, 1)));
  // Per block j: [a_j, b_j, c_j, d_j].
  __m512 s = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// Y[t, r] = sum_k x[t, k] * w[r, k] (+ bias[r]) for R <= 4 weight rows and T tokens; every weight vector is
// loaded (and widened) once for the T tokens. x rows at stride ldx, w rows at stride ldw, y rows at ldy.
template <int R, int T, class L>
void tile(const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw, const float* bias, float* y,
          size_t ldy) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  int kk = 0;
  for (; kk + 16 <= k; kk += 16) {
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x + size_t(t) * ldx + kk);
    for (int r = 0; r < R; ++r) {
      __m512 wv = L::load(w + size_t(r) * ldw + kk);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (kk < k) {
    const __mmask16 m = __mmask16((1u << (k - kk)) - 1u);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x + size_t(t) * ldx + kk);
    for (int r = 0; r < R; ++r) {
      __m512 wv = L::load_tail(w + size_t(r) * ldw + kk, m);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  const __mmask8 rm = __mmask8((1u << R) - 1u);
  const __m128 b = bias ? _mm_maskz_loadu_ps(rm, bias) : _mm_setzero_ps();
  const __m512 z = _mm512_setzero_ps();
  for (int t = 0; t < T; ++t) {
    __m128 s = reduce4(acc[0][t], R > 1 ? acc[R > 1 ? 1 : 0][t] : z, R > 2 ? acc[R > 2 ? 2 : 0][t] : z,
                       R > 3 ? acc[R > 3 ? 3 : 0][t] : z);
    s = _mm_add_ps(s, b);
    if constexpr (R == 4)
      _mm_storeu_ps(y + size_t(t) * ldy, s);
    else
      _mm_mask_storeu_ps(y + size_t(t) * ldy, rm, s);
  }
}

template <class L>
using TileFn = void (*)(const float*, size_t, int, const typename L::T*, size_t, const float*, float*, size_t);

template <class L, size_t... I>
constexpr auto make_tile_table(std::index_sequence<I...>) {
  return std::array<TileFn<L>, sizeof...(I)>{&tile<int(I / kTmax) + 1, int(I % kTmax) + 1, L>...};
}
// table[(R - 1) * kTmax + (T - 1)]
template <class L>
constexpr auto kTiles = make_tile_table<L>(std::make_index_sequence<4 * kTmax>{});

template <class L>
SS_INLINE void call_tile(int R, int T, const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw,
                         const float* bias, float* y, size_t ldy) {
  kTiles<L>[size_t((R - 1) * kTmax + (T - 1))](x, ldx, k, w, ldw, bias, y, ldy);
}

void convert_row(DType t, const void* src, float* dst, size_t count) {
  size_t i = 0;
  if (t == DType::F32) {
    const float* s = static_cast<const float*>(src);
    for (; i + 16 <= count; i += 16) _mm512_storeu_ps(dst + i, _mm512_loadu_ps(s + i));
    if (i < count) {
      const __mmask16 m = __mmask16((1u << (count - i)) - 1u);
      _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, s + i));
    }
  } else {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    const bool half = t == DType::F16;
    for (; i + 16 <= count; i += 16)
      _mm512_storeu_ps(dst + i, half ? WF16::load(s + i) : WBF16::load(s + i));
    if (i < count) {
      const __mmask16 m = __mmask16((1u << (count - i)) - 1u);
      _mm512_mask_storeu_ps(dst + i, m, half ? WF16::load_tail(s + i, m) : WBF16::load_tail(s + i, m));
    }
  }
}

template <class L>
void rows_impl(const LinearArgs& a, int r0, int r1, float* scratch) {
  using T = typename L::T;
  const int n = a.n, k = a.k, m = a.m;
  const T* W = static_cast<const T*>(a.W);
  const size_t ldx = size_t(k), ldy = size_t(m);
  if (n <= kTmax) {
    // One token tile: each weight vector is loaded, widened and used for all n tokens straight away.
    for (int r = r0; r < r1; r += 4) {
      const int R = std::min(4, r1 - r);
      call_tile<L>(R, n, a.X, ldx, k, W + size_t(r) * k, size_t(k), a.bias ? a.bias + r : nullptr, a.Y + r, ldy);
    }
    return;
  }
  // Several token tiles: a panel of P weight rows (widened to f32 once, when not f32) is kept in cache and
  // every token tile runs over it; tiles are balanced (n = 8 -> 4 + 4, not 6 + 2).
  const int ntiles = (n + kTmax - 1) / kTmax;
  const int tbase = n / ntiles, textra = n % ntiles;
  const int P = panel_rows(k);
  for (int p0 = r0; p0 < r1; p0 += P) {
    const int pr = std::min(P, r1 - p0);
    const float* wp;
    if constexpr (std::is_same_v<L, WF32>) {
      wp = W + size_t(p0) * k;
    } else {
      convert_row(a.wtype, W + size_t(p0) * k, scratch, size_t(pr) * k);
      wp = scratch;
    }
    int t0 = 0;
    for (int ti = 0; ti < ntiles; ++ti) {
      const int T = tbase + (ti < textra ? 1 : 0);
      for (int r = 0; r < pr; r += 4) {
        const int R = std::min(4, pr - r);
        call_tile<WF32>(R, T, a.X + size_t(t0) * ldx, ldx, k, wp + size_t(r) * k, size_t(k),
                        a.bias ? a.bias + p0 + r : nullptr, a.Y + size_t(t0) * ldy + p0 + r, ldy);
      }
      t0 += T;
    }
  }
}

}  // namespace

void rows_avx512(const LinearArgs& a, int r0, int r1, float* scratch) {
  switch (a.wtype) {
    case DType::F32: rows_impl<WF32>(a, r0, r1, scratch); break;
    case DType::F16: rows_impl<WF16>(a, r0, r1, scratch); break;
    case DType::BF16: rows_impl<WBF16>(a, r0, r1, scratch); break;
    default: break;
  }
}

void convert_avx512(DType t, const void* src, float* dst, size_t count) { convert_row(t, src, dst, count); }

}  // namespace specscope::cpu::detail

#pragma GCC pop_options
