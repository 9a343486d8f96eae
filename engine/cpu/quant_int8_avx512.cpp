// The AVX512-VNNI integer dot kernels (quant_int8.h): a group of 16 blocks per row at a time, one block per vector
// lane. Only called after a run-time check for AVX-512 F/BW/VL/DQ + VNNI (quant_int8_linear.cpp).
//
// Per weight row and group, the weights are unpacked once and transposed to the activations' interleaved layout
// (ActQ8: zmm j, lane b = codes 4j..4j+3 of block b), then reused for every token: 8 vpdpbusd per token leave each
// block's exact integer dot in its own lane, with no horizontal sums. vpdpbusd multiplies unsigned by signed bytes,
// so the activations stay signed and the weights are made unsigned: Q8_0 by adding 128 (xor 0x80), Q4_0 and Q6_K by
// keeping the raw codes 0..15 / 0..63; each block's dot is then corrected exactly by offset * (sum of the block's
// activation codes). The float formula of quant_int8.h follows in lane b for block b, which makes these results equal
// to the scalar reference's bit for bit.
//
// 1-2 tokens (rows_direct): each row's group is unpacked into registers and used at once; the weight stream is the
// bound. 3+ tokens (rows_panel): 4 rows at a time are unpacked into an L1-resident panel, a segment of 4 groups
// (2048 elements) at a time, and register tiles of 4 rows x 3 tokens (4 x 2 for Q6_K, which needs two dot sets)
// read it for every token: each unpacked weight vector is loaded once per 3 tokens, each activation vector once
// per 4 rows, the float accumulators stay in registers over the segment, and nothing is unpacked twice. Software
// prefetch, spread over the arithmetic, keeps the weight stream going underneath. In L1/L2 (one thread, 64 x 2048
// Q8_0) a row's group of 512 costs ~43 cycles at 1 token (unpack + 8 vpdpbusd) and ~100 at 8 tokens, 9-10 cycles
// per token from 16 tokens on, i.e. 80-90% of one vpdpbusd zmm per cycle.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cpu/quant_int8.h"

#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on its own _mm512_undefined_* in intrinsics
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")

namespace specscope::cpu::detail {
namespace {

#define QI_INLINE __attribute__((always_inline)) inline

// The weight side of one group of 16 blocks, laid out like the activations (quant_int8.h's ActQ8): w[j], lane b
// holds codes 4j..4j+3 of block b.
struct Group {
  __m512i w[8];
  __m512 fw;             // per block: d (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K) or d * sc (Q4_K, Q5_K)
  __m512 fm;             // per block: dmin * m (Q4_K, Q5_K) or -m (Q4_1, Q5_1)
  __m512i sc_lo, sc_hi;  // Q6_K: the scales of each block's first and second 16 elements
  __m512i sc16;          // Q6_K: the same as int16 pairs (lo, hi), for vpmaddwd with the half-block code sums
};

QI_INLINE float f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// The f16 at offset 0 of 16 blocks of `bytes` bytes, widened.
QI_INLINE __m512 f16_of_blocks(const uint8_t* g, int bytes) {
  alignas(32) uint16_t h[16];
  for (int b = 0; b < 16; ++b) std::memcpy(&h[b], g + b * bytes, 2);
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
}

// [a x 8 | b x 8]
QI_INLINE __m512 halves(float a, float b) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(a)), _mm256_set1_ps(b), 1);
}

