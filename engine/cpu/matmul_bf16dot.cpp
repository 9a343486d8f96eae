// BF16 weights through vdpbf16ps (AVX512-BF16): the default path of linear() for bf16 weights on CPUs that have
// it. Each token row of X is rounded to bf16 once per call (round to nearest even), then every 32-element chunk of
// a weight row is dotted with the matching chunk of each token in one instruction, pairs summed into f32 lanes:
// half the instructions of widening the weights to f32, and no widening at all. Only called after a run-time check
// (matmul.cpp). Everything below the pragma is compiled for that target; the standard headers are included above
// it so that no inline library code is compiled for AVX-512 by this file.
//
// Batch invariance: a token's outputs are one accumulation per (row, lane) over the chunks in order, then the
// same fixed reduction, whatever the number of tokens in the call or the tile the token falls in.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "engine/cpu/matmul_bf16dot.h"

#include "engine/cpu/bf16_panels.h"
#include "engine/cpu/matmul_kernels.h"

#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
#include "engine/cpu/avx512_reduce4.h"  // after the target pragma: compiled for AVX-512 here

namespace specscope::cpu::detail {
namespace {

constexpr int kTmax = 6;  // tokens per tile: 4 rows x 6 tokens = 24 accumulators + 4 weights + 1 token
#define SS_INLINE __attribute__((always_inline)) inline
#define SS_UNROLL _Pragma("GCC unroll 8")

SS_INLINE __m512bh as_bh(__m512i v) { return (__m512bh)v; }

// Keeps a loaded weight vector in a register for all the tile's tokens. GCC allocated some tiles (4 rows x 3 tokens)
// in zmm0-15 alone and loaded each weight vector again from memory for every token; the value opaque to it, it keeps
// the one load.
SS_INLINE void keep_in_register(__m512i& v) { __asm__("" : "+v"(v)); }

// Y[t, r] = sum_k xb[t, k] w[r, k] (+ bias[r]) for R <= 4 weight rows and T tokens. xb rows are zero-padded to
// kp (a multiple of 32) elements; the weights' last partial chunk is read with a mask. With `prefetch`, the lines of
// the rows there are prefetched at each element kk where (kk & pf_mask) == 0 (0: every line).
template <int R, int T>
void tile(const uint16_t* xb, size_t kp, int k, const uint16_t* w, size_t ldw, const float* bias, float* y, size_t ldy,
          const uint16_t* prefetch, int pf_mask) {
  __m512 acc[R][T];
  SS_UNROLL for (int r = 0; r < R; ++r)
    SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  int kk = 0;
  for (; kk + 32 <= k; kk += 32) {
    if (prefetch && (kk & pf_mask) == 0)
      SS_UNROLL for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(prefetch + size_t(r) * ldw + kk), _MM_HINT_T1);
    __m512i wv[R];
    SS_UNROLL for (int r = 0; r < R; ++r) {
      wv[r] = _mm512_loadu_si512(w + size_t(r) * ldw + kk);
      keep_in_register(wv[r]);
    }
    SS_UNROLL for (int t = 0; t < T; ++t) {
      const __m512i xv = _mm512_loadu_si512(xb + size_t(t) * kp + kk);
      SS_UNROLL for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], as_bh(wv[r]), as_bh(xv));
    }
  }
  if (kk < k) {
    const __mmask32 m = __mmask32((uint64_t(1) << (k - kk)) - 1u);
    __m512i wv[R];
    SS_UNROLL for (int r = 0; r < R; ++r) wv[r] = _mm512_maskz_loadu_epi16(m, w + size_t(r) * ldw + kk);
    SS_UNROLL for (int t = 0; t < T; ++t) {
      const __m512i xv = _mm512_loadu_si512(xb + size_t(t) * kp + kk);
      SS_UNROLL for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], as_bh(wv[r]), as_bh(xv));
    }
  }
  const __mmask8 rm = __mmask8((1u << R) - 1u);
  const __m128 b = bias ? _mm_maskz_loadu_ps(rm, bias) : _mm_setzero_ps();
  const __m512 z = _mm512_setzero_ps();
  SS_UNROLL for (int t = 0; t < T; ++t) {
    __m128 s = reduce4(acc[0][t], R > 1 ? acc[R > 1 ? 1 : 0][t] : z, R > 2 ? acc[R > 2 ? 2 : 0][t] : z,
                       R > 3 ? acc[R > 3 ? 3 : 0][t] : z);
    s = _mm_add_ps(s, b);
    float* yt = y + size_t(t) * ldy;
    if constexpr (R == 4) _mm_storeu_ps(yt, s);
    else _mm_mask_storeu_ps(yt, rm, s);
  }
}

using TileFn = void (*)(const uint16_t*, size_t, int, const uint16_t*, size_t, const float*, float*, size_t,
                        const uint16_t*, int);
