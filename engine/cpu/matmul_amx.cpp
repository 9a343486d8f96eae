// BF16 weights through Intel AMX (TDPBF16PS), the default path of linear() for bf16 weights on CPUs that have it.
//
// Why: on the bf16 dot path (matmul_bf16dot.cpp) a tree step of 8 rows is bound by vdpbf16ps's arithmetic (an
// 8-token step of the default base cost 2.35x a one-token step on a 2-core Sapphire Rapids, 2026-12-05), while one
// tile multiply does 16 x 16 x 32 of the same bf16 products; with the tiles the step is bound by the weights' bytes
// again, as a one-token step is (1.40-1.44x there, bench/results/cpu_amx_2026-12-05/; 1.28-1.35x since the tiles
// are stored straight into the outputs and pairs of panels take up to 8 tokens, cpu_amx_direct_store_2026-12-05/).
//
// The panels of bf16_panels.h already are AMX's B layout: 16 consecutive pair slots of a panel are 16 rows of 64
// bytes, each the (k, k + 1) pairs of 16 output rows, so a weight tile is one tileloadd at stride 64 and nothing is
// repacked. The tokens' bf16 rows (to_bf16_rows, stride kp) are the A tiles, up to 16 tokens each, and C holds 16
// outputs of each token in f32.
//
// Numbers: the activations rounded to bf16 once (as on the bf16 dot path), products of bf16 exact in f32, sums in
// f32 (the tile unit flushes denormals), so the bf16 dot path's error bound holds: |fast - exact| <= 2^-8
// sum_i |w_i x_i| + (f32 rounding of the sums). The bits differ from vdpbf16ps's, which is why the path is chosen by
// the weight alone (amx_takes: its panels' pair slots a multiple of 16) and never by the number of tokens.
// Batch invariance: an output is one tile accumulator row, summed over the k blocks in order; a token's row of A
// meets only its own row of C, so its sums are the same whatever other tokens share the tile.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/cpu/matmul_amx.h"

#include "engine/cpu/bf16_panels.h"

// The target as a function attribute, which GCC and clang both honour (clang ignores `#pragma GCC target`).
#define SS_AMX __attribute__((target("amx-tile,amx-bf16")))