QI_INLINE __m512i pair256(const uint8_t* a, const uint8_t* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// 4x4 transposes of dwords within each 128-bit lane of a[0..3]: u[i], lane q = dword i of lane q of a[0], .., a[3].
QI_INLINE void transpose4(const __m512i* a, __m512i* u) {
  const __m512i t0 = _mm512_unpacklo_epi32(a[0], a[1]), t1 = _mm512_unpackhi_epi32(a[0], a[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(a[2], a[3]), t3 = _mm512_unpackhi_epi32(a[2], a[3]);
  u[0] = _mm512_unpacklo_epi64(t0, t2), u[1] = _mm512_unpackhi_epi64(t0, t2);
  u[2] = _mm512_unpacklo_epi64(t1, t3), u[3] = _mm512_unpackhi_epi64(t1, t3);
}

// a[v] = [block v | block v + 8] (32 codes each) -> G.w (dword j of block b in lane b of w[j]).
QI_INLINE void to_lanes(const __m512i* a, Group& G) {
  __m512i u[4], w[4];
  transpose4(a, u);      // lane q of u[i]: dword 4 (q % 2) + i of blocks 0-3 (+ 8 when q >= 2)
  transpose4(a + 4, w);  // the same for blocks 4-7 (+ 8)
  const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), hi = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int i = 0; i < 4; ++i) {
    G.w[i] = _mm512_permutex2var_epi64(u[i], lo, w[i]);
    G.w[4 + i] = _mm512_permutex2var_epi64(u[i], hi, w[i]);
  }
}

QI_INLINE void unpack_q8_0(const uint8_t* g, Group& G) {
  G.fw = f16_of_blocks(g, kQ8_0Bytes);
  const __m512i flip = _mm512_set1_epi8(char(0x80));  // q + 128 as an unsigned byte
  __m512i a[8];
  for (int v = 0; v < 8; ++v)
    a[v] = _mm512_xor_si512(pair256(g + kQ8_0Bytes * v + 2, g + kQ8_0Bytes * (v + 8) + 2), flip);
  to_lanes(a, G);
}

// Q4_0, Q4_1, Q5_0, Q5_1 (blocks of kBytes): 32 codes from the 16 bytes of nibbles at byte kQs, elements 0-15 the low
// nibbles and 16-31 the high (each block's bytes twice, shifted by 0 and by 4); the 5-bit types (kQh >= 0) add bit i
// of the qh word at byte kQh as element i's fifth bit, one mask register per pair of blocks.
// kLut (MXFP4): each nibble then becomes its kMxfp4Codes entry, one byte shuffle.
template <int kBytes, int kQs, int kQh, bool kLut = false>
QI_INLINE void unpack_nibbles(const uint8_t* g, Group& G) {
  const __m512i shift = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0), m4 = _mm512_set1_epi8(15), fifth = _mm512_set1_epi8(16);
  const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Codes)));
  __m512i a[8];
  for (int v = 0; v < 8; ++v) {
    const uint8_t* p = g + kBytes * v;
    const uint8_t* q = g + kBytes * (v + 8);
    const __m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kQs)));
    const __m256i y = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + kQs)));
    a[v] = _mm512_and_si512(_mm512_srlv_epi64(_mm512_inserti64x4(_mm512_castsi256_si512(x), y, 1), shift), m4);
    if constexpr (kQh >= 0) {
      uint32_t hp, hq;
      std::memcpy(&hp, p + kQh, 4);
      std::memcpy(&hq, q + kQh, 4);
      a[v] = _mm512_or_si512(a[v], _mm512_maskz_mov_epi8(__mmask64(hp) | (__mmask64(hq) << 32), fifth));
    }
    if constexpr (kLut) a[v] = _mm512_shuffle_epi8(lut, a[v]);
  }
  to_lanes(a, G);
}

// MXFP4 (quant_int8.h): the 16 blocks' 2^(e - 128) from their scale bytes, as GGML_E8M0_TO_FP32_HALF makes them (the
// exponent field e - 1; e 0 and 1 the subnormals 2^-128 and 2^-127), and the codes through the table.
QI_INLINE void unpack_mxfp4(const uint8_t* g, Group& G) {
  alignas(64) int32_t e[16];
  for (int b = 0; b < 16; ++b) e[b] = g[b * kMxfp4Bytes];
  const __m512i ev = _mm512_load_si512(e);
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(ev, _mm512_set1_epi32(1)), 23);
  const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), ev);
  G.fw = _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(ev, _mm512_set1_epi32(2)), normal, tiny));
  unpack_nibbles<kMxfp4Bytes, 1, -1, true>(g, G);
}

// A nibble-block group (quant_int8.h's NibbleBlock): the blocks' scale d, for Q4_1 / Q5_1 their minimum m negated
// (t_b = fma(m, S_b, d * I_b) is then the K-quants' fma(-fm, S_b, fw * I_b); flipping the sign bit is exact), and the
// codes.
template <Int8Type kType>
QI_INLINE void unpack_nibble_blocks(const uint8_t* g, Group& G) {
  constexpr NibbleBlock L = nibble_block(kType);
  G.fw = f16_of_blocks(g, L.bytes);
  if constexpr (L.has_min) G.fm = _mm512_xor_ps(f16_of_blocks(g + 2, L.bytes), _mm512_set1_ps(-0.f));
  unpack_nibbles<L.bytes, L.qs, L.qh>(g, G);
}

// The f16 scales of two units of 8 blocks in the lanes layouts (their first 16 bytes each), widened.
QI_INLINE __m512 unit_scales(const uint8_t* s0, const uint8_t* s1) {
  const __m128i d0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0));
  const __m128i d1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1));
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(d0), d1, 1));
}

