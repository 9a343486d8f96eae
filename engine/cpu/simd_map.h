// Internal to engine/cpu: the one SIMD mapping of the f32 widening kernels (matmul_rows.h). Each instruction set
// is a struct of the few operations those kernels use (f32 vectors, their masked tails, a 4-way horizontal sum,
// and loaders that widen f32/f16/bf16 weights exactly to f32), so the kernels are written once and compiled per
// instruction set.
//
// A kernel file defines SPECSCOPE_SIMD_AVX2 or SPECSCOPE_SIMD_AVX512 and includes this header after its
// `#pragma GCC target(...)` line (with <immintrin.h> and the standard headers included before it): each section
// then compiles for its own target, in its own file, and nowhere else.
#pragma once

#include <cstring>

#define SS_INLINE __attribute__((always_inline)) inline
#define SS_UNROLL _Pragma("GCC unroll 8")

#if defined(SPECSCOPE_SIMD_AVX512)
#include "engine/cpu/avx512_reduce4.h"
#endif

namespace specscope::cpu::detail {
namespace {  // internal to each including file: each compiles it for its own target

#if defined(SPECSCOPE_SIMD_AVX2)
// AVX2 + FMA + F16C: 8 floats a vector; 12 accumulators of the 16 ymm registers: tiles of 4 rows x 3 tokens or
// 3 x 4 (matmul_rows.h: rows_per_tile), so that 4 and 8 tokens widen each weight vector once and twice, not twice
// and three times.
struct Avx2 {
  using V = __m256;
  static constexpr int kWidth = 8;
  static constexpr int kMaxTokens = 4;
  static constexpr int kRegisters = 16, kAccumulators = 12;
  // The first `count` (< kWidth) lanes: a lane mask for loads and stores, and the count for the loaders.
  struct Tail {
    __m256i lanes;
    int count;
  };
  static SS_INLINE __m256i lane_mask(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static SS_INLINE Tail tail(int count) { return {lane_mask(count), count}; }
  static SS_INLINE V zero() { return _mm256_setzero_ps(); }
  static SS_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  static SS_INLINE V load(const float* p, Tail t) { return _mm256_maskload_ps(p, t.lanes); }
  static SS_INLINE void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static SS_INLINE void store(float* p, Tail t, V v) { _mm256_maskstore_ps(p, t.lanes, v); }
  static SS_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static SS_INLINE V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  // [sum(a), sum(b), sum(c), sum(d)].
  static SS_INLINE __m128 reduce4(V a, V b, V c, V d) {
    const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));  // per 128-bit lane: [a, b, c, d]
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  }
  // The first r (1-4) floats of p, zero-filled; and stored.
  static SS_INLINE __m128 load_first(const float* p, int r) {
    return r == 4 ? _mm_loadu_ps(p) : _mm_maskload_ps(p, _mm256_castsi256_si128(lane_mask(r)));
  }
  static SS_INLINE void store_first(float* p, int r, __m128 v) {
    if (r == 4)
      _mm_storeu_ps(p, v);
    else
      _mm_maskstore_ps(p, _mm256_castsi256_si128(lane_mask(r)), v);
  }

  // The bf16 panels' widening kernel (bf16_widen_panels.h): kWidth rows (half a panel) a slice; tiles of up to 6
  // tokens, and for T tokens slices so that 2 x slices x T accumulators, 2 x slices weight vectors, the zero and a
  // broadcast fit the 16 registers (T = 1, 2: 4 + 4 + 2, 8 + 4 + 2; T = 6: 12 + 2 + 2). One token takes two slices
  // (a whole panel), not the three that would fit: groups of one and a half panels, every other one starting in the
  // middle of a panel, ran a one-token forward of the default base in 1.52-1.61x the time and decoded 1.44-1.70x
  // slower, in every round (kernel_ab wslices=3 against 2, AVX2 forced on a Zen 4 host,
  // bench/results/cpu_avx2_widen_slices_2026-12-04/).
  static constexpr int kPairTileTmax = 6;
  static constexpr int pair_slices(int T) { return T <= 2 ? 2 : 1; }
  // kWidth pairs of bf16 at p (32-byte aligned) widened exactly as (even k, odd k) lane pairs: lo rows 0, 1 | 4, 5,
  // hi rows 2, 3 | 6, 7.
  static SS_INLINE void widen_pairs(const uint16_t* p, V& lo, V& hi) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(p)), z = _mm256_setzero_si256();
    lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, v));
    hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, v));
  }
  // [x0, x1, x0, x1, ...] from two floats at x; [x0, 0, x0, 0, ...] from one.
  static SS_INLINE V pair_broadcast(const float* x) {
    double pair;
    std::memcpy(&pair, x, sizeof pair);
    return _mm256_castpd_ps(_mm256_set1_pd(pair));
  }
  static SS_INLINE V even_broadcast(const float* x) { return _mm256_blend_ps(_mm256_broadcast_ss(x), zero(), 0xAA); }
  // Each row's even + odd lanes, rows 0..7 in order: [lo0+lo1, lo2+lo3, hi0+hi1, hi2+hi3 | the upper lanes'].
  static SS_INLINE V pair_sums(V lo, V hi) { return _mm256_hadd_ps(lo, hi); }

  // Loaders: kWidth consecutive weights widened to f32 (exact), and the same for a tail.
  template <class Self, class E>
  struct Loader {
    using T = E;
    // A tail through a zero-padded copy: AVX2 has no masked 16-bit loads, and nothing past the end is read.
    static SS_INLINE V load(const E* p, Tail t) {
      E buf[kWidth] = {};
      std::memcpy(buf, p, size_t(t.count) * sizeof(E));
      return Self::load(buf);
    }
  };
  struct F32 : Loader<F32, float> {
    using Loader::load;
    static SS_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  };
  struct F16 : Loader<F16, uint16_t> {
    using Loader::load;
    static SS_INLINE V load(const uint16_t* p) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
  };
  struct BF16 : Loader<BF16, uint16_t> {
    using Loader::load;
    static SS_INLINE V load(const uint16_t* p) {
      return _mm256_castsi256_ps(
          _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
    }
  };
};
#endif

