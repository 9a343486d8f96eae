// Internal to engine/cpu: bf16 weights read from their panels (bf16_panels.h) and widened to f32 in registers, the
// default path of linear() for panel-packed bf16 weights on CPUs without AVX512-BF16 (matmul.cpp's bf16widen_active).
// Written once over the SIMD mapping S (simd_map.h: Avx2, Avx512) and included by each instruction set's kernel file
// (matmul_avx2.cpp, matmul_avx512.cpp) after its target pragma, as matmul_rows.h is.
//
// The row-major widening tiles (matmul_rows.h) end every (output row, token) in a horizontal sum and widen each weight
// vector with vpmovzxwd + vpslld: with AVX2 forced, the default base's 8-token linear layers ran at 62% of the FMA
// peak. Here a slice of a panel (S::kWidth rows: half a panel on AVX2, a whole one on AVX-512) holds k = 2j and
// 2j + 1 of its rows side by side in one aligned load; two unpacks with zero widen it exactly to f32 as (even k,
// odd k) lane pairs of alternate row pairs (S::widen_pairs), and one 64-bit broadcast of a token's activations at 2j,
// 2j + 1 multiplies both. Every accumulator thus holds, for its rows, a chain over the even k and a chain over the
// odd k; the two are added once at the end (S::pair_sums, which also puts the rows in order).
//
// Two chains an output also keep the FMA units busy: each accumulator takes one FMA a pair, so a tile of T tokens
// runs 2T independent chains per slice (AVX2, T = 6: 12, above the 8 that FMA latency x throughput asks for).
// Measured while writing it (the default base, AVX2 forced on a Zen 4 host, medians of 2000 forwards): one chain an
// output (8 chains a tile) ran 8 tokens no faster than the row tiles (1.83-2.13 against 1.63-2.01 ms); tiles of at
// most 4 tokens ran 6 as 3 + 3 at 1.44 ms, one tile of 6 at 1.21. Against the row tiles (the exact path) in one
// process (kernel_ab --settings 'default;exact=1,memory=copy'; bench/results/cpu_avx2_bf16_panels_2026-12-04/), AVX2
// forced: a forward of 1 / 4 / 8 / 16 new tokens took 1.31 / 1.09 / 1.18 / 1.27x the time with the row tiles (these
// faster in 12 / 11 / 12 / 12 of 12 rounds); decoding 2,173 against 1,673 tok/s.
//
// Batch invariance: an output's sum (its even chain plus its odd chain, each over k in order, then the bias) is the
// same sequence whatever the number of tokens, the tile its token falls in, the thread, or the instruction set (AVX2
// and AVX-512 give the same bits). Exactness: exact weights, f32 activations and f32 FMAs (linear_reference's sum up
// to f32 rounding in this order).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "engine/cpu/bf16_panels.h"
#include "engine/cpu/matmul_kernels.h"
#include "engine/cpu/simd_map.h"