// The 4-bit codes of two units or super-blocks in the lanes layouts (kquant_lanes.h, 128 bytes at c0 and at c1): chunk
// k of both, masked, is step k; shifted right by 4, step k + 4.
QI_INLINE void lanes_nibbles(const uint8_t* c0, const uint8_t* c1, Group& G) {
  const __m512i m4 = _mm512_set1_epi8(15);
  for (int k = 0; k < 4; ++k) {
    const __m512i v = pair256(c0 + 32 * k, c1 + 32 * k);
    G.w[k] = _mm512_and_si512(v, m4);
    G.w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
}

// Q8_0 in the lanes layout (kquant_lanes.h): two units of 8 blocks, each its 8 scales then step j's 32 bytes at
// 16 + 32 j; made unsigned by adding 128, as unpack_q8_0 does.
QI_INLINE void unpack_q8_0_lanes(const uint8_t* g, Group& G) {
  const uint8_t* s0 = g;
  const uint8_t* s1 = g + 272;
  G.fw = unit_scales(s0, s1);
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  for (int j = 0; j < 8; ++j) G.w[j] = _mm512_xor_si512(pair256(s0 + 16 + 32 * j, s1 + 16 + 32 * j), flip);
}

// Q4_0 in the lanes layout (kquant_lanes.h): two units of 8 blocks, each its 8 scales then its codes as Q4_K_Lanes'.
QI_INLINE void unpack_q4_0_lanes(const uint8_t* g, Group& G) {
  G.fw = unit_scales(g, g + 144);
  lanes_nibbles(g + 16, g + 144 + 16, G);
}

// The float factors of a Q4_K / Q5_K group: G.fw = d * scale and G.fm = dmin * min of each sub-block, from the
// first 16 bytes of each super-block (f16 d, f16 dmin, then the 12 packed scale bytes as dwords A, B, C; the scales
// and mins unpacked as k4_scale_min_words does, in both 128-bit lanes at once).
QI_INLINE void k45_factors(const uint8_t* s0, const uint8_t* s1, Group& G) {
  const __m128i h0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0));
  const __m128i h1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1));
  const __m256i hv = _mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1);
  const __m256i ab = _mm256_shuffle_epi32(hv, _MM_SHUFFLE(2, 1, 2, 1));  // A, B, A, B
  const __m256i cc = _mm256_shuffle_epi32(hv, _MM_SHUFFLE(3, 3, 3, 3));
  const __m256i low = _mm256_and_si256(ab, _mm256_set1_epi32(0x3f3f3f3f));  // scales 0-3, mins 0-3
  const __m256i high = _mm256_or_si256(                                      // (dwords 2, 3) scales 4-7, mins 4-7
      _mm256_and_si256(_mm256_srlv_epi32(cc, _mm256_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4)), _mm256_set1_epi32(0x0f0f0f0f)),
      _mm256_and_si256(_mm256_srli_epi32(ab, 2), _mm256_set1_epi32(0x30303030)));
  const __m256i sm = _mm256_shuffle_epi8(_mm256_blend_epi32(low, high, 0xCC),
                                         _mm256_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15, 0, 1, 2, 3,
                                                          8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15));
  const __m256i p = _mm256_permute4x64_epi64(sm, _MM_SHUFFLE(3, 1, 2, 0));  // 16 scales, then 16 mins
  const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(p)));
  const __m512 mn = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(p, 1)));
  const __m512 dd = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_unpacklo_epi32(h0, h1)));  // d0, dmin0, d1, dmin1
  const __m512 d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2), dd);
  const __m512 dmin = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3), dd);
  G.fw = _mm512_mul_ps(d, sc);  // exact: 11 x 6 bits
  G.fm = _mm512_mul_ps(dmin, mn);
}

// Q4_K (q5 = false) and Q5_K in the lanes layouts (kquant_lanes.h): chunk k of both super-blocks, masked, is step k;
// shifted by 4, step k + 4; Q5_K's bit j of the fifth bits, moved to bit 4, joins step j.
template <bool q5>
QI_INLINE void unpack_k45_lanes(const uint8_t* g, Group& G) {
  constexpr int kBytes = q5 ? 176 : 144, kQs = q5 ? 48 : 16;
  const uint8_t* s0 = g;
  const uint8_t* s1 = g + kBytes;
  k45_factors(s0, s1, G);
  lanes_nibbles(s0 + kQs, s1 + kQs, G);
  if constexpr (q5) {
    const __m512i h = pair256(s0 + 16, s1 + 16), bit4 = _mm512_set1_epi8(0x10);
    for (int j = 0; j < 8; ++j) {
      const __m512i moved = j <= 4 ? _mm512_slli_epi16(h, 4 - j) : _mm512_srli_epi16(h, j - 4);
      G.w[j] = _mm512_or_si512(G.w[j], _mm512_and_si512(moved, bit4));
    }
  }
}