template <size_t... I>
constexpr auto make_tiles(std::index_sequence<I...>) {
  return std::array<TileFn, sizeof...(I)>{&tile<int(I / kTmax) + 1, int(I % kTmax) + 1>...};
}
constexpr auto kTiles = make_tiles(std::make_index_sequence<4 * kTmax>{});

// Y[t, 16p + lane] for P <= 4 panels and T <= 8 tokens from panel-packed weights (bf16_panels.h): each accumulator
// holds 16 output rows of one token, added pair of k by pair of k in order, so nothing is summed across lanes and an
// output's sum is the same sequence whatever T is.
// Prefetches of several tokens' tiles go to the first-level cache unless `to_l2`: such a tile computes long enough
// per line for the lines to arrive. The default base's 8-token step, in one process, 30 rounds, L1 against L2: 0.90-0.98x
// the time in each of five runs on Zen 5 (48 KB L1d), better in 17-29 of 30 rounds (bench/results/cpu_base_step8_
// 2026-12-02/); on Zen 4 (32 KB) L1 cost 1.12x at 8 tokens, so the default follows the cache's size
// (panel_prefetch_l1 in matmul_kernels.h). One token streams faster into L2 (rows_bf16dot's note below).
template <int P, int T>
void panel_tile(const uint16_t* xb, size_t kp, const uint16_t* panels, size_t panel_elems, int pairs, int rows_left,
                const float* bias, float* y, size_t ldy, const uint16_t* prefetch, bool to_l2) {
  __m512 acc[P][T];
  SS_UNROLL for (int p = 0; p < P; ++p)
    SS_UNROLL for (int t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  for (int j = 0; j < pairs; ++j) {
    // One token streams weights at the memory's pace, and every other line (the adjacent-line prefetcher brings
    // the rest) measured faster there; with more tokens the tile computes long enough per line for the
    // hardware to fall behind, and every line measured faster.
    if (prefetch && (T > 1 || (j & 1) == 0)) {
      SS_UNROLL for (int p = 0; p < P; ++p) {
        const char* line = reinterpret_cast<const char*>(prefetch + size_t(p) * panel_elems + size_t(j) * 32);
        if (T > 1 && !to_l2) _mm_prefetch(line, _MM_HINT_T0);
        else _mm_prefetch(line, _MM_HINT_T1);
      }
    }
    __m512i wv[P];
    SS_UNROLL for (int p = 0; p < P; ++p) {
      wv[p] = _mm512_load_si512(panels + size_t(p) * panel_elems + size_t(j) * 32);
      keep_in_register(wv[p]);
    }
    SS_UNROLL for (int t = 0; t < T; ++t) {
      int32_t pair;
      __builtin_memcpy(&pair, xb + size_t(t) * kp + size_t(j) * 2, sizeof pair);
      const __m512i xv = _mm512_set1_epi32(pair);
      SS_UNROLL for (int p = 0; p < P; ++p) acc[p][t] = _mm512_dpbf16_ps(acc[p][t], as_bh(wv[p]), as_bh(xv));
    }
  }
  SS_UNROLL for (int p = 0; p < P; ++p) {
    const int left = rows_left - p * 16;
    if (left <= 0) break;
    const __mmask16 rm = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(rm, bias + p * 16) : _mm512_setzero_ps();
    SS_UNROLL for (int t = 0; t < T; ++t)
      _mm512_mask_storeu_ps(y + size_t(t) * ldy + size_t(p) * 16, rm, _mm512_add_ps(acc[p][t], b));
  }
}

// Up to 8 tokens in one pass over the panels (8 x 3 accumulators): with two passes of 4, the second read the
// panels again from L2 while nothing streamed, and an 8-token step of the default base cost the sum of a
// memory-bound and a compute-bound pass (bench/results/panel_tiles_2026-11-28.txt).
constexpr int kPanelTmax = 8;
using PanelTileFn = void (*)(const uint16_t*, size_t, const uint16_t*, size_t, int, int, const float*, float*, size_t,
                             const uint16_t*, bool);
template <size_t... I>
constexpr auto make_panel_tiles(std::index_sequence<I...>) {
  return std::array<PanelTileFn, sizeof...(I)>{&panel_tile<int(I / kPanelTmax) + 1, int(I % kPanelTmax) + 1>...};
}
constexpr auto kPanelTiles = make_panel_tiles(std::make_index_sequence<4 * kPanelTmax>{});

}  // namespace