namespace specscope::cpu::detail {
namespace {  // internal to each including file: each compiles it for its own target

// Element (pair 0, lane 0) of slice s (rows s * kWidth ...): a panel's pair slot holds 16 rows x 2 k.
template <class S>
SS_INLINE const uint16_t* panel_slice(const Bf16Panels& w, int s) {
  const int row = s * S::kWidth;
  return w.panel(row / kPanelRows) + (row % kPanelRows) * 2;
}

// Y[t, kWidth (s0 + i) + lane] for the H slices sl[0..H) and T tokens; `rows_left` rows from the first slice's first
// row exist. With `prefetch` (the slices some tiles ahead), their pair slots are fetched as the loop goes.
template <class S, int H, int T>
void widen_panel_tile(const float* x, size_t ldx, int k, const uint16_t* const* sl, const float* bias, float* y,
                      size_t ldy, int rows_left, const uint16_t* const* prefetch, bool to_l2) {
  using V = typename S::V;
  constexpr int W = S::kWidth;
  V lo[H][T], hi[H][T];
  SS_UNROLL for (int h = 0; h < H; ++h)
    SS_UNROLL for (int t = 0; t < T; ++t) lo[h][t] = hi[h][t] = S::zero();
  const int pairs = k / 2;
  for (int j = 0; j < pairs; ++j) {
    // One token streams weights at the memory's pace (the adjacent-line prefetcher brings every other line, as in
    // matmul_bf16dot.cpp); several tokens compute long enough per line for every line to be asked for.
    if (prefetch && (T > 1 || (j & 1) == 0)) {
      SS_UNROLL for (int h = 0; h < H; ++h) {
        const char* line = reinterpret_cast<const char*>(prefetch[h] + size_t(j) * 32);
        if (T > 1 && !to_l2) _mm_prefetch(line, _MM_HINT_T0);
        else _mm_prefetch(line, _MM_HINT_T1);
      }
    }
    V wl[H], wh[H];
    SS_UNROLL for (int h = 0; h < H; ++h) S::widen_pairs(sl[h] + size_t(j) * 32, wl[h], wh[h]);
    SS_UNROLL for (int t = 0; t < T; ++t) {
      const V xp = S::pair_broadcast(x + size_t(t) * ldx + size_t(j) * 2);
      SS_UNROLL for (int h = 0; h < H; ++h) {
        lo[h][t] = S::fmadd(wl[h], xp, lo[h][t]);
        hi[h][t] = S::fmadd(wh[h], xp, hi[h][t]);
      }
    }
  }
  if (k & 1) {  // the last k alone: its pair's second element is padding, and x has no element past k - 1
    SS_UNROLL for (int h = 0; h < H; ++h) {
      V wl, wh;
      S::widen_pairs(sl[h] + size_t(pairs) * 32, wl, wh);
      SS_UNROLL for (int t = 0; t < T; ++t) {
        const V xe = S::even_broadcast(x + size_t(t) * ldx + size_t(pairs) * 2);
        lo[h][t] = S::fmadd(wl, xe, lo[h][t]);
        hi[h][t] = S::fmadd(wh, xe, hi[h][t]);
      }
    }
  }
  SS_UNROLL for (int h = 0; h < H; ++h) {
    const int left = rows_left - h * W;
    if (left <= 0) break;
    const typename S::Tail m = S::tail(std::min(left, W));
    const V b = bias ? (left >= W ? S::load(bias + h * W) : S::load(bias + h * W, m)) : S::zero();
    SS_UNROLL for (int t = 0; t < T; ++t) {
      float* yt = y + size_t(t) * ldy + size_t(h) * W;
      const V v = S::pair_sums(lo[h][t], hi[h][t]) + b;
      if (left >= W) S::store(yt, v);
      else S::store(yt, m, v);
    }
  }
}

template <class S>
using WidenTileFn = void (*)(const float*, size_t, int, const uint16_t* const*, const float*, float*, size_t, int,
                             const uint16_t* const*, bool);
// table[(H - 1) * kPairTileTmax + (T - 1)] for H <= S::pair_slices(T); the other entries are never called.
template <class S, size_t... I>
constexpr auto make_widen_tiles(std::index_sequence<I...>) {
  constexpr int kT = S::kPairTileTmax;
  return std::array<WidenTileFn<S>, sizeof...(I)>{&widen_panel_tile<S, int(I / kT) + 1, int(I % kT) + 1>...};
}
template <class S>
constexpr auto kWidenTiles = make_widen_tiles<S>(std::make_index_sequence<4 * S::kPairTileTmax>{});

// Y[:, 16 p0 : 16 p1) = X W^T (+ bias) from W's panels; X [n, w.k] f32, Y [n, w.m].
template <class S>
void widen_panels(const float* X, int n, const Bf16Panels& w, const float* bias, float* Y, int p0, int p1) {
  constexpr int W = S::kWidth, kT = S::kPairTileTmax;
  const int ntiles = (n + kT - 1) / kT;
  const int tbase = n / ntiles, textra = n % ntiles;
  const int tiles_tmax = tbase + (textra > 0 ? 1 : 0);
  const int k = w.k;
  const size_t ldx = size_t(k), ldy = size_t(w.m);
  // Slices [s0, s1): the rows of panels [p0, p1) that exist (on AVX2 the last panel's second half may hold none).
  const int s0 = p0 * (kPanelRows / W), s1 = std::min(p1 * (kPanelRows / W), (w.m + W - 1) / W);
  const bool to_l2 = !panel_prefetch_l1();
  for (int s = s0; s < s1;) {
    // The same slices for every token tile of the group (tiles differ by one token at most), so that the group's
    // weights stream from memory once and the other tiles read them from cache.
    const int H = std::min(tiles_tmax == 1 ? widen_slices_one_token(S::pair_slices(1)) : S::pair_slices(tiles_tmax),
                           s1 - s);
    const uint16_t* sl[4];
    for (int i = 0; i < H; ++i) sl[i] = panel_slice<S>(w, s + i);
    // While the first token tile runs, the slices some groups ahead are prefetched: two groups at one token, one
    // when several tokens make each group last as long.
    const int ahead = panel_prefetch_groups(tiles_tmax > 1 ? 1 : 2);
    const bool prefetch = ahead > 0 && s + (ahead + 1) * H <= s1;
    const uint16_t* pf[4];
    if (prefetch)
      for (int i = 0; i < H; ++i) pf[i] = panel_slice<S>(w, s + ahead * H + i);
    int t0 = 0;
    for (int ti = 0; ti < ntiles; ++ti) {
      const int T = tbase + (ti < textra ? 1 : 0);
      kWidenTiles<S>[size_t((H - 1) * kT + (T - 1))](X + size_t(t0) * ldx, ldx, k, sl, bias ? bias + s * W : nullptr,
                                                     Y + size_t(t0) * ldy + size_t(s) * W, ldy, w.m - s * W,
                                                     ti == 0 && prefetch ? pf : nullptr, to_l2);
      t0 += T;
    }
    s += H;
  }
}

}  // namespace
}  // namespace specscope::cpu::detail