// Q4_K (q5 = false) and Q5_K in ggml's layout: two super-blocks (blocks 0-7 and 8-15); 32-byte chunk c of a
// super-block holds sub-block 2c in its low nibbles and 2c + 1 in its high ones; Q5_K's bit s of byte l of qh is
// bit 4 of element l of sub-block s.
template <bool q5>
QI_INLINE void unpack_k45(const uint8_t* g, Group& G) {
  constexpr int kBytes = q5 ? 176 : 144;
  const uint8_t* s0 = g;
  const uint8_t* s1 = g + kBytes;
  k45_factors(s0, s1, G);
  const __m512i m4 = _mm512_set1_epi8(15), one = _mm512_set1_epi8(1);
  constexpr int kQs = q5 ? 48 : 16;
  if constexpr (!q5) {
    // Q4_K: transposed while still packed, then split. w[j], lane b = 8s + 2c + h needs dword j of chunk c of
    // super-block s, its low nibbles (h = 0) or high ones (h = 1): one vpermt2d per super-block gathers those dwords
    // (each twice, for the lane pair) for j and j + 4 at once, a 128-bit shuffle joins the super-blocks, and a
    // per-lane shift of 0 or 4 picks the nibbles. 16 shuffles per group instead of to_lanes' 24 plus 4 inserts.
    const __m512i a0 = _mm512_loadu_si512(s0 + kQs), a1 = _mm512_loadu_si512(s0 + kQs + 64);  // chunks 0-1, 2-3
    const __m512i b0 = _mm512_loadu_si512(s1 + kQs), b1 = _mm512_loadu_si512(s1 + kQs + 64);
    const __m512i base = _mm512_setr_epi32(0, 0, 8, 8, 16, 16, 24, 24, 4, 4, 12, 12, 20, 20, 28, 28);
    const __m512i nib = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
    const __m512i m4d = _mm512_set1_epi32(0x0F0F0F0F);
    for (int j = 0; j < 4; ++j) {
      const __m512i idx = _mm512_add_epi32(base, _mm512_set1_epi32(j));
      const __m512i A = _mm512_permutex2var_epi32(a0, idx, a1), B = _mm512_permutex2var_epi32(b0, idx, b1);
      G.w[j] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_shuffle_i64x2(A, B, _MM_SHUFFLE(1, 0, 1, 0)), nib), m4d);
      G.w[j + 4] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_shuffle_i64x2(A, B, _MM_SHUFFLE(3, 2, 3, 2)), nib), m4d);
    }
    return;
  }
  __m512i v[8];
  for (int c = 0; c < 4; ++c) {
    const __m512i q = pair256(s0 + kQs + 32 * c, s1 + kQs + 32 * c);
    v[2 * c] = _mm512_and_si512(q, m4);
    v[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
  }
  if constexpr (q5) {
    const __m512i qh = pair256(s0 + 16, s1 + 16);
    for (int s = 0; s < 8; ++s)
      v[s] = _mm512_or_si512(v[s], _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh, s), one), 4));
  }
  to_lanes(v, G);
}

// Q6_K's scales and d, the same in ggml's layout and the lanes layout.
QI_INLINE void q6k_factors(const uint8_t* s0, const uint8_t* s1, Group& G) {
  // Scales: byte 2b + p of the 16 is half p of block b.
  G.sc16 = _mm512_cvtepi8_epi16(_mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s0 + 192))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1 + 192)), 1));
  G.sc_lo = _mm512_srai_epi32(_mm512_slli_epi32(G.sc16, 16), 16);
  G.sc_hi = _mm512_srai_epi32(G.sc16, 16);
  G.fw = halves(f16(s0 + 208), f16(s1 + 208));
}

// Q6_K in the lanes layout (kquant_lanes.h): step j is chunk j % 4's nibble j / 4 with chunk j / 4 of the high bits,
// shifted to bits 4-5.
QI_INLINE void unpack_q6k_lanes(const uint8_t* g, Group& G) {
  const uint8_t* s0 = g;
  const uint8_t* s1 = g + 210;
  const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
  const __m512i h0 = pair256(s0 + 128, s1 + 128), h1 = pair256(s0 + 160, s1 + 160);
  for (int k = 0; k < 4; ++k) {
    const __m512i v = pair256(s0 + 32 * k, s1 + 32 * k);
    // High bits 2k..2k+1 of each byte to bits 4-5: shifted left by 4 - 2k (k <= 2) or right by 2 (k = 3).
    const auto high = [&](__m512i h) {
      return _mm512_and_si512(k == 3 ? _mm512_srli_epi16(h, 2) : _mm512_slli_epi16(h, 4 - 2 * k), m30);
    };
    G.w[k] = _mm512_or_si512(_mm512_and_si512(v, m4), high(h0));
    G.w[k + 4] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), high(h1));
  }
  q6k_factors(s0, s1, G);
}

// Q6_K in ggml's layout: two super-blocks; codes q = low nibble | 2 high bits << 4, 0..63 (the -32 is a correction).
QI_INLINE void unpack_q6_k(const uint8_t* g, Group& G) {
  const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
  const uint8_t* s0 = g;
  const uint8_t* s1 = g + 210;
  __m512i v[8];
  for (int h = 0; h < 2; ++h) {  // 128-element halves: runs r = 0..3 of 32 elements, blocks 4h + r
    const __m512i l0 = pair256(s0 + 64 * h, s1 + 64 * h), l1 = pair256(s0 + 64 * h + 32, s1 + 64 * h + 32);
    const __m512i qh = pair256(s0 + 128 + 32 * h, s1 + 128 + 32 * h);
    for (int r = 0; r < 4; ++r) {
      const __m512i low = _mm512_and_si512(_mm512_srli_epi16((r & 1) ? l1 : l0, 4 * (r >> 1)), m4);
      const __m512i high = _mm512_and_si512(_mm512_srli_epi16(qh, 2 * r), m3);
      v[4 * h + r] = _mm512_or_si512(low, _mm512_slli_epi16(high, 4));
    }
  }
  to_lanes(v, G);
  q6k_factors(s0, s1, G);
}

