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
// GCC 12 warns about the deliberately undefined vectors inside its own AVX-512 intrinsics.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#include "engine/cpu/avx512_reduce4.h"  // after the target pragma: compiled for AVX-512 here

namespace specscope::cpu::detail {
namespace {

constexpr int kTmax = 6;  // tokens per register tile: 4 rows x 6 tokens = 24 accumulators + 6 x + 1 w

#define SS_INLINE __attribute__((always_inline)) inline
#define SS_UNROLL _Pragma("GCC unroll 8")

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

// Y[t, r] = sum_k x[t, k] * w[r, k] (+ bias[r]) (+ Y[t, r] when accumulating) for R <= 4 weight rows and T
// tokens; every weight vector is loaded (and widened) once for the T tokens. x rows at stride ldx, w rows at
// ldw, y rows at ldy. With Store, the widened weights are also written to wout (rows at stride ldw_out) for
// the next token tiles to reuse.
template <int R, int T, class L, bool Store>
void tile(const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw, const float* bias, float* y,
          size_t ldy, bool accumulate, float* wout, size_t ldw_out, RowPrefetch* pf) {
  __m512 acc[R][T];
  SS_UNROLL for (int r = 0; r < R; ++r)
    SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  // The k % 16 tail first, with masked loads (nothing past the end is read), then full vectors; in this
  // order the accumulators stay in registers up to the reduction.
  int kk = k & 15;
  if (kk) {
    const __mmask16 m = __mmask16((1u << kk) - 1u);
    __m512 xv[T];
    SS_UNROLL for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x + size_t(t) * ldx);
    SS_UNROLL for (int r = 0; r < R; ++r) {
      const __m512 wv = L::load_tail(w + size_t(r) * ldw, m);
      if constexpr (Store) _mm512_mask_storeu_ps(wout + size_t(r) * ldw_out, m, wv);
      SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm512_mul_ps(wv, xv[t]);
    }
  }
  TileRowPrefetch lpf(pf);  // the prefetch state in registers through the loop (written back when the tile ends)
  for (; kk < k; kk += 16) {
    lpf.step();
    __m512 xv[T];
    SS_UNROLL for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x + size_t(t) * ldx + kk);
    SS_UNROLL for (int r = 0; r < R; ++r) {
      const __m512 wv = L::load(w + size_t(r) * ldw + kk);
      if constexpr (Store) _mm512_storeu_ps(wout + size_t(r) * ldw_out + kk, wv);
      SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
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
    if (accumulate) s = _mm_add_ps(s, R == 4 ? _mm_loadu_ps(yt) : _mm_maskz_loadu_ps(rm, yt));
    if constexpr (R == 4)
      _mm_storeu_ps(yt, s);
    else
      _mm_mask_storeu_ps(yt, rm, s);
  }
}

template <class L>
using TileFn = void (*)(const float*, size_t, int, const typename L::T*, size_t, const float*, float*, size_t, bool,
                        float*, size_t, RowPrefetch*);

template <class L, bool Store, size_t... I>
constexpr auto make_tile_table(std::index_sequence<I...>) {
  return std::array<TileFn<L>, sizeof...(I)>{&tile<int(I / kTmax) + 1, int(I % kTmax) + 1, L, Store>...};
}
// table[(R - 1) * kTmax + (T - 1)]
template <class L, bool Store>
constexpr auto kTiles = make_tile_table<L, Store>(std::make_index_sequence<4 * kTmax>{});

// One tile of R rows x T tokens; with wout, the widened weights are also stored there.
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

// One token, one long f16 row (one_row_stream, matmul_kernels.h): y = x . w (+ bias), summed exactly as the 4-row
// tiles sum a row (the k blocks of k_block(k), each one accumulator from its k % 16 tail on, the same reduction, the
// blocks' sums added in order through y), but in one call and one sequential stream, with the line
// kOneRowPrefetchBytes ahead prefetched when `prefetch`. Per row, through the tiles, each 1 KB block cost a call, a
// reduction and a store: one row at a time that way measured slower than 4 rows, while this loop streams faster.
void one_row_f16(const float* x, int k, const uint16_t* w, const float* bias, float* y, bool prefetch) {
  const int KC = k_block(k);
  const __m512 z = _mm512_setzero_ps();
  float sum = 0.f;
  for (int kb = 0; kb < k; kb += KC) {
    const int kl = std::min(KC, k - kb);
    const float* xb = x + kb;
    const uint16_t* wb = w + kb;
    __m512 acc = z;
    int kk = kl & 15;
    if (kk) {
      const __mmask16 m = __mmask16((1u << kk) - 1u);
      acc = _mm512_mul_ps(WF16::load_tail(wb, m), _mm512_maskz_loadu_ps(m, xb));
    }
    for (; kk < kl; kk += 16) {
      if (prefetch && ((kb + kk) & 31) == 0) _mm_prefetch(reinterpret_cast<const char*>(wb + kk) + kOneRowPrefetchBytes, _MM_HINT_T1);
      acc = _mm512_fmadd_ps(WF16::load(wb + kk), _mm512_loadu_ps(xb + kk), acc);
    }
    float s = _mm_cvtss_f32(reduce4(acc, z, z, z));
    s = s + (kb == 0 && bias ? *bias : 0.f);
    sum = kb == 0 ? s : s + sum;
  }
  *y = sum;
}

template <class L>
void rows_impl(const LinearArgs& a, int r0, int r1, float* scratch) {
  using T_ = typename L::T;
  const int n = a.n, k = a.k, m = a.m;
  const T_* W = static_cast<const T_*>(a.W);
  const size_t ldx = size_t(k), ldy = size_t(m);
  if constexpr (std::is_same_v<L, WF16>) {
    if (n == 1 && one_row_stream(k, sizeof(T_))) {
      const int ahead = one_row_prefetch_rows(k, sizeof(T_));
      for (int r = r0; r < r1; ++r)
        one_row_f16(a.X, k, W + size_t(r) * k, a.bias ? a.bias + r : nullptr, a.Y + r, r + ahead < r1);
      return;
    }
  }
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
        const int steps = std::max(1, k / 16);
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
  // every token tile runs over it; tiles are balanced (n = 8 -> 4 + 4, not 6 + 2).
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
          const int64_t steps = int64_t(ntiles) * ((pr + 3) / 4) * std::max(1, kl / 16);
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

#pragma GCC diagnostic pop
#pragma GCC pop_options
