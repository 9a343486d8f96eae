// BF16 weights on AVX2 CPUs without AVX512-BF16: the default path of linear() for panel-packed bf16 weights there
// (matmul.cpp's bf16widen_active). The row-major widening tiles (matmul_rows.h) end every (output row, token) in an
// 8-to-1 horizontal sum and widen each weight vector with vpmovzxwd + vpslld: the default base's 8-token linear
// layers ran at 62% of the f32 FMA peak. Here the weights come as panels (bf16_panels.h: 16 output rows a panel, the
// two k of a pair side by side), read half a panel (8 rows) at a time: one 256-bit load holds k = 2j and 2j + 1 of
// 8 rows, and two unpacks with zero widen it exactly to f32 as (even k, odd k) lane pairs of rows 0, 1 | 4, 5 and
// 2, 3 | 6, 7. One 64-bit broadcast of a token's activations at 2j, 2j + 1 multiplies both, so every accumulator
// holds, for its 4 rows, a chain over the even k and a chain over the odd k; the two are added once at the end
// (vhaddps, which also puts the 8 rows in order).
//
// Two chains an output also keep the FMA units busy: each accumulator takes one FMA a pair, so a tile of T tokens
// runs 2T independent chains (T = 6: 12, above the 8 that FMA latency x throughput asks for). Measured while writing
// it (forwards of the default base, AVX2 forced on the Zen 4 host, medians of 2000): one chain an output (8 chains a
// tile) ran 8 tokens no faster than the row tiles (1.83-2.13 against 1.63-2.01 ms); tiles of at most 4 tokens ran
// 6 as 3 + 3 at 1.44 ms, one tile of 6 at 1.21. On the Zen 4 host with the AVX2 kernels forced
// (SPECSCOPE_MATMUL_ISA=avx2), the default base, the old row tiles (the exact path) alternated with these in one
// process (kernel_ab --settings 'default;exact=1,memory=copy'; bench/results/cpu_avx2_bf16_panels_2026-12-04/): a
// forward of 1 / 4 / 8 / 16 new tokens took 1.31 / 1.09 / 1.18 / 1.27x the time with the row tiles (these faster in
// 12 / 11 / 12 / 12 of 12 rounds); decoding 2,173 against 1,673 tok/s.
//
// Batch invariance: an output's sum (its even chain plus its odd chain, each over k in order, plus the bias) is the
// same sequence whatever the number of tokens, the tile its token falls in or the thread. Exactness: exact weights,
// f32 activations and f32 FMAs (linear_reference's sum up to f32 rounding in this order).
//
// Only called after a run-time check (matmul.cpp). Everything below the pragma is compiled for AVX2; the standard
// headers are included above it so that no inline library code is compiled for AVX2 by this file.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "engine/cpu/matmul_bf16widen.h"

#include "engine/cpu/bf16_panels.h"
#include "engine/cpu/matmul_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace specscope::cpu::detail {
namespace {

#define SS_INLINE __attribute__((always_inline)) inline
#define SS_UNROLL _Pragma("GCC unroll 8")

constexpr int kHalfRows = 8;   // output rows a half panel (one ymm of f32)
constexpr int kTileTmax = 6;   // tokens a tile: more are split into balanced tiles over the same half panels

// Half panels a tile for T tokens: 2 x H x T accumulators, 2H widened weight vectors, the broadcast and the zero
// fit the 16 ymm registers (T = 1: 6 + 6 + 2; T = 2: 8 + 4 + 2; T = 6: 12 + 2 + 2). More tokens go as balanced tiles
// over the same half panels (8 -> 4 + 4), the later tiles reading the weights from L1.
constexpr int halves_for(int T) { return T <= 1 ? 3 : T <= 2 ? 2 : 1; }

// Element (pair j, lane 0) of half panel h (rows 8h .. 8h + 7): its 16 bf16 sit in the first or second half of each
// 64-byte pair slot of panel h / 2.
SS_INLINE const uint16_t* half_panel(const Bf16Panels& w, int h) { return w.panel(h / 2) + (h % 2) * 16; }

// Y[t, 8h + lane] for the H half panels hp[0..H) and T tokens; `rows_left` rows from the first half panel's first row
// exist (m - 8 h0). With `prefetch` (the half panels some tiles ahead), their pair slots are fetched as the loop goes.
template <int H, int T>
void half_panel_tile(const float* x, size_t ldx, int k, const uint16_t* const* hp, const float* bias, float* y,
                     size_t ldy, int rows_left, const uint16_t* const* prefetch, bool to_l2) {
  // lo: rows 0, 1 | 4, 5 of the half panel, hi: rows 2, 3 | 6, 7, each as (even k, odd k) lane pairs
  __m256 lo[H][T], hi[H][T];
  SS_UNROLL for (int h = 0; h < H; ++h)
    SS_UNROLL for (int t = 0; t < T; ++t) lo[h][t] = hi[h][t] = _mm256_setzero_ps();
  const __m256i zero = _mm256_setzero_si256();
  const int pairs = k / 2;
  for (int j = 0; j < pairs; ++j) {
    if (prefetch && (T > 1 || (j & 1) == 0)) {
      SS_UNROLL for (int h = 0; h < H; ++h) {
        const char* line = reinterpret_cast<const char*>(prefetch[h] + size_t(j) * 32);
        if (T > 1 && !to_l2) _mm_prefetch(line, _MM_HINT_T0);
        else _mm_prefetch(line, _MM_HINT_T1);
      }
    }
    __m256 wl[H], wh[H];
    SS_UNROLL for (int h = 0; h < H; ++h) {
      const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(hp[h] + size_t(j) * 32));
      wl[h] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, v));
      wh[h] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, v));
    }
    SS_UNROLL for (int t = 0; t < T; ++t) {
      double pair;
      __builtin_memcpy(&pair, x + size_t(t) * ldx + size_t(j) * 2, sizeof pair);
      const __m256 xp = _mm256_castpd_ps(_mm256_set1_pd(pair));
      SS_UNROLL for (int h = 0; h < H; ++h) {
        lo[h][t] = _mm256_fmadd_ps(wl[h], xp, lo[h][t]);
        hi[h][t] = _mm256_fmadd_ps(wh[h], xp, hi[h][t]);
      }
    }
  }
  if (k & 1) {  // the last k alone: its pair's second element is padding, and x has no element past k - 1
    SS_UNROLL for (int h = 0; h < H; ++h) {
      const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(hp[h] + size_t(pairs) * 32));
      const __m256 wl = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, v));
      const __m256 wh = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, v));
      SS_UNROLL for (int t = 0; t < T; ++t) {
        const __m256 xp = _mm256_blend_ps(_mm256_broadcast_ss(x + size_t(t) * ldx + size_t(pairs) * 2),
                                          _mm256_setzero_ps(), 0xAA);
        lo[h][t] = _mm256_fmadd_ps(wl, xp, lo[h][t]);
        hi[h][t] = _mm256_fmadd_ps(wh, xp, hi[h][t]);
      }
    }
  }
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  SS_UNROLL for (int h = 0; h < H; ++h) {
    const int left = rows_left - h * kHalfRows;
    if (left <= 0) break;
    const __m256i rm = _mm256_cmpgt_epi32(_mm256_set1_epi32(std::min(left, kHalfRows)), lane);
    const __m256 b = bias ? _mm256_maskload_ps(bias + h * kHalfRows, rm) : _mm256_setzero_ps();
    SS_UNROLL for (int t = 0; t < T; ++t) {
      float* yt = y + size_t(t) * ldy + size_t(h) * kHalfRows;
      // even + odd of rows 0..7 in order: [lo0+lo1, lo2+lo3, hi0+hi1, hi2+hi3 | the same of the upper lanes]
      const __m256 v = _mm256_add_ps(_mm256_hadd_ps(lo[h][t], hi[h][t]), b);
      if (left >= kHalfRows) _mm256_storeu_ps(yt, v);
      else _mm256_maskstore_ps(yt, rm, v);
    }
  }
}

