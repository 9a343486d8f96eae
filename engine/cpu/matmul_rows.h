// Internal to engine/cpu: the f32/f16/bf16 widening kernels of linear(), written once over the SIMD mapping S
// (simd_map.h: Avx2, Avx512). Included by each instruction set's kernel file (matmul_avx2.cpp, matmul_avx512.cpp)
// after simd_map.h, so it compiles for that file's target there.
//
// Every weight vector is widened to f32 exactly and multiplied in f32, so results equal the dequantized model's.
// A token's outputs are summed in the same k blocks (k_block, a function of k and the weight type) whatever the
// number of tokens in the call, so a draft-tree row gets exactly the logits it would get alone (batch invariance,
// which greedy losslessness rests on).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "engine/cpu/matmul_kernels.h"
#include "engine/cpu/simd_map.h"

namespace specscope::cpu::detail {
namespace {  // internal to each including file: each compiles it for its own target

// Y[t, r] = sum_k x[t, k] * w[r, k] (+ bias[r]) (+ Y[t, r] when accumulating) for R <= 4 weight rows and T
// tokens; every weight vector is loaded (and widened) once for the T tokens. x rows at stride ldx, w rows at
// ldw, y rows at ldy. With Store, the widened weights are also written to wout (rows at stride ldw_out) for
// the next token tiles to reuse; with pf, lines of upcoming weights are prefetched as it goes.
template <class S, int R, int T, class L, bool Store>
void tile(const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw, const float* bias, float* y,
          size_t ldy, bool accumulate, float* wout, size_t ldw_out, RowPrefetch* pf) {
  using V = typename S::V;
  V acc[R][T];
  SS_UNROLL for (int r = 0; r < R; ++r)
    SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = S::zero();
  // The k % width tail first, masked (nothing past the end is read), then full vectors; in this order the
  // accumulators stay in registers up to the reduction.
  int kk = k & (S::kWidth - 1);
  if (kk) {
    const typename S::Tail m = S::tail(kk);
    V xv[T];
    SS_UNROLL for (int t = 0; t < T; ++t) xv[t] = S::load(x + size_t(t) * ldx, m);
    SS_UNROLL for (int r = 0; r < R; ++r) {
      const V wv = L::load(w + size_t(r) * ldw, m);
      if constexpr (Store) S::store(wout + size_t(r) * ldw_out, m, wv);
      SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = S::mul(wv, xv[t]);
    }
  }
  TileRowPrefetch lpf(pf);  // the prefetch state in registers through the loop (written back when the tile ends)
  // The T token vectors in registers beside the accumulators where they fit (each weight vector then used once, as
  // it is widened); otherwise the R widened weight vectors, and each token vector loaded as it is used (AVX2's
  // 3 x 4 tile). Either way the same products are added in the same order.
  constexpr bool kTokensHeld = R * T + T + 1 <= S::kRegisters;
  for (; kk < k; kk += S::kWidth) {
    lpf.step();
    if constexpr (kTokensHeld) {
      V xv[T];
      SS_UNROLL for (int t = 0; t < T; ++t) xv[t] = S::load(x + size_t(t) * ldx + kk);
      SS_UNROLL for (int r = 0; r < R; ++r) {
        const V wv = L::load(w + size_t(r) * ldw + kk);
        if constexpr (Store) S::store(wout + size_t(r) * ldw_out + kk, wv);
        SS_UNROLL for (int t = 0; t < T; ++t) acc[r][t] = S::fmadd(wv, xv[t], acc[r][t]);
      }
    } else {
      V wv[R];
      SS_UNROLL for (int r = 0; r < R; ++r) {
        wv[r] = L::load(w + size_t(r) * ldw + kk);
        if constexpr (Store) S::store(wout + size_t(r) * ldw_out + kk, wv[r]);
      }
      SS_UNROLL for (int t = 0; t < T; ++t) {
        const V xv = S::load(x + size_t(t) * ldx + kk);
        SS_UNROLL for (int r = 0; r < R; ++r) acc[r][t] = S::fmadd(wv[r], xv, acc[r][t]);
      }
    }
  }
  const __m128 b = bias ? S::load_first(bias, R) : _mm_setzero_ps();
  const V z = S::zero();
  SS_UNROLL for (int t = 0; t < T; ++t) {
    __m128 s = S::reduce4(acc[0][t], R > 1 ? acc[R > 1 ? 1 : 0][t] : z, R > 2 ? acc[R > 2 ? 2 : 0][t] : z,
                          R > 3 ? acc[R > 3 ? 3 : 0][t] : z);
    s = _mm_add_ps(s, b);
    float* yt = y + size_t(t) * ldy;
    if (accumulate) s = _mm_add_ps(s, S::load_first(yt, R));
    S::store_first(yt, R, s);
  }
}

// Weight rows per tile for T tokens: as many as the accumulators allow, at most 4 (the reduction's width).
template <class S>
constexpr int rows_per_tile(int T) {
  return std::min(4, S::kAccumulators / T);
}

template <class L>
using TileFn = void (*)(const float*, size_t, int, const typename L::T*, size_t, const float*, float*, size_t, bool,
                        float*, size_t, RowPrefetch*);

template <class S, class L, bool Store, size_t... I>
constexpr auto make_tile_table(std::index_sequence<I...>) {
  constexpr int kT = S::kMaxTokens;
  return std::array<TileFn<L>, sizeof...(I)>{&tile<S, int(I / kT) + 1, int(I % kT) + 1, L, Store>...};
}
// table[(R - 1) * kMaxTokens + (T - 1)]
template <class S, class L, bool Store>
constexpr auto kTiles = make_tile_table<S, L, Store>(std::make_index_sequence<4 * S::kMaxTokens>{});

// One tile of R rows x T tokens; with wout, the widened weights are also stored there; with pf, lines of
// upcoming weights are prefetched as it goes.
template <class S, class L>
SS_INLINE void call_tile(int R, int T, const float* x, size_t ldx, int k, const typename L::T* w, size_t ldw,
                         const float* bias, float* y, size_t ldy, bool accumulate = false, float* wout = nullptr,
                         size_t ldw_out = 0, RowPrefetch* pf = nullptr) {
  const size_t i = size_t((R - 1) * S::kMaxTokens + (T - 1));
  if (wout) return kTiles<S, L, true>[i](x, ldx, k, w, ldw, bias, y, ldy, accumulate, wout, ldw_out, pf);
  kTiles<S, L, false>[i](x, ldx, k, w, ldw, bias, y, ldy, accumulate, nullptr, 0, pf);
}

// count weights of type t widened to f32 (exact).
template <class S>
void convert_row(DType t, const void* src, float* dst, size_t count) {
  auto run = [&](auto loader) {
    using L = decltype(loader);
    const auto* s = static_cast<const typename L::T*>(src);
    size_t i = 0;
    for (; i + S::kWidth <= count; i += S::kWidth) S::store(dst + i, L::load(s + i));
    if (i < count) {
      const typename S::Tail m = S::tail(int(count - i));
      S::store(dst + i, m, L::load(s + i, m));
    }
  };
  if (t == DType::F32)
    run(typename S::F32{});
  else if (t == DType::F16)
    run(typename S::F16{});
  else
    run(typename S::BF16{});
}

// Output columns (weight rows) [r0, r1) of Y for all n tokens (RowsFn, matmul_kernels.h).
template <class S, class L>
void rows_impl(const LinearArgs& a, int r0, int r1, float* scratch) {
  using T_ = typename L::T;
  using F32 = typename S::F32;
  const int n = a.n, k = a.k, m = a.m;
  const T_* W = static_cast<const T_*>(a.W);
  const size_t ldx = size_t(k), ldy = size_t(m);
  if (n <= S::kMaxTokens) {
    // One token tile: each weight vector is loaded, widened and used for all n tokens straight away.
    const int RT = rows_per_tile<S>(n);
    for (int r = r0; r < r1; r += RT) {
      const int R = std::min(RT, r1 - r);
      // Prefetch the rows two groups ahead while this group computes: with memory latency as high as it is
      // on a busy machine, the hardware prefetchers alone kept a single thread at a fraction of the bandwidth
      // (measured 2.3x faster for f16, n = 1, one thread).
      RowPrefetch pf;
      const int rp = r + 2 * RT;
      if (rp < r1) {
        const int steps = std::max(1, k / S::kWidth);
        pf.row = reinterpret_cast<const char*>(W + size_t(rp) * k);
        pf.row_stride = size_t(k) * sizeof(T_);
        pf.lines_per_row = int((size_t(k) * sizeof(T_) + 63) / 64) + 1;
        pf.rows_left = std::min(RT, r1 - rp);
        pf.per_step = (pf.lines_per_row * pf.rows_left + steps - 1) / steps;
      }
      // In the same k blocks as the multi-tile path below (batch invariance).
      const int KC = k_block(k, sizeof(T_));
      for (int kb = 0; kb < k; kb += KC)
        call_tile<S, L>(R, n, a.X + kb, ldx, std::min(KC, k - kb), W + size_t(r) * k + kb, size_t(k),
                        a.bias && kb == 0 ? a.bias + r : nullptr, a.Y + r, ldy, kb > 0, nullptr, 0,
                        rp < r1 ? &pf : nullptr);
    }
    return;
  }
  // Several token tiles: a panel of P weight rows is kept in cache and every token tile runs over it; tiles are balanced (n = 8 on AVX-512 -> 4 + 4, not 6 + 2).
  const int ntiles = (n + S::kMaxTokens - 1) / S::kMaxTokens;
  const int tbase = n / ntiles, textra = n % ntiles;
  // Panels of a whole number of row groups: panel_rows gives multiples of 4, AVX2's 4-token tiles take 3 rows at a
  // time.
  const int rt = rows_per_tile<S>(tbase);
  const int P = (panel_rows(k, ntiles, sizeof(T_)) + rt - 1) / rt * rt;
  const int KC = k_block(k, sizeof(T_));
  // f16/bf16 rows are widened in registers by every token tile, from L1/L2 after the first: a widened f32 copy in
  // the scratch panel, read back by the other tiles, measured 10-11% slower at 16 and 32 tokens on the 1B-shaped
  // F16 file (matmul_bench --model 1b --dtypes f16 --ns 16,32, alternated; bench/results/cpu_f16_in_place_2026-11-30/):
  // it doubles the bytes each tile reads and adds a store per weight vector, while the widening itself is one
  // instruction on a port the FMAs leave free. f32 rows are used in place, except with many tiles, where a compact
  // copy in the scratch panel measured faster.
  const bool copy = std::is_same_v<L, F32> && ntiles >= 4;
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
          const int64_t steps = int64_t(ntiles) * ((pr + rt - 1) / rt) * std::max(1, kl / S::kWidth);
          pf.per_step = int((lines + steps - 1) / steps);
        }
      }
      int t0 = 0;
      for (int ti = 0; ti < ntiles; ++ti) {
        const int T = tbase + (ti < textra ? 1 : 0), RT = rows_per_tile<S>(T);
        for (int r = 0; r < pr; r += RT) {
          const int R = std::min(RT, pr - r);
          const float* x = a.X + size_t(t0) * ldx + kb;
          const float* b = a.bias && kb == 0 ? a.bias + p0 + r : nullptr;
          float* y = a.Y + size_t(t0) * ldy + p0 + r;
          const T_* wsrc = W + size_t(p0 + r) * k + kb;
          if (!copy)
            call_tile<S, L>(R, T, x, ldx, kl, wsrc, size_t(k), b, y, ldy, kb > 0, nullptr, 0, ti > 0 ? &pf : nullptr);
          else if (ti == 0)  // copy the f32 block (rows at stride KC) for the other tiles on the way
            call_tile<S, L>(R, T, x, ldx, kl, wsrc, size_t(k), b, y, ldy, kb > 0, scratch + size_t(r) * KC,
                            size_t(KC), &pf);
          else
            call_tile<S, F32>(R, T, x, ldx, kl, scratch + size_t(r) * KC, size_t(KC), b, y, ldy, kb > 0, nullptr, 0,
                              &pf);
        }
        t0 += T;
      }
    }
  }
}

// The RowsFn of instruction set S: the loader for the weights' type.
template <class S>
void rows_for(const LinearArgs& a, int r0, int r1, float* scratch) {
  switch (a.wtype) {
    case DType::F32: rows_impl<S, typename S::F32>(a, r0, r1, scratch); break;
    case DType::F16: rows_impl<S, typename S::F16>(a, r0, r1, scratch); break;
    case DType::BF16: rows_impl<S, typename S::BF16>(a, r0, r1, scratch); break;
    default: break;
  }
}

}  // namespace
}  // namespace specscope::cpu::detail