// quant_int8.h's 16-lane sum.
QI_INLINE float lane_sum(__m512 a) {
  const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  const __m128 a4 = _mm_add_ps(_mm256_castps256_ps128(a8), _mm256_extractf128_ps(a8, 1));
  const __m128 a2 = _mm_add_ps(a4, _mm_movehl_ps(a4, a4));
  return _mm_cvtss_f32(_mm_add_ss(a2, _mm_shuffle_ps(a2, a2, 1)));
}

template <Int8Type kType>
QI_INLINE void unpack(const uint8_t* gp, Group& G) {
  if constexpr (kType == Int8Type::Q8_0) unpack_q8_0(gp, G);
  else if constexpr (int8_is_nibble_block(kType)) unpack_nibble_blocks<kType>(gp, G);
  else if constexpr (kType == Int8Type::Q4_K) unpack_k45<false>(gp, G);
  else if constexpr (kType == Int8Type::Q4_0_Lanes) unpack_q4_0_lanes(gp, G);
  else if constexpr (kType == Int8Type::Q8_0_Lanes) unpack_q8_0_lanes(gp, G);
  else if constexpr (kType == Int8Type::Q4_K_Lanes) unpack_k45_lanes<false>(gp, G);
  else if constexpr (kType == Int8Type::Q5_K_Lanes) unpack_k45_lanes<true>(gp, G);
  else if constexpr (kType == Int8Type::Q6_K_Lanes) unpack_q6k_lanes(gp, G);
  else if constexpr (kType == Int8Type::Q5_K) unpack_k45<true>(gp, G);
  else if constexpr (kType == Int8Type::MXFP4) unpack_mxfp4(gp, G);
  else unpack_q6_k(gp, G);
}

// Software prefetch of the weight stream, spread evenly over a chunk's arithmetic: a burst of prefetches fills the
// miss buffers and stalls the core (measured: 16% of the time in prefetcht1), and without any the hardware
// prefetchers leave the panel path waiting on memory (1.5x slower at 4-8 tokens).
// Bytes ahead of the 1-2 token path's reads, per type. Measured on the 1B-shaped files in one process
// (bench/kernel_ab.cpp qahead=N, decode, settings alternated per round; bench/results/cpu_prefetch_ahead_2026-11-30/):
// Q4_K_M (Q4_K + Q6_K, whose unpacking keeps the core busy between loads) decodes 1.055x faster at 32 KB than at
// the former 4 KB, which sits too close (2 KB: 0.77x; it lands on lines the hardware streamer already has in
// flight); 16 KB and 64 KB 0.96-0.97x, none 0.94x. Q8_0, whose unpacking is a xor, is fastest with none (1.035x
// 32 KB in 10 of 10 rounds; 4 KB 0.84x): the hardware prefetchers keep up with it alone.
template <Int8Type kType>
constexpr size_t kDirectAhead = int8_is_q8_0(kType) ? 0 : 32768;
constexpr int kChunksAhead = 2;         // row chunks ahead of the panel path's unpacking
struct Prefetcher {
  const char* p = nullptr;
  const char* end = nullptr;
  int per_step = 0;
  QI_INLINE void step() {
    for (int i = 0; i < per_step && p < end; ++i, p += 64) _mm_prefetch(p, _MM_HINT_T1);
  }
};