using TileFn = void (*)(const float*, size_t, int, const uint16_t* const*, const float*, float*, size_t, int,
                        const uint16_t* const*, bool);
// kTiles[(H - 1) * kTileTmax + (T - 1)] for H <= halves_for(T); the other entries are never called.
template <size_t... I>
constexpr auto make_tiles(std::index_sequence<I...>) {
  return std::array<TileFn, sizeof...(I)>{&half_panel_tile<int(I / kTileTmax) + 1, int(I % kTileTmax) + 1>...};
}
constexpr auto kTiles = make_tiles(std::make_index_sequence<4 * kTileTmax>{});

}  // namespace

void panels_bf16widen_avx2(const float* X, int n, const Bf16Panels& w, const float* bias, float* Y, int p0, int p1) {
  const int ntiles = (n + kTileTmax - 1) / kTileTmax;
  const int tbase = n / ntiles, textra = n % ntiles;
  const int tiles_tmax = tbase + (textra > 0 ? 1 : 0);
  const int k = w.k;
  const size_t ldx = size_t(k), ldy = size_t(w.m);
  // Half panels [h0, h1): the rows of panels [p0, p1) that exist (the last panel's second half may hold none).
  const int h0 = 2 * p0, h1 = std::min(2 * p1, (w.m + kHalfRows - 1) / kHalfRows);
  const bool to_l2 = !panel_prefetch_l1();
  for (int h = h0; h < h1;) {
    // The same half panels for every token tile of the group (tiles differ by one token at most), so that the
    // group's weights stream from memory once and the other tiles read them from cache.
    const int H = std::min(halves_for(tiles_tmax), h1 - h);
    const uint16_t* hp[4];
    for (int i = 0; i < H; ++i) hp[i] = half_panel(w, h + i);
    // While the first token tile runs, the half panels some groups ahead are prefetched: two groups at one token,
    // one when several tokens make each group last as long.
    const int ahead = panel_prefetch_groups(tiles_tmax > 1 ? 1 : 2);
    const uint16_t* pf[4];
    const bool prefetch = ahead > 0 && h + (ahead + 1) * H <= h1;
    if (prefetch)
      for (int i = 0; i < H; ++i) pf[i] = half_panel(w, h + ahead * H + i);
    int t0 = 0;
    for (int ti = 0; ti < ntiles; ++ti) {
      const int T = tbase + (ti < textra ? 1 : 0);
      kTiles[size_t((H - 1) * kTileTmax + (T - 1))](X + size_t(t0) * ldx, ldx, k, hp, bias ? bias + h * kHalfRows : nullptr,
                                                   Y + size_t(t0) * ldy + size_t(h) * kHalfRows, ldy,
                                                   w.m - h * kHalfRows, ti == 0 && prefetch ? pf : nullptr, to_l2);
      t0 += T;
    }
    h += H;
  }
}

}  // namespace specscope::cpu::detail

#pragma GCC pop_options
