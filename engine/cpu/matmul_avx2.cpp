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
#define SS_UNROLL _Pragma("GCC unroll 8")

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

// As in matmul_avx512.cpp: Y[t, r] = x[t] . w[r] (+ bias[r]) (+ Y[t, r] when accumulating) for R <= 4 rows and
// T tokens, each weight vector loaded once for the T tokens; with Store, the widened weights also go to wout.
template <int R, int T, class L, bool Store>
void tile(const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw, const float* bias, float* y,
          size_t ldy, bool accumulate, float* wout, size_t ldw_out, RowPrefetch* pf) {
  __m256 acc[R][T];
  SS_UNROLL for (int r = 0; r < R; ++r)
    SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  // The k % 8 tail first (nothing past the end is read), then full vectors.
  int kk = k & 7;
  if (kk) {
    const __m256i m = tail_mask(kk);
    __m256 xv[T];
    SS_UNROLL for (int t = 0; t < T; ++t) xv[t] = _mm256_maskload_ps(x + size_t(t) * ldx, m);
    SS_UNROLL for (int r = 0; r < R; ++r) {
      const __m256 wv = load_tail<L>(w + size_t(r) * ldw, kk);
      if constexpr (Store) _mm256_maskstore_ps(wout + size_t(r) * ldw_out, m, wv);
      SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm256_mul_ps(wv, xv[t]);
    }
  }
  TileRowPrefetch lpf(pf);  // the prefetch state in registers through the loop (written back when the tile ends)
  for (; kk < k; kk += 8) {
    lpf.step();
    __m256 xv[T];
    SS_UNROLL for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + size_t(t) * ldx + kk);
    SS_UNROLL for (int r = 0; r < R; ++r) {
      const __m256 wv = L::load(w + size_t(r) * ldw + kk);
      if constexpr (Store) _mm256_storeu_ps(wout + size_t(r) * ldw_out + kk, wv);
      SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  const __m256 z = _mm256_setzero_ps();
  const __m128i rmask = _mm256_castsi256_si128(tail_mask(R));
  const __m128 b = bias ? _mm_maskload_ps(bias, rmask) : _mm_setzero_ps();
  SS_UNROLL for (int t = 0; t < T; ++t) {
    __m128 s = reduce4(acc[0][t], R > 1 ? acc[R > 1 ? 1 : 0][t] : z, R > 2 ? acc[R > 2 ? 2 : 0][t] : z,
                       R > 3 ? acc[R > 3 ? 3 : 0][t] : z);
    s = _mm_add_ps(s, b);
    float* yt = y + size_t(t) * ldy;
    if (accumulate) s = _mm_add_ps(s, R == 4 ? _mm_loadu_ps(yt) : _mm_maskload_ps(yt, rmask));
    if constexpr (R == 4)
      _mm_storeu_ps(yt, s);
    else
      _mm_maskstore_ps(yt, rmask, s);
  }
}

template <class L>
using TileFn = void (*)(const float*, size_t, int, const typename L::T*, size_t, const float*, float*, size_t, bool,
                        float*, size_t, RowPrefetch*);

template <class L, bool Store, size_t... I>
constexpr auto make_tile_table(std::index_sequence<I...>) {
  return std::array<TileFn<L>, sizeof...(I)>{&tile<int(I / kTmax) + 1, int(I % kTmax) + 1, L, Store>...};
}
template <class L, bool Store>
constexpr auto kTiles = make_tile_table<L, Store>(std::make_index_sequence<4 * kTmax>{});

// One tile of R rows x T tokens; with wout, the widened weights are also stored there; with pf, lines of
// upcoming weights are prefetched as it goes.
template <class L>
SS_INLINE void call_tile(int R, int T, const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw,
                         const float* bias, float* y, size_t ldy, bool accumulate = false, float* wout = nullptr,
                         size_t ldw_out = 0, RowPrefetch* pf = nullptr) {
  const size_t i = size_t((R - 1) * kTmax + (T - 1));
  if (wout) return kTiles<L, true>[i](x, ldx, k, w, ldw, bias, y, ldy, accumulate, wout, ldw_out, pf);
  kTiles<L, false>[i](x, ldx, k, w, ldw, bias, y, ldy, accumulate, nullptr, 0, pf);
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
  using T_ = typename L::T;
  const int n = a.n, k = a.k, m = a.m;
  const T_* W = static_cast<const T_*>(a.W);
  const size_t ldx = size_t(k), ldy = size_t(m);
  if (n <= kTmax) {
    // One token tile: each weight vector is loaded, widened and used for all n tokens straight away.
    for (int r = r0; r < r1; r += 4) {
      const int R = std::min(4, r1 - r);
      // Prefetch the rows two groups ahead while this group computes: with memory latency as high as it is
      // on a busy machine, the hardware prefetchers alone kept a single thread at a fraction of the bandwidth
      // (measured 2.3x faster for f16, n = 1, one thread).
      RowPrefetch pf;
      const int rp = r + 8;
      if (rp < r1) {
        const int steps = std::max(1, k / 8);
        pf.row = reinterpret_cast<const char*>(W + size_t(rp) * k);
        pf.row_stride = size_t(k) * sizeof(T_);
        pf.lines_per_row = int((size_t(k) * sizeof(T_) + 63) / 64) + 1;
        pf.rows_left = std::min(4, r1 - rp);
        pf.per_step = (pf.lines_per_row * pf.rows_left + steps - 1) / steps;
      }
      // In the same k blocks as the multi-tile path below, so a token's outputs are summed in the same order
      // whatever the number of tokens in the call (batch invariance: a draft-tree row gets exactly the logits
      // it would get alone, which greedy losslessness rests on).
      const int KC = k_block(k);
      for (int kb = 0; kb < k; kb += KC)
        call_tile<L>(R, n, a.X + kb, ldx, std::min(KC, k - kb), W + size_t(r) * k + kb, size_t(k),
                     a.bias && kb == 0 ? a.bias + r : nullptr, a.Y + r, ldy, kb > 0, nullptr, 0,
                     rp < r1 ? &pf : nullptr);
    }
    return;
  }
  // Several token tiles: a panel of P weight rows (widened to f32 once, when not f32) is kept in cache and
  // every token tile runs over it; tiles are balanced (n = 8 -> 3 + 3 + 2).
  const int ntiles = (n + kTmax - 1) / kTmax;
  const int tbase = n / ntiles, textra = n % ntiles;
  const int P = panel_rows(k, ntiles);
  const int KC = k_block(k);
  // f16/bf16 rows are widened once into the scratch panel by the first token tile. f32 rows are used in
  // place, except with many tiles, where a compact copy in the scratch panel measured faster.
  const bool copy = !std::is_same_v<L, WF32> || ntiles >= 4;
  for (int p0 = r0; p0 < r1; p0 += P) {
    const int pr = std::min(P, r1 - p0);
    // k in blocks of KC so that a token tile's slice of X and the panel's slice of W stay in L1 together;
    // partial sums go through Y (the bias is added with the first block).
    for (int kb = 0; kb < k; kb += KC) {
      const int kl = std::min(KC, k - kb);
      // Only the first token tile streams weights from memory; the others work from cache. They prefetch
      // the block the next iteration streams (next k block of this panel, else block 0 of the next panel).
      RowPrefetch pf;
      {
        const int nkb = kb + KC < k ? kb + KC : 0, np0 = kb + KC < k ? p0 : p0 + P;
        if (np0 < r1 && ntiles > 1) {
          const size_t esz = sizeof(T_);
          const int nkl = std::min(KC, k - nkb);
          pf.row = reinterpret_cast<const char*>(W + size_t(np0) * k + nkb);
          pf.row_stride = size_t(k) * esz;
          pf.lines_per_row = int((size_t(nkl) * esz + 63) / 64) + 1;
          pf.rows_left = std::min(P, r1 - np0);
          const int64_t lines = int64_t(pf.lines_per_row) * pf.rows_left;
          const int64_t steps = int64_t(ntiles) * ((pr + 3) / 4) * std::max(1, kl / 8);
          pf.per_step = int((lines + steps - 1) / steps);
        }
      }
      int t0 = 0;
      for (int ti = 0; ti < ntiles; ++ti) {
        const int T = tbase + (ti < textra ? 1 : 0);
        for (int r = 0; r < pr; r += 4) {
          const int R = std::min(4, pr - r);
          const float* x = a.X + size_t(t0) * ldx + kb;
          const float* b = a.bias && kb == 0 ? a.bias + p0 + r : nullptr;
          float* y = a.Y + size_t(t0) * ldy + p0 + r;
          const T_* wsrc = W + size_t(p0 + r) * k + kb;
          if (!copy)  // (only ever true for f32)
            call_tile<WF32>(R, T, x, ldx, kl, reinterpret_cast<const float*>(wsrc), size_t(k), b, y, ldy, kb > 0,
                            nullptr, 0, ti > 0 ? &pf : nullptr);
          else if (ti == 0)  // widen on the fly and keep the f32 block (rows at stride KC) for the other tiles
            call_tile<L>(R, T, x, ldx, kl, wsrc, size_t(k), b, y, ldy, kb > 0, scratch + size_t(r) * KC, size_t(KC),
                         &pf);
          else
            call_tile<WF32>(R, T, x, ldx, kl, scratch + size_t(r) * KC, size_t(KC), b, y, ldy, kb > 0, nullptr, 0, &pf);
        }
        t0 += T;
      }
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