void to_bf16_rows(const float* X, int n, int k, uint16_t* xb, size_t kp) {
  for (int t = 0; t < n; ++t) {
    const float* x = X + size_t(t) * k;
    uint16_t* o = xb + size_t(t) * kp;
    int i = 0;
    for (; i + 32 <= k; i += 32) {
      const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
      _mm512_storeu_si512(o + i, (__m512i)h);
    }
    for (; i < int(kp); i += 32) {  // the last partial chunk and the zero padding up to kp
      const int left = std::max(0, k - i);
      const __mmask16 lo = __mmask16((1u << std::min(16, left)) - 1u);
      const __mmask16 hi = __mmask16((1u << std::clamp(left - 16, 0, 16)) - 1u);
      const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, x + i + 16), _mm512_maskz_loadu_ps(lo, x + i));
      _mm512_storeu_si512(o + i, (__m512i)h);
    }
  }
}

void rows_bf16dot(const float* /*X*/, const uint16_t* xb, size_t kp, int n, int k, const uint16_t* W,
                  const float* bias, float* Y, int m, int r0, int r1) {
  if (n == 1 && one_row_stream(k, sizeof(uint16_t))) {
    // One token over long rows: one row at a time (matmul_kernels.h). tile<1, 1> sums a row exactly as the 4-row
    // tiles do (one accumulator per row, the same reduction). Measured, the 1B model's linear layers at n = 1 with
    // the two kernels alternated call by call: 34.0 / 52.3 / 52.7 / 57.5 ms against 39.0 / 58.5 / 53.4 / 59.2.
    const int ahead = one_row_prefetch_rows(k, sizeof(uint16_t));
    const int mask = one_row_prefetch_mask(one_row_prefetch_lines(OneRowKernel::Bf16Dot), sizeof(uint16_t));
    for (int r = r0; r < r1; ++r)
      kTiles[0](xb, kp, k, W + size_t(r) * k, size_t(k), bias ? bias + r : nullptr, Y + r, size_t(m),
                mask >= 0 && r + ahead < r1 ? W + size_t(r + ahead) * k : nullptr, mask);
    return;
  }
  const int ntiles = (n + kTmax - 1) / kTmax;
  const int tbase = n / ntiles, textra = n % ntiles;
  for (int r = r0; r < r1; r += 4) {
    const int R = std::min(4, r1 - r);
    // The rows two groups ahead are prefetched while the first token tile runs (one-token decoding is a stream of
    // weights from memory; the hardware prefetchers alone leave a thread short of the bandwidth).
    // Into L2 (T1): prefetching into L1 (T0) halved the stream from memory on Zen 4 (26M-parameter bf16 rows, one
    // thread: 12 GB/s with T0 against 24 GB/s with T1 or T2; the distance, 8-32 rows, mattered less).
    const uint16_t* pf = r + 8 + 4 <= r1 ? W + size_t(r + 8) * k : nullptr;
    int t0 = 0;
    for (int ti = 0; ti < ntiles; ++ti) {
      const int T = tbase + (ti < textra ? 1 : 0);
      kTiles[size_t((R - 1) * kTmax + (T - 1))](xb + size_t(t0) * kp, kp, k, W + size_t(r) * k, size_t(k),
                                                bias ? bias + r : nullptr, Y + size_t(t0) * m + r, size_t(m),
                                                ti == 0 ? pf : nullptr, 0);
      t0 += T;
    }
  }
}

void panels_bf16dot(const uint16_t* xb, size_t kp, int n, const Bf16Panels& w, const float* bias, float* Y, int p0,
                    int p1) {
  const int ntiles = (n + kPanelTmax - 1) / kPanelTmax;
  const int tbase = n / ntiles, textra = n % ntiles;
  const size_t panel_elems = size_t(w.pairs) * 32;
  // Panels per tile: up to 24 accumulators (P x T) beside the P weight vectors and the broadcast; the same P for
  // every token tile of a group of panels.
  const int tiles_tmax = tbase + (textra > 0 ? 1 : 0);
  const bool to_l2 = !panel_prefetch_l1();
  for (int p = p0; p < p1;) {
    const int P = std::min({4, 24 / tiles_tmax, p1 - p});
    // While the first token tile runs, the panels some groups ahead are prefetched (one-token decoding streams
    // them from memory): two groups at one token, one group when several tokens make each group last as long.
    const int ahead = panel_prefetch_groups(tiles_tmax > 1 ? 1 : 2);
    const uint16_t* pf = ahead > 0 && p + (ahead + 1) * P <= p1 ? w.panel(p + ahead * P) : nullptr;
    int t0 = 0;
    for (int ti = 0; ti < ntiles; ++ti) {
      const int T = tbase + (ti < textra ? 1 : 0);
      kPanelTiles[size_t((P - 1) * kPanelTmax + (T - 1))](xb + size_t(t0) * kp, kp, w.panel(p), panel_elems, w.pairs,
                                                         w.m - p * 16, bias ? bias + size_t(p) * 16 : nullptr,
                                                         Y + size_t(t0) * size_t(w.m) + size_t(p) * 16, size_t(w.m),
                                                         ti == 0 ? pf : nullptr, to_l2);
      t0 += T;
    }
    p += P;
  }
}

}  // namespace specscope::cpu::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options