// One group g of R weight rows (G[r]: row r's unpacked group) against tokens [t, t + T): a register tile of R x T
// vpdpbusd chains (two per pair for Q6_K, whose blocks have a scale per half), each row's codes loaded once for the T
// tokens and each token's once for the R rows; then quant_int8.h's per-block terms into the float accumulators
// acc[r][u], which stay in registers across the groups of a row (no horizontal sums, no stores in the k loop).
template <Int8Type kType, int R, int T>
QI_INLINE void group_tile(const Group* const* G, const ActQ8& x, int g, int t, __m512 (&acc)[R][T]) {
  constexpr bool kQ6 = kType == Int8Type::Q6_K || kType == Int8Type::Q6_K_Lanes;
  constexpr bool kMins = int8_has_mins(kType);
  constexpr int kSets = kQ6 ? 2 : 1;
  __m512i dot[kSets][R][T];
  for (int s = 0; s < kSets; ++s)
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < T; ++u) dot[s][r][u] = _mm512_setzero_si512();
  const int8_t* xq[T];
  for (int u = 0; u < T; ++u) xq[u] = x.qs(t + u) + size_t(g) * kQ8Group;
  // One row and token: the 8 vpdpbusd as two chains (even and odd j, added after: integers, exact), which halves
  // the latency the single token waits on (measured: n = 1 was slower than n = 2).
  constexpr bool kSplit = !kQ6 && R * T == 1;
  __m512i odd = _mm512_setzero_si512();
  for (int j = 0; j < 8; ++j) {
    const int s = kQ6 ? j / 4 : 0;  // Q6_K: each block's first 16 codes, then its second 16
    __m512i xv[T];
    for (int u = 0; u < T; ++u) xv[u] = _mm512_loadu_si512(xq[u] + 64 * j);
    for (int r = 0; r < R; ++r) {
      const __m512i w = G[r]->w[j];
      for (int u = 0; u < T; ++u) {
        if (kSplit && (j & 1)) odd = _mm512_dpbusd_epi32(odd, w, xv[u]);
        else dot[s][r][u] = _mm512_dpbusd_epi32(dot[s][r][u], w, xv[u]);
      }
    }
  }
  if constexpr (kSplit) dot[0][0][0] = _mm512_add_epi32(dot[0][0][0], odd);
  const size_t b0 = size_t(g) * kQ8Lanes;
  for (int u = 0; u < T; ++u) {
    const int tt = t + u;
    const __m512 dx = _mm512_loadu_ps(x.ds(tt) + b0);
    __m512i corr = _mm512_setzero_si512();
    __m512 xsum = _mm512_setzero_ps();
    if constexpr (int8_code_offset_shift(kType) >= 0)  // codes offset by 128, 8 or 16
      corr = _mm512_slli_epi32(_mm512_loadu_si512(x.sums32(tt) + b0), int8_code_offset_shift(kType));
    if constexpr (kQ6) corr = _mm512_loadu_si512(x.sums16(tt) + 2 * b0);
    if constexpr (kMins) xsum = _mm512_cvtepi32_ps(_mm512_loadu_si512(x.sums32(tt) + b0));
    for (int r = 0; r < R; ++r) {
      __m512i I;
      if constexpr (kQ6)  // codes offset by 32: minus 32 * sum over halves of scale * half's code sum
        I = _mm512_sub_epi32(_mm512_add_epi32(_mm512_mullo_epi32(dot[0][r][u], G[r]->sc_lo),
                                              _mm512_mullo_epi32(dot[kSets - 1][r][u], G[r]->sc_hi)),
                             _mm512_slli_epi32(_mm512_madd_epi16(corr, G[r]->sc16), 5));
      else
        I = _mm512_sub_epi32(dot[0][r][u], corr);
      __m512 tb = _mm512_mul_ps(G[r]->fw, _mm512_cvtepi32_ps(I));
      if constexpr (kMins) tb = _mm512_fnmadd_ps(G[r]->fm, xsum, tb);
      acc[r][u] = _mm512_fmadd_ps(dx, tb, acc[r][u]);
    }
  }
}

template <int R, int T>
QI_INLINE void store_tile(const __m512 (&acc)[R][T], int r, int t, const float* bias, float* Y, int m) {
  for (int i = 0; i < R; ++i)
    for (int u = 0; u < T; ++u)
      Y[size_t(t + u) * size_t(m) + size_t(r + i)] = lane_sum(acc[i][u]) + (bias ? bias[r + i] : 0.f);
}

// Group g of a row. When the row ends inside it (k not a multiple of 512: Qwen2.5-0.5B's 896 and 4864, a small
// drafter's 256 and 768) and the group's whole span lies inside the tensor (W_end: what is past the row's end
// belongs to the next row), it is read in place and the blocks past the row's end get zero scales: their
// activations are zero padding (ActQ8), so their integer dots are exactly zero and their lanes add +0.0, as when
// the group was first copied into a zeroed buffer. That copy, left for the tensor's last rows, made every such row
// pay a 544-byte memset, a memcpy and the store-forwarding stalls of reading it back: a 4.2M-parameter drafter as
// Q8_0 decoded ~9x slower than as bf16.
template <Int8Type kType>
QI_INLINE void unpack_group(const uint8_t* row, size_t row_bytes, size_t gb, int g, const uint8_t* W_end, Group& G) {
  const uint8_t* gp = row + size_t(g) * gb;
  const size_t inside = row_bytes - size_t(g) * gb;  // bytes of this group within the row
  if (inside >= gb) return unpack<kType>(gp, G);
  if (gp + gb > W_end) {
    alignas(64) uint8_t pad[544];  // the largest group, Q8_0's
    std::memset(pad, 0, sizeof pad);
    std::memcpy(pad, gp, inside);
    return unpack<kType>(pad, G);
  }
  unpack<kType>(gp, G);
  const __mmask16 keep = __mmask16((1u << (inside * kQ8Lanes / gb)) - 1u);
  G.fw = _mm512_maskz_mov_ps(keep, G.fw);
  if constexpr (int8_has_mins(kType)) G.fm = _mm512_maskz_mov_ps(keep, G.fm);
}