#if defined(SPECSCOPE_SIMD_AVX512)
// AVX-512 (F/BW/VL/DQ): 16 floats a vector; tiles of 4 rows x 6 tokens (24 accumulators + 6 token vectors + 1
// weight vector of the 32 zmm registers). Tails are masked loads and stores.
struct Avx512 {
  using V = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kMaxTokens = 6;
  static constexpr int kRegisters = 32, kAccumulators = 24;
  using Tail = __mmask16;
  static SS_INLINE Tail tail(int count) { return __mmask16((1u << count) - 1u); }
  static SS_INLINE V zero() { return _mm512_setzero_ps(); }
  static SS_INLINE V load(const float* p) { return _mm512_loadu_ps(p); }
  static SS_INLINE V load(const float* p, Tail m) { return _mm512_maskz_loadu_ps(m, p); }
  static SS_INLINE void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static SS_INLINE void store(float* p, Tail m, V v) { _mm512_mask_storeu_ps(p, m, v); }
  static SS_INLINE V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static SS_INLINE V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static SS_INLINE __m128 reduce4(V a, V b, V c, V d) { return detail::reduce4(a, b, c, d); }
  static SS_INLINE __m128 load_first(const float* p, int r) {
    return r == 4 ? _mm_loadu_ps(p) : _mm_maskz_loadu_ps(__mmask8((1u << r) - 1u), p);
  }
  static SS_INLINE void store_first(float* p, int r, __m128 v) {
    if (r == 4)
      _mm_storeu_ps(p, v);
    else
      _mm_mask_storeu_ps(p, __mmask8((1u << r) - 1u), v);
  }

  // The bf16 panels' widening kernel (bf16_widen_panels.h): one panel (16 rows) a slice; tiles of up to 8 tokens,
  // and for T tokens slices so that 2 x slices x T accumulators, 2 x slices weight vectors, the zero and a broadcast
  // fit the 32 registers (T = 2: 16 + 8 + 2; T = 6: 24 + 4 + 2; T = 8: 16 + 2 + 2).
  static constexpr int kPairTileTmax = 8;
  static constexpr int pair_slices(int T) { return T <= 2 ? 4 : T <= 3 ? 3 : T <= 6 ? 2 : 1; }
  // 16 pairs of bf16 at p (64-byte aligned) widened exactly as (even k, odd k) lane pairs: lo rows 0, 1 | 4, 5 |
  // 8, 9 | 12, 13, hi rows 2, 3 | 6, 7 | 10, 11 | 14, 15.
  static SS_INLINE void widen_pairs(const uint16_t* p, V& lo, V& hi) {
    const __m512i v = _mm512_load_si512(p), z = _mm512_setzero_si512();
    lo = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, v));
    hi = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, v));
  }
  static SS_INLINE V pair_broadcast(const float* x) {
    double pair;
    std::memcpy(&pair, x, sizeof pair);
    return _mm512_castpd_ps(_mm512_set1_pd(pair));
  }
  static SS_INLINE V even_broadcast(const float* x) { return _mm512_maskz_mov_ps(__mmask16(0x5555), _mm512_set1_ps(*x)); }
  // Each row's even + odd lanes, rows 0..15 in order: per 128-bit lane [lo0+lo1, lo2+lo3, hi0+hi1, hi2+hi3].
  static SS_INLINE V pair_sums(V lo, V hi) {
    return _mm512_add_ps(_mm512_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
  }

  struct F32 {
    using T = float;
    static SS_INLINE V load(const float* p) { return _mm512_loadu_ps(p); }
    static SS_INLINE V load(const float* p, Tail m) { return _mm512_maskz_loadu_ps(m, p); }
  };
  struct F16 {
    using T = uint16_t;
    static SS_INLINE V load(const uint16_t* p) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static SS_INLINE V load(const uint16_t* p, Tail m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
  };
  struct BF16 {
    using T = uint16_t;
    static SS_INLINE V widen(__m256i h) {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    static SS_INLINE V load(const uint16_t* p) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static SS_INLINE V load(const uint16_t* p, Tail m) { return widen(_mm256_maskz_loadu_epi16(m, p)); }
  };
};
#endif

}  // namespace
}  // namespace specscope::cpu::detail