namespace specscope::cpu::detail {
namespace {

constexpr int kArchReqXcompPerm = 0x1023;  // arch_prctl: ask for an extended state component (Linux 5.16+)
constexpr int kXfeatureXtiledata = 18;

// Up to this many tokens a tile takes two panels with double-buffered operands (panel_pair), above it four
// (panel_group). With the C tiles stored straight into Y (panels_amx), pairs won up to 8 tokens on the default base,
// bench medians of 9 alternated three times: the 8-token step 0.78-0.81 ms against 0.84-0.85 in fours (1.33-1.35x a
// one-token step against 1.40-1.46x), 4 tokens and below unchanged; at 16 tokens pairs were no better there and
// slower on the 1B-shaped BF16 file (81-101 ms against 81-83), whose 8-token forward was the same either way
// (76.8-77.7 ms against 75.5-78.9). Through the old buffer-and-memcpy output pairs had lost at 8 tokens (0.85-0.91 ms
// against 0.80-0.83: bench/results/cpu_attention_cold_2026-12-05/notes.txt).
constexpr int kPairTilesMaxTokens = 8;

// ldtilecfg's 64-byte palette-1 layout.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Every tile 64 bytes wide; tiles below `token_tiles` (C and A) have M rows, one a token, the rest (B) 16 rows of
// weight pairs. panel_group: 0-3 C, the accumulators of four panels (M tokens x 16 outputs, f32), 4 A (M tokens x 32
// activations), 5-7 B (three panels' weights; the fourth reuses tile 5 after its product): token_tiles 5.
// panel_pair: 0-1 C, 2-3 A, 4-7 B: token_tiles 4.
SS_AMX void configure(int M, int token_tiles) {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.rows[t] = uint8_t(t < token_tiles ? M : 16), c.colsb[t] = 64;
  _tile_loadconfig(&c);
}

// The first P tiles are C: zeroed before a group, stored after it to out (`stride` floats a token), 16 outputs each.
template <int P>
SS_AMX void zero_c() {
  _tile_zero(0);
  if constexpr (P > 1) _tile_zero(1);
  if constexpr (P > 2) _tile_zero(2);
  if constexpr (P > 3) _tile_zero(3);
}
template <int P>
SS_AMX void store_c(float* out, size_t stride) {
  const long bytes = long(stride * sizeof(float));
  _tile_stored(0, out, bytes);
  if constexpr (P > 1) _tile_stored(1, out + 16, bytes);
  if constexpr (P > 2) _tile_stored(2, out + 32, bytes);
  if constexpr (P > 3) _tile_stored(3, out + 48, bytes);
}

// Panels of kLongPanelPairs pair slots or more (64 KB: the 1B-class matrices, k >= 2048, streamed from memory) are
// prefetched into L1 every line kLongPanelAhead bytes ahead. Without it the tiles streamed a 1B-shaped BF16 file's
// weights at 79% of the memory bound and one token took 76 ms, against 66 ms on the one-row vdpbf16ps kernel; 1-4 KB
// ahead, 63-66 ms (bench/results/cpu_amx_large_k_2026-12-05/). The default base's panels (12-32 KB, read from L3)
// measured no better with prefetches (session 35), so they keep none.
constexpr int kLongPanelPairs = 1024;
constexpr size_t kLongPanelAhead = 2048;

// The `lines` lines of each of the P panels from pair slot j on, kLongPanelAhead bytes ahead, into L1. Only
// panel_pair prefetches: in panel_group (5-16 tokens) it changed nothing measurable (the 1B file's 8-32-token
// forwards 72.6-74.8 / 77.1-78.7 / 144.2-144.5 ms with it against 73.4-75.1 / 78.0-79.8 / 146.2-160.1 without).
template <int P>
SS_AMX inline void prefetch_ahead(const uint16_t* b, size_t pe, int j, int lines, const char* end) {
  for (int q = 0; q < P; ++q) {
    const char* ahead = reinterpret_cast<const char*>(b + size_t(q) * pe + size_t(j) * 32) + kLongPanelAhead;
    for (int line = 0; line < lines && ahead + line * 64 < end; ++line) _mm_prefetch(ahead + line * 64, _MM_HINT_T0);
  }
}

// The P <= 4 panels from p on, for the M <= 16 tokens whose bf16 rows start at xb: C_q accumulates over the pair
// slots in blocks of 16 (32 k), in order, then goes to out [M, 16 * P] (out_stride floats a token).
template <int P>
SS_AMX void panel_group(const uint16_t* xb, size_t kp, const Bf16Panels& w, int p, float* out, size_t out_stride) {
  const size_t panel_elems = size_t(w.pairs) * 32;
  const uint16_t* b = w.panel(p);
  const long a_stride = long(kp * sizeof(uint16_t));
  zero_c<P>();
  for (int j = 0; j < w.pairs; j += 16) {
    _tile_loadd(4, xb + size_t(j) * 2, a_stride);
    _tile_loadd(5, b + size_t(j) * 32, 64);
    if constexpr (P > 1) _tile_loadd(6, b + panel_elems + size_t(j) * 32, 64);
    if constexpr (P > 2) _tile_loadd(7, b + 2 * panel_elems + size_t(j) * 32, 64);
    _tile_dpbf16ps(0, 4, 5);
    if constexpr (P > 1) _tile_dpbf16ps(1, 4, 6);
    if constexpr (P > 2) _tile_dpbf16ps(2, 4, 7);
    if constexpr (P > 3) {
      _tile_loadd(5, b + 3 * panel_elems + size_t(j) * 32, 64);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  store_c<P>(out, out_stride);
}

// Two panels, the k blocks two at a time: A in tiles 2 and 3, B in 4-5 and 6-7. Tiles are not renamed, so a load
// into a tile waits for the products that read it; with one set of A and B tiles (panel_group) each block's loads
// waited for the last block's products, and a few tokens, whose products are short, streamed the weights at 84% of
// the memory bound (the default base's one-token step 0.64-0.66 ms against 0.61-0.62 for these pairs). Each C tile
// still adds its blocks in order with the same products, so both kernels give the same bits and the choice may
// follow the number of tokens.
// kStream: the panels are long (kLongPanelPairs), and each iteration prefetches ahead. A template parameter, not a
// test in the loop: with the test there the default base's one-token step took 0.65-0.67 ms against 0.59-0.60.
template <int P, bool kStream>
SS_AMX void panel_pair(const uint16_t* xb, size_t kp, const Bf16Panels& w, int p, float* out, size_t out_stride) {
  const size_t pe = size_t(w.pairs) * 32;
  const uint16_t* b = w.panel(p);
  const long as = long(kp * sizeof(uint16_t));
  zero_c<P>();
  int j = 0;
  for (; j + 32 <= w.pairs; j += 32) {
    if constexpr (kStream)  // the 2 KB of each panel this iteration reads
      prefetch_ahead<P>(b, pe, j, 32, reinterpret_cast<const char*>(b + P * pe));
    _tile_loadd(2, xb + size_t(j) * 2, as);
    _tile_loadd(4, b + size_t(j) * 32, 64);
    if constexpr (P > 1) _tile_loadd(5, b + pe + size_t(j) * 32, 64);
    _tile_loadd(3, xb + size_t(j + 16) * 2, as);
    _tile_loadd(6, b + size_t(j + 16) * 32, 64);
    if constexpr (P > 1) _tile_loadd(7, b + pe + size_t(j + 16) * 32, 64);
    _tile_dpbf16ps(0, 2, 4);
    if constexpr (P > 1) _tile_dpbf16ps(1, 2, 5);
    _tile_dpbf16ps(0, 3, 6);
    if constexpr (P > 1) _tile_dpbf16ps(1, 3, 7);
  }
  if (j < w.pairs) {
    _tile_loadd(2, xb + size_t(j) * 2, as);
    _tile_loadd(4, b + size_t(j) * 32, 64);
    if constexpr (P > 1) _tile_loadd(5, b + pe + size_t(j) * 32, 64);
    _tile_dpbf16ps(0, 2, 4);
    if constexpr (P > 1) _tile_dpbf16ps(1, 2, 5);
  }
  store_c<P>(out, out_stride);
}

// panel_pair with the prefetch chosen at run time (kStream, once per group, outside the loop).
template <int P>
SS_AMX void panel_pair_for(bool stream, const uint16_t* xb, size_t kp, const Bf16Panels& w, int p, float* out,
                           size_t out_stride) {
  if (stream) panel_pair<P, true>(xb, kp, w, p, out, out_stride);
  else panel_pair<P, false>(xb, kp, w, p, out, out_stride);
}

}  // namespace

bool amx_bf16_usable() {
  static const bool usable = [] {
    // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE (read directly: clang 14's __builtin_cpu_supports knows
    // neither name). The OS's part is the arch_prctl: it fails where the kernel does not manage the tile state.
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22)) || !(d & (1u << 24))) return false;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
}

SS_AMX float amx_peak_loop(int iterations) {
  // Four full 16 x 16 accumulators against operands held in tiles: nothing but the tile unit's multiply-adds.
  configure(16, 5);
  alignas(64) static const uint16_t ones[16 * 32] = {};
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  zero_c<4>();
  for (int i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 5);
    _tile_dpbf16ps(1, 4, 6);
    _tile_dpbf16ps(2, 4, 5);
    _tile_dpbf16ps(3, 4, 6);
  }
  alignas(64) float c[16 * 16];
  _tile_stored(0, c, 64);
  _tile_release();
  return c[0];
}