// 1-2 tokens: each row's groups unpacked into registers and used at once (little to share between rows; the weight
// stream is the bound).
template <Int8Type kType, int T>
void rows_direct(const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias, float* Y, int m, int r0,
                 int r1) {
  const size_t gb = int8_group_bytes(kType);
  const int groups = x.blocks() / kQ8Lanes;
  const uint8_t* W_end = W + size_t(m) * row_bytes;
  const size_t ahead = int8_direct_ahead(kDirectAhead<kType>);
  for (int r = r0; r < r1; ++r) {
    const uint8_t* row = W + size_t(r) * row_bytes;
    __m512 acc[1][T];
    for (int u = 0; u < T; ++u) acc[0][u] = _mm512_setzero_ps();
    // The weight stream kDirectAhead bytes on.
    Prefetcher pf;
    pf.end = reinterpret_cast<const char*>(W + size_t(r1) * row_bytes);
    pf.p = std::min(pf.end, reinterpret_cast<const char*>(row) + ahead);
    pf.per_step = ahead ? int((gb + 63) / 64) : 0;
    for (int g = 0; g < groups; ++g) {
      pf.step();
      Group G;
      unpack_group<kType>(row, row_bytes, gb, g, W_end, G);
      const Group* p = &G;
      group_tile<kType, 1, T>(&p, x, g, 0, acc);
    }
    store_tile<1, T>(acc, r, 0, bias, Y, m);
  }
}

// Where a row tile's work over one segment of the row's groups goes: groups [g0, g1) of the panel P (row i's at
// P + i * (g1 - g0)); the float accumulators of the tile's (row, token) pairs are zero before the first segment,
// carried in acc_mem (token t of row i at acc_mem + (i * n + t) * 16) between segments, and summed into Y after the
// last. Each (row, token)'s per-block terms are still added in block order, so splitting k changes no bit.
struct Segment {
  const Group* P;
  int g0, g1;
  bool first, last;
  float* acc_mem;
};

// Rows [r, r + R) for tokens [t, t + T) over one segment.
template <Int8Type kType, int R, int T>
void panel_tile(const Segment& sg, int r, const ActQ8& x, int t, const float* bias, float* Y, int m, Prefetcher& pf) {
  __m512 acc[R][T];
  const size_t gs = size_t(sg.g1 - sg.g0);
  for (int i = 0; i < R; ++i)
    for (int u = 0; u < T; ++u)
      acc[i][u] = sg.first ? _mm512_setzero_ps() : _mm512_load_ps(sg.acc_mem + (size_t(i) * size_t(x.n) + size_t(t + u)) * 16);
  for (int g = sg.g0; g < sg.g1; ++g) {
    const Group* G[R];
    for (int i = 0; i < R; ++i) G[i] = sg.P + size_t(i) * gs + size_t(g - sg.g0);
    pf.step();
    group_tile<kType, R, T>(G, x, g, t, acc);
  }
  if (sg.last) return store_tile<R, T>(acc, r, t, bias, Y, m);
  for (int i = 0; i < R; ++i)
    for (int u = 0; u < T; ++u) _mm512_store_ps(sg.acc_mem + (size_t(i) * size_t(x.n) + size_t(t + u)) * 16, acc[i][u]);
}

// Rows [r, r + R) of the segment against every token: token tiles of kT, then the rest.
template <Int8Type kType, int R, int kT>
void panel_rows(const Segment& sg, int r, const ActQ8& x, const float* bias, float* Y, int m, Prefetcher& pf) {
  int t = 0;
  for (; t + kT <= x.n; t += kT) panel_tile<kType, R, kT>(sg, r, x, t, bias, Y, m, pf);
  switch (x.n - t) {
    case 1: panel_tile<kType, R, 1>(sg, r, x, t, bias, Y, m, pf); break;
    case 2: if constexpr (kT > 2) panel_tile<kType, R, 2>(sg, r, x, t, bias, Y, m, pf); break;
    case 3: if constexpr (kT > 3) panel_tile<kType, R, 3>(sg, r, x, t, bias, Y, m, pf); break;
    default: break;
  }
}

// 64-byte aligned scratch of the calling thread (std::vector<Group> is not 64-byte aligned here).
template <typename T, int kSlot>
T* scratch(size_t count) {
  thread_local std::vector<uint8_t> buf;
  if (buf.size() < count * sizeof(T) + 64) buf.resize(count * sizeof(T) + 64);
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
}

