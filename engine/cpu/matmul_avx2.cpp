// AVX2 + FMA + F16C kernels for linear(). Only called after a run-time check (matmul.cpp). Same structure
// as matmul_avx512.cpp with 8-wide vectors and 4 rows x 3 tokens register tiles (16 ymm registers).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "engine/cpu/matmul_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace specscope::cpu::detail {
namespace {

constexpr int kTmax = 3;  // 4 rows x 3 tokens = 12 accumulators + 3 x + 1 w = 16 registers

#define SS_INLINE __attribute__((always_inline)) inline

struct WF32 {
  using T = float;
  static SS_INLINE __m256 load(const float* p) { return _mm256_loadu_ps(p); }
};
struct WF16 {
  using T = uint16_t;
  static SS_INLINE __m256 load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
struct WBF16 {
  using T = uint16_t;
  static SS_INLINE __m256 load(const uint16_t* p) {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  }
};

// The first `count` (< 8) elements of p, zero-padded, widened.
template <class L>
SS_INLINE __m256 load_tail(const typename L::T* p, int count) {
  typename L::T buf[8] = {};
  std::memcpy(buf, p, size_t(count) * sizeof(typename L::T));
  return L::load(buf);
}

SS_INLINE __m256i tail_mask(int count) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), idx);
}

// [sum(a), sum(b), sum(c), sum(d)].
SS_INLINE __m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
  __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));  // per 128-bit lane: [a, b, c, d]
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

template <int R, int T, class L>
void tile(const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw, const float* bias, float* y,
          size_t ldy) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  int kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    __m256 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + size_t(t) * ldx + kk);
    for (int r = 0; r < R; ++r) {
      __m256 wv = L::load(w + size_t(r) * ldw + kk);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (kk < k) {
    const int rem = k - kk;
    const __m256i m = tail_mask(rem);
    __m256 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm256_maskload_ps(x + size_t(t) * ldx + kk, m);
    for (int r = 0; r < R; ++r) {
      __m256 wv = load_tail<L>(w + size_t(r) * ldw + kk, rem);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  const __m256 z = _mm256_setzero_ps();
  const __m128i rmask = _mm256_castsi256_si128(tail_mask(R));
  const __m128 b = bias ? _mm_maskload_ps(bias, rmask) : _mm_setzero_ps();
  for (int t = 0; t < T; ++t) {
    __m128 s = reduce4(acc[0][t], R > 1 ? acc[R > 1 ? 1 : 0][t] : z, R > 2 ? acc[R > 2 ? 2 : 0][t] : z,
                       R > 3 ? acc[R > 3 ? 3 : 0][t] : z);
    s = _mm_add_ps(s, b);
    if constexpr (R == 4)
      _mm_storeu_ps(y + size_t(t) * ldy, s);
    else
      _mm_maskstore_ps(y + size_t(t) * ldy, rmask, s);
  }
}

template <class L>
using TileFn = void (*)(const float*, size_t, int, const typename L::T*, size_t, const float*, float*, size_t);

template <class L, size_t... I>
constexpr auto make_tile_table(std::index_sequence<I...>) {
  return std::array<TileFn<L>, sizeof...(I)>{&tile<int(I / kTmax) + 1, int(I % kTmax) + 1, L>...};
}
template <class L>
constexpr auto kTiles = make_tile_table<L>(std::make_index_sequence<4 * kTmax>{});

template <class L>
SS_INLINE void call_tile(int R, int T, const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw,
                         const float* bias, float* y, size_t ldy) {
  kTiles<L>[size_t((R - 1) * kTmax + (T - 1))](x, ldx, k, w, ldw, bias, y, ldy);
}

void convert_row(DType t, const void* src, float* dst, size_t count) {
  if (t == DType::F32) {
    std::memcpy(dst, src, count * sizeof(float));
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  const bool half = t == DType::F16;
  size_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(dst + i, half ? WF16::load(s + i) : WBF16::load(s + i));
  if (i < count) {
    const int rem = int(count - i);
    _mm256_maskstore_ps(dst + i, tail_mask(rem), half ? load_tail<WF16>(s + i, rem) : load_tail<WBF16>(s + i, rem));
  }
}

template <class L>
void rows_impl(const LinearArgs& a, int r0, int r1, float* scratch) {
  using T = typename L::T;
  const int n = a.n, k = a.k, m = a.m;
  const T* W = static_cast<const T*>(a.W);
  const size_t ldx = size_t(k), ldy = size_t(m);
  if (n <= kTmax) {
    for (int r = r0; r < r1; r += 4) {
      const int R = std::min(4, r1 - r);
      call_tile<L>(R, n, a.X, ldx, k, W + size_t(r) * k, size_t(k), a.bias ? a.bias + r : nullptr, a.Y + r, ldy);
    }
    return;
  }
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

void rows_avx2(const LinearArgs& a, int r0, int r1, float* scratch) {
  switch (a.wtype) {
    case DType::F32: rows_impl<WF32>(a, r0, r1, scratch); break;
    case DType::F16: rows_impl<WF16>(a, r0, r1, scratch); break;
    case DType::BF16: rows_impl<WBF16>(a, r0, r1, scratch); break;
    default: break;
  }
}

void convert_avx2(DType t, const void* src, float* dst, size_t count) { convert_row(t, src, dst, count); }

}  // namespace specscope::cpu::detail

#pragma GCC pop_options