bool amx_takes(const Bf16Panels& w) { return amx_takes_k(w.k); }

SS_AMX void panels_amx(const uint16_t* xb, size_t kp, int n, const Bf16Panels& w, const float* bias, float* Y, int p0,
                int p1) {
  alignas(64) float part[16 * 64];  // a group that holds the last, partial panel: its tiles before the copy
  for (int t0 = 0; t0 < n; t0 += 16) {
    const int M = std::min(16, n - t0);
    const bool pairs = M <= kPairTilesMaxTokens, stream = w.pairs >= kLongPanelPairs;
    configure(M, pairs ? 4 : 5);
    for (int p = p0; p < p1;) {
      const int P = std::min(pairs ? 2 : 4, p1 - p);
      const int cols = std::min(16 * P, w.m - 16 * p);
      // Whole panels go from the tiles straight into Y's rows (stride m). Through a buffer and a memcpy a token and
      // group, the copies were ~4% of an 8-token step's samples on the default base and its linear layers took
      // 0.83-0.93 ms at n = 8 against 0.65-0.68 at n = 1 (matmul_bench --model base).
      const bool direct = cols == 16 * P;
      float* out = direct ? Y + size_t(t0) * size_t(w.m) + size_t(p) * 16 : part;
      const size_t stride = direct ? size_t(w.m) : 64;
      // Software prefetch only for long panels (kLongPanelPairs) in panel_pair. For the default base's short ones, one
      // or two groups ahead, every line or one in two or four, into L1 or L2, each measured no better than none on
      // Sapphire Rapids (with panel_group alone: the one-token step 0.66-0.73 ms in every case).
      const uint16_t* x = xb + size_t(t0) * kp;
      if (pairs) {
        if (P == 2) panel_pair_for<2>(stream, x, kp, w, p, out, stride);
        else panel_pair_for<1>(stream, x, kp, w, p, out, stride);
      } else {
        switch (P) {
          case 4: panel_group<4>(x, kp, w, p, out, stride); break;
          case 3: panel_group<3>(x, kp, w, p, out, stride); break;
          case 2: panel_group<2>(x, kp, w, p, out, stride); break;
          default: panel_group<1>(x, kp, w, p, out, stride); break;
        }
      }
      for (int t = 0; t < M; ++t) {
        float* y = Y + size_t(t0 + t) * size_t(w.m) + size_t(p) * 16;
        const float* o = direct ? y : part + size_t(t) * 64;
        if (bias)  // o + b, the same sum whether o sits in Y already or in the buffer
          for (int c = 0; c < cols; ++c) y[c] = o[c] + bias[size_t(p) * 16 + size_t(c)];
        else if (!direct)
          std::memcpy(y, o, sizeof(float) * size_t(cols));
      }
      p += P;
    }
    _tile_release();  // a thread that holds no tile data saves no 8 KB of it at each context switch
  }
}

}  // namespace specscope::cpu::detail