// 3+ tokens: rows in chunks of kR, and each chunk's row in segments of kSegGroups groups (4 x 2048 elements: the
// segment's unpacked weights, 4 x 4 x 576-832 bytes, and a token tile's codes stay in L1 even for long rows). A
// segment is unpacked once into a panel and every token tile reads it from there, with no re-unpacking per tile;
// meanwhile a chunk kChunksAhead on is prefetched into L2, spread over the tiles, so the weight stream overlaps the
// arithmetic.
template <Int8Type kType, int kR, int kT>
void rows_panel(const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias, float* Y, int m, int r0,
                int r1) {
  constexpr int kSegGroups = 4;
  const size_t gb = int8_group_bytes(kType);
  const int groups = x.blocks() / kQ8Lanes;
  const uint8_t* W_end = W + size_t(m) * row_bytes;
  Group* P = scratch<Group, 0>(size_t(kR) * kSegGroups);
  float* acc_mem = groups > kSegGroups ? scratch<float, 1>(size_t(kR) * size_t(x.n) * 16) : nullptr;
  for (int r = r0; r < r1; r += kR) {
    const int rows_here = std::min(kR, r1 - r);
    const int ahead = std::min(r1, r + kChunksAhead * kR), next_rows = std::min(kR, r1 - ahead);
    const int steps = (rows_here / kR + rows_here % kR) * ((x.n + kT - 1) / kT) * groups;
    Prefetcher pf;
    pf.p = reinterpret_cast<const char*>(W + size_t(ahead) * row_bytes);
    pf.end = pf.p + size_t(next_rows) * row_bytes;
    pf.per_step = int((size_t(next_rows) * row_bytes / 64 + size_t(steps)) / size_t(steps));
    for (int g0 = 0; g0 < groups; g0 += kSegGroups) {
      const int g1 = std::min(groups, g0 + kSegGroups);
      for (int i = 0; i < rows_here; ++i)
        for (int g = g0; g < g1; ++g)
          unpack_group<kType>(W + size_t(r + i) * row_bytes, row_bytes, gb, g, W_end,
                              P[size_t(i) * size_t(g1 - g0) + size_t(g - g0)]);
      const Segment sg{P, g0, g1, g0 == 0, g1 == groups, acc_mem};
      if (rows_here == kR) {
        panel_rows<kType, kR, kT>(sg, r, x, bias, Y, m, pf);
      } else {
        for (int i = 0; i < rows_here; ++i) {
          float* acc_i = acc_mem ? acc_mem + size_t(i) * size_t(x.n) * 16 : nullptr;
          const Segment one{P + size_t(i) * size_t(g1 - g0), g0, g1, sg.first, sg.last, acc_i};
          panel_rows<kType, 1, kT>(one, r + i, x, bias, Y, m, pf);
        }
      }
    }
  }
}

template <Int8Type kType>
void rows(const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias, float* Y, int m, int r0, int r1) {
  if (x.n == 1) return rows_direct<kType, 1>(W, row_bytes, x, bias, Y, m, r0, r1);
  if (x.n == 2) return rows_direct<kType, 2>(W, row_bytes, x, bias, Y, m, r0, r1);
  // Tiles of 4 rows x 3 tokens (Q6_K, with two dot sets per pair: 4 x 2) keep 24 of the 32 zmm as accumulators.
  // Measured in L1/L2 (one thread, 64 x 2048): 4 x 3 at 8 tokens 100 cycles per row and group of 512 (4 x 4: 104,
  // 2 x 4: 116, 3 x 4: 116, 3 x 3: 126); Q6_K 4 x 2 127 (2 x 4: 246, 2 x 2: 195, 1 x 4: 183).
  if constexpr (kType == Int8Type::Q6_K || kType == Int8Type::Q6_K_Lanes)
    return rows_panel<kType, 4, 2>(W, row_bytes, x, bias, Y, m, r0, r1);
  else return rows_panel<kType, 4, 3>(W, row_bytes, x, bias, Y, m, r0, r1);
}

}  // namespace

void int8_rows_avx512vnni(Int8Type type, const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias,
                          float* Y, int m, int r0, int r1) {
  switch (type) {
    case Int8Type::Q8_0: return rows<Int8Type::Q8_0>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_0: return rows<Int8Type::Q4_0>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_0: return rows<Int8Type::Q5_0>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_1: return rows<Int8Type::Q4_1>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_1: return rows<Int8Type::Q5_1>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::MXFP4: return rows<Int8Type::MXFP4>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_K: return rows<Int8Type::Q4_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_K: return rows<Int8Type::Q5_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q6_K: return rows<Int8Type::Q6_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_K_Lanes: return rows<Int8Type::Q4_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_0_Lanes: return rows<Int8Type::Q4_0_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q8_0_Lanes: return rows<Int8Type::Q8_0_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_K_Lanes: return rows<Int8Type::Q5_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q6_K_Lanes: return rows<Int8Type::Q6_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
  }
}

}  // namespace specscope::cpu::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options
