#pragma once
// The 256-bit integer dot kernels (quant_int8.h), shared by the AVX2 (vpmaddubsw + vpmaddwd) and AVX-VNNI
// (vpdpbusd on ymm) families: each includes this file inside its own #pragma GCC target region and supplies an Ops
// with its products (AVX2: vpmaddubsw pair sums, added in int16 as far as they cannot overflow, then one vpmaddwd;
// AVX-VNNI: the 4-product dot-and-add). Everything here has internal linkage (anonymous namespace) on purpose, so
// that the two translation units' copies, compiled for different instruction sets, never merge at link time.
//
// A group of 16 blocks is done as two halves of 8 (a K-quant super-block each), one block per ymm lane: per row and
// half, the weights are unpacked once and transposed to the activations' interleaved layout (ActQ8: lane b of
// vector j = codes 4j..4j+3 of block b), then reused for every token, where 8 dots leave each block's exact integer
// dot in its own lane. Both families multiply unsigned weight codes by signed activation codes (exact: vpmaddubsw's
// pair sums stay below 2 * 63 * 127 for codes up to 63), with the same exact offset corrections as the AVX-512
// kernels; Q8_0's signed weights, whose 128-offset codes could saturate vpmaddubsw, go through |w| and sign(x, w) on
// AVX2 (Ops::kSignTrick). Then quant_int8.h's float formula, so the results equal the scalar reference's bit for bit.
// Rows go one by one, or in blocks of 4 group by group where a row's codes of every token no longer fit in L1
// (kYmmRowBlock says why).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/cpu/quant_int8.h"

namespace specscope::cpu::detail {
namespace {

#define QY_INLINE __attribute__((always_inline)) inline

constexpr int kYmmMaxTokens = 32;

struct Half {
  __m256i w[8];          // lane b of w[j]: codes 4j..4j+3 of block b (Q8_0 with kSignTrick: the signed codes)
  __m256i w_abs[8];      // Q8_0 with kSignTrick: |w[j]| (once per row, not per token)
  __m256 fw, fm;         // as quant_int8_avx512.cpp's Group
  __m256i sc_lo, sc_hi;  // Q6_K: the scales of each block's first and second 16 elements
  __m256i sc16;          // Q6_K: the same as int16 pairs
  __m256i sc_first, sc_second;  // Q6_K: the scale of each block's first / second 16 elements in both int16 halves
};

// a[b]: the 32 codes of block b -> H.w.
QY_INLINE void to_lanes(const __m256i* a, Half& H) {
  __m256i u[4], w[4];
  for (int half = 0; half < 2; ++half) {  // 4x4 dword transposes within 128-bit lanes of a[0..3], then a[4..7]
    const __m256i* x = a + 4 * half;
    __m256i* o = half ? w : u;
    const __m256i t0 = _mm256_unpacklo_epi32(x[0], x[1]), t1 = _mm256_unpackhi_epi32(x[0], x[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(x[2], x[3]), t3 = _mm256_unpackhi_epi32(x[2], x[3]);
    o[0] = _mm256_unpacklo_epi64(t0, t2), o[1] = _mm256_unpackhi_epi64(t0, t2);
    o[2] = _mm256_unpacklo_epi64(t1, t3), o[3] = _mm256_unpackhi_epi64(t1, t3);
  }
  // Lane q of u[i]: dword 4q + i of blocks 0-3; of w[i]: of blocks 4-7.
  for (int i = 0; i < 4; ++i) {
    H.w[i] = _mm256_permute2x128_si256(u[i], w[i], 0x20);
    H.w[4 + i] = _mm256_permute2x128_si256(u[i], w[i], 0x31);
  }
}

QY_INLINE float f16y(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

QY_INLINE __m256 f16_of_8_blocks(const uint8_t* g, int bytes) {
  alignas(16) uint16_t h[8];
  for (int b = 0; b < 8; ++b) std::memcpy(&h[b], g + b * bytes, 2);
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

QY_INLINE __m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

template <class Ops>
QY_INLINE void unpack_q8_0(const uint8_t* g, Half& H) {
  H.fw = f16_of_8_blocks(g, kQ8_0Bytes);
  __m256i a[8];
  for (int b = 0; b < 8; ++b) {
    const __m256i q = load256(g + kQ8_0Bytes * b + 2);
    a[b] = Ops::kSignTrick ? q : _mm256_xor_si256(q, _mm256_set1_epi8(char(0x80)));
  }
  to_lanes(a, H);
  if constexpr (Ops::kSignTrick)
    for (int j = 0; j < 8; ++j) H.w_abs[j] = _mm256_sign_epi8(H.w[j], H.w[j]);
}

// Q4_0, Q4_1, Q5_0, Q5_1 (blocks of kBytes): 32 codes from the 16 bytes of nibbles at byte kQs (elements 0-15 the low
// nibbles, 16-31 the high); the 5-bit types (kQh >= 0) add bit i of the qh word at byte kQh as element i's fifth bit:
// the word broadcast, each byte p picking byte p / 8 of it, then bit p % 8 tested by or-ing in every other bit and
// comparing with all ones.
// kLut (MXFP4): each nibble then becomes its kMxfp4Codes entry, one byte shuffle.
template <int kBytes, int kQs, int kQh, bool kLut = false>
QY_INLINE void unpack_nibbles(const uint8_t* g, Half& H) {
  const __m256i shift = _mm256_set_epi64x(4, 4, 0, 0), m4 = _mm256_set1_epi8(15), fifth = _mm256_set1_epi8(16);
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Codes)));
  const __m256i pick = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe), ones = _mm256_set1_epi64x(-1);
  __m256i a[8];
  for (int b = 0; b < 8; ++b) {
    const uint8_t* blk = g + kBytes * b;
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQs)));
    a[b] = _mm256_and_si256(_mm256_srlv_epi64(v, shift), m4);
    if constexpr (kQh >= 0) {
      int32_t qh;
      std::memcpy(&qh, blk + kQh, 4);
      const __m256i set =
          _mm256_cmpeq_epi8(_mm256_or_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(qh), pick), others), ones);
      a[b] = _mm256_or_si256(a[b], _mm256_and_si256(set, fifth));
    }
    if constexpr (kLut) a[b] = _mm256_shuffle_epi8(lut, a[b]);
  }
  to_lanes(a, H);
}

// MXFP4 (quant_int8.h): the 8 blocks' 2^(e - 128) as quant_int8_avx512.cpp's unpack_mxfp4 makes them, and the codes
// through the table.
QY_INLINE void unpack_mxfp4(const uint8_t* g, Half& H) {
  alignas(32) int32_t e[8];
  for (int b = 0; b < 8; ++b) e[b] = g[b * kMxfp4Bytes];
  const __m256i ev = _mm256_load_si256(reinterpret_cast<const __m256i*>(e));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(ev, _mm256_set1_epi32(1)), 23);
  const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), ev);
  H.fw = _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), ev)));
  unpack_nibbles<kMxfp4Bytes, 1, -1, true>(g, H);
}

// A nibble-block half group: the blocks' scale d, for Q4_1 / Q5_1 their minimum negated (see quant_int8_avx512.cpp),
// and the codes.
template <Int8Type kType>
QY_INLINE void unpack_nibble_blocks(const uint8_t* g, Half& H) {
  constexpr NibbleBlock L = nibble_block(kType);
  H.fw = f16_of_8_blocks(g, L.bytes);
  if constexpr (L.has_min) H.fm = _mm256_xor_ps(f16_of_8_blocks(g + 2, L.bytes), _mm256_set1_ps(-0.f));
  unpack_nibbles<L.bytes, L.qs, L.qh>(g, H);
}

// The float factors of one Q4_K / Q5_K super-block (the same in ggml's and the lanes layouts).
QY_INLINE void k45_factors(const uint8_t* blk, Half& H) {
  const K4Words k = k4_scale_min_words(blk + 4);
  H.fw = _mm256_mul_ps(_mm256_set1_ps(f16y(blk)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, int(k.sc[1]), int(k.sc[0])))));
  H.fm = _mm256_mul_ps(_mm256_set1_ps(f16y(blk + 2)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, int(k.mn[1]), int(k.mn[0])))));
}

// The 4-bit codes of a unit or super-block in the lanes layouts (kquant_lanes.h, 128 bytes at `codes`): a unit is a
// half here, so chunk k, masked, is step k and, shifted right by 4, step k + 4, with no transposes.
QY_INLINE void lanes_nibbles(const uint8_t* codes, Half& H) {
  const __m256i m4 = _mm256_set1_epi8(15);
  for (int k = 0; k < 4; ++k) {
    const __m256i v = load256(codes + 32 * k);
    H.w[k] = _mm256_and_si256(v, m4);
    H.w[k + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  }
}

// One Q4_K / Q5_K super-block in the lanes layouts (kquant_lanes.h): its codes as lanes_nibbles reads them; Q5_K's
// fifth bit j joins step j.
template <bool q5>
QY_INLINE void unpack_k45_lanes(const uint8_t* blk, Half& H) {
  k45_factors(blk, H);
  lanes_nibbles(blk + (q5 ? 48 : 16), H);
  if constexpr (q5) {
    const __m256i h = load256(blk + 16), bit4 = _mm256_set1_epi8(0x10);
    for (int j = 0; j < 8; ++j) {
      const __m256i moved = j <= 4 ? _mm256_slli_epi16(h, 4 - j) : _mm256_srli_epi16(h, j - 4);
      H.w[j] = _mm256_or_si256(H.w[j], _mm256_and_si256(moved, bit4));
    }
  }
}

// The f16 scales of a unit of 8 blocks in the lanes layouts (its first 16 bytes), widened.
QY_INLINE __m256 unit_scales(const uint8_t* unit) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit)));
}

// A Q8_0 unit of 8 blocks in the lanes layout (kquant_lanes.h): its 8 scales, then step j's 32 bytes at 16 + 32 j.
template <class Ops>
QY_INLINE void unpack_q8_0_lanes(const uint8_t* unit, Half& H) {
  H.fw = unit_scales(unit);
  for (int j = 0; j < 8; ++j) {
    const __m256i q = load256(unit + 16 + 32 * j);
    H.w[j] = Ops::kSignTrick ? q : _mm256_xor_si256(q, _mm256_set1_epi8(char(0x80)));
    if constexpr (Ops::kSignTrick) H.w_abs[j] = _mm256_sign_epi8(H.w[j], H.w[j]);
  }
}

// A Q4_0 unit of 8 blocks in the lanes layout (kquant_lanes.h): its 8 scales, then its codes as Q4_K_Lanes'.
QY_INLINE void unpack_q4_0_lanes(const uint8_t* unit, Half& H) {
  H.fw = unit_scales(unit);
  lanes_nibbles(unit + 16, H);
}

// One Q4_K / Q5_K super-block in ggml's layout.
template <bool q5>
QY_INLINE void unpack_k45(const uint8_t* blk, Half& H) {
  k45_factors(blk, H);
  const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
  const uint8_t* qs = blk + (q5 ? 48 : 16);
  __m256i a[8];
  for (int c = 0; c < 4; ++c) {
    const __m256i v = load256(qs + 32 * c);
    a[2 * c] = _mm256_and_si256(v, m4);
    a[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  }
  if constexpr (q5) {
    const __m256i qh = load256(blk + 16);
    for (int s = 0; s < 8; ++s)
      a[s] = _mm256_or_si256(a[s], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, s), one), 4));
  }
  to_lanes(a, H);
}

// The scales and d of one Q6_K super-block (the same in ggml's and the lanes layouts).
QY_INLINE void q6k_factors(const uint8_t* blk, Half& H) {
  // Scales: byte 2b + p of the 16 is half p of block b.
  H.sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192)));
  H.sc_lo = _mm256_srai_epi32(_mm256_slli_epi32(H.sc16, 16), 16);
  H.sc_hi = _mm256_srai_epi32(H.sc16, 16);
  H.sc_first = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(H.sc16, 0xa0), 0xa0);  // int16 elements 0,0,2,2,...
  H.sc_second = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(H.sc16, 0xf5), 0xf5);  // 1,1,3,3,...
  H.fw = _mm256_set1_ps(f16y(blk + 208));
}

// One Q6_K super-block in the lanes layout (kquant_lanes.h): step j is chunk j % 4's nibble j / 4 with the high bits
// of chunk j / 4, shifted to bits 4-5.
QY_INLINE void unpack_q6k_lanes(const uint8_t* blk, Half& H) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const __m256i h0 = load256(blk + 128), h1 = load256(blk + 160);
  for (int k = 0; k < 4; ++k) {
    const __m256i v = load256(blk + 32 * k);
    const auto high = [&](__m256i h) {
      return _mm256_and_si256(k == 3 ? _mm256_srli_epi16(h, 2) : _mm256_slli_epi16(h, 4 - 2 * k), m30);
    };
    H.w[k] = _mm256_or_si256(_mm256_and_si256(v, m4), high(h0));
    H.w[k + 4] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), high(h1));
  }
  q6k_factors(blk, H);
}

// One Q6_K super-block in ggml's layout: codes 0..63, the -32 a correction.
QY_INLINE void unpack_q6_k(const uint8_t* blk, Half& H) {
  const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
  __m256i a[8];
  for (int h = 0; h < 2; ++h) {
    const __m256i l0 = load256(blk + 64 * h), l1 = load256(blk + 64 * h + 32), qh = load256(blk + 128 + 32 * h);
    for (int r = 0; r < 4; ++r) {  // run r: block 4h + r
      const __m256i low = _mm256_and_si256(_mm256_srli_epi16((r & 1) ? l1 : l0, 4 * (r >> 1)), m4);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * r), m3);
      a[4 * h + r] = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
    }
  }
  to_lanes(a, H);
  q6k_factors(blk, H);
}

QY_INLINE float lane_sum16(const float* a) {
  const __m256 a8 = _mm256_add_ps(_mm256_load_ps(a), _mm256_load_ps(a + 8));
  const __m128 a4 = _mm_add_ps(_mm256_castps256_ps128(a8), _mm256_extractf128_ps(a8, 1));
  const __m128 a2 = _mm_add_ps(a4, _mm_movehl_ps(a4, a4));
  return _mm_cvtss_f32(_mm_add_ss(a2, _mm_shuffle_ps(a2, a2, 1)));
}

// Steps j0 .. j0 + kCount - 1 of a half: lane b gets block b's dot over those steps. Where Ops multiplies through
// vpmaddubsw (int16 pair sums, then vpmaddwd to int32), up to kCount steps' pair sums are added in int16 before the one
// widening: exact while kCount * 2 * (largest code) * 127 stays below 2^15 (int16_run_steps).
template <class Ops, Int8Type kType, int kCount>
QY_INLINE __m256i dot_steps(const Half& H, const int8_t* xq, int j0, __m256i widen_by) {
  const auto x_at = [&](int j) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 64 * j)); };
  if constexpr (Ops::kInt16Pairs) {
    __m256i p16 = _mm256_setzero_si256();
    for (int j = j0; j < j0 + kCount; ++j) {
      __m256i p;
      static_assert(!int8_is_q8_0(kType) || Ops::kSignTrick, "128-offset Q8_0 codes would saturate the pairs");
      if constexpr (int8_is_q8_0(kType))  // |w| times x with w's sign (the codes are signed here)
        p = Ops::pairs(H.w_abs[j], _mm256_sign_epi8(x_at(j), H.w[j]));
      else
        p = Ops::pairs(H.w[j], x_at(j));
      p16 = j == j0 ? p : _mm256_add_epi16(p16, p);
    }
    return _mm256_madd_epi16(p16, widen_by);
  } else {
    __m256i sum = _mm256_setzero_si256();
    for (int j = j0; j < j0 + kCount; ++j) sum = Ops::dot_add(sum, H.w[j], x_at(j));
    return sum;
  }
}

// How many steps' vpmaddubsw pair sums fit in int16: codes below 16 (Q4), 32 (Q5, MXFP4), 64 (Q6), and Q8_0's
// |w| <= 128.
constexpr int int16_run_steps(Int8Type t) {
  switch (t) {
    case Int8Type::Q8_0:
    case Int8Type::Q8_0_Lanes: return 1;
    case Int8Type::Q5_0:
    case Int8Type::Q5_1:
    case Int8Type::Q5_K:
    case Int8Type::Q5_K_Lanes:
    case Int8Type::MXFP4: return 4;  // codes 4..28
    case Int8Type::Q6_K:
    case Int8Type::Q6_K_Lanes: return 2;
    default: return 8;
  }
}
static_assert(8 * 2 * 15 * 127 < 32768 && 4 * 2 * 31 * 127 < 32768 && 2 * 2 * 63 * 127 < 32768 &&
              2 * 128 * 127 < 32768);

// The exact integer dot of each of a half's 8 blocks with one token's codes (lane b: block b), before the codes'
// offset corrections; Q6_K's already weighted by its two per-16 scales.
template <class Ops, Int8Type kType>
QY_INLINE __m256i half_dot(const Half& H, const int8_t* xq) {
  constexpr bool kQ6 = kType == Int8Type::Q6_K || kType == Int8Type::Q6_K_Lanes;
  if constexpr (kQ6 && Ops::kInt16Pairs) {
    // Each half-block's pair sums widened by its scale (vpmaddwd against the scale in both int16 halves).
    const __m256i first = _mm256_add_epi32(dot_steps<Ops, kType, 2>(H, xq, 0, H.sc_first),
                                           dot_steps<Ops, kType, 2>(H, xq, 2, H.sc_first));
    const __m256i second = _mm256_add_epi32(dot_steps<Ops, kType, 2>(H, xq, 4, H.sc_second),
                                            dot_steps<Ops, kType, 2>(H, xq, 6, H.sc_second));
    return _mm256_add_epi32(first, second);
  } else if constexpr (kQ6) {
    return _mm256_add_epi32(_mm256_mullo_epi32(dot_steps<Ops, kType, 4>(H, xq, 0, __m256i()), H.sc_lo),
                            _mm256_mullo_epi32(dot_steps<Ops, kType, 4>(H, xq, 4, __m256i()), H.sc_hi));
  } else {
    constexpr int kRun = Ops::kInt16Pairs ? int16_run_steps(kType) : 8;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i I = dot_steps<Ops, kType, kRun>(H, xq, 0, ones);
    for (int j0 = kRun; j0 < 8; j0 += kRun) I = _mm256_add_epi32(I, dot_steps<Ops, kType, kRun>(H, xq, j0, ones));
    return I;
  }
}

template <Int8Type kType, class Ops>
QY_INLINE void unpack_half(const uint8_t* hp, Half& H) {
  if constexpr (kType == Int8Type::Q8_0) unpack_q8_0<Ops>(hp, H);
  else if constexpr (int8_is_nibble_block(kType)) unpack_nibble_blocks<kType>(hp, H);
  else if constexpr (kType == Int8Type::Q4_K) unpack_k45<false>(hp, H);
  else if constexpr (kType == Int8Type::Q5_K) unpack_k45<true>(hp, H);
  else if constexpr (kType == Int8Type::Q4_0_Lanes) unpack_q4_0_lanes(hp, H);
  else if constexpr (kType == Int8Type::Q8_0_Lanes) unpack_q8_0_lanes<Ops>(hp, H);
  else if constexpr (kType == Int8Type::Q4_K_Lanes) unpack_k45_lanes<false>(hp, H);
  else if constexpr (kType == Int8Type::Q5_K_Lanes) unpack_k45_lanes<true>(hp, H);
  else if constexpr (kType == Int8Type::Q6_K_Lanes) unpack_q6k_lanes(hp, H);
  else if constexpr (kType == Int8Type::MXFP4) unpack_mxfp4(hp, H);
  else unpack_q6_k(hp, H);
}

// Rows go one after another while every token's codes of a row fit in L1 beside the weights (kYmmL1Codes): the
// weights then stream in one sequential run, which the hardware prefetcher follows. Past that (32 tokens of a 2048-wide
// product: 64 KB of codes per row, read from L2 by every row), rows go in blocks of kYmmRowBlock, group by group, so
// one group's codes of the chunk's tokens (at most kYmmMaxTokens * 512 bytes) stay in L1 across the block's rows, with
// their accumulators; the block's rows are then short interleaved runs the prefetcher does not learn, so the kernel
// prefetches the next block itself, a slice per group and row, at the pace it reads this one.
constexpr int kYmmRowBlock = 4;
constexpr size_t kYmmL1Codes = 16 * 1024;

template <class Ops, Int8Type kType>
void rows_ymm(const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias, float* Y, int m, int r0, int r1) {
  constexpr bool kMins = int8_has_mins(kType);
  constexpr bool kQ6 = kType == Int8Type::Q6_K || kType == Int8Type::Q6_K_Lanes;
  const size_t gb = int8_group_bytes(kType), hb = gb / 2;
  const int groups = x.blocks() / kQ8Lanes;
  const int full = int(row_bytes / gb);
  const uint8_t* W_end = W + size_t(m) * row_bytes;
  alignas(64) uint8_t pad[544];
  alignas(64) float acc[kYmmRowBlock][kYmmMaxTokens][kQ8Lanes];
  // Equal chunks (40 tokens: 20 + 20, not 32 + 8): each chunk unpacks every row again.
  const int chunks = (x.n + kYmmMaxTokens - 1) / kYmmMaxTokens, per_chunk = (x.n + chunks - 1) / chunks;
  for (int t0 = 0; t0 < x.n; t0 += per_chunk) {
    const int T = std::min(per_chunk, x.n - t0);
    const int block = size_t(T) * size_t(x.kp) <= kYmmL1Codes ? 1 : kYmmRowBlock;
    // The next block's bytes each (group, row) step prefetches, in whole lines.
    const size_t slice = (size_t(block) * row_bytes / size_t(block * groups) + 63) / 64 * 64;
    for (int rb = r0; rb < r1; rb += block) {
      const int rows = std::min(block, r1 - rb);
      const uint8_t* next = W + size_t(rb + block) * row_bytes;
      const uint8_t* next_end = W + size_t(std::min(r1, rb + 2 * block)) * row_bytes;
      for (int i = 0; i < rows; ++i)
        for (int t = 0; t < T; ++t) std::fill(acc[i][t], acc[i][t] + kQ8Lanes, 0.f);
      for (int g = 0; g < groups; ++g) {
        for (int i = 0; i < rows; ++i) {
          if (block > 1)
            for (size_t o = 0; o < slice && next < next_end; o += 64, next += 64) _mm_prefetch(next, _MM_HINT_T0);
          const uint8_t* gp = W + size_t(rb + i) * row_bytes + size_t(g) * gb;
          // A row ending inside this group: read in place with the blocks past its end given zero scales where the
          // group's span lies inside the tensor, else (its last rows) through a zeroed copy (quant_int8_avx512.cpp's
          // unpack_group says why).
          int keep_lanes = kQ8Lanes;
          if (g >= full) {
            keep_lanes = int((row_bytes - size_t(full) * gb) * kQ8Lanes / gb);
            if (gp + gb > W_end) {
              std::memset(pad, 0, sizeof pad);
              std::memcpy(pad, gp, row_bytes - size_t(full) * gb);
              gp = pad;
              keep_lanes = kQ8Lanes;
            }
          }
          for (int h = 0; h < 2; ++h) {
            Half H;
            unpack_half<kType, Ops>(gp + size_t(h) * hb, H);
            if (keep_lanes < kQ8Lanes) {
              const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(keep_lanes - 8 * h),
                                                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
              H.fw = _mm256_and_ps(H.fw, keep);
              if constexpr (kMins) H.fm = _mm256_and_ps(H.fm, keep);
            }
            const size_t b0 = size_t(g) * kQ8Lanes + size_t(h) * 8;
            for (int t = 0; t < T; ++t) {
              __m256i I = half_dot<Ops, kType>(H, x.qs(t0 + t) + size_t(g) * kQ8Group + 32 * h);
              // Codes offset by 128, 8 or 16 (Q8_0's sign trick multiplies the signed codes instead).
              if constexpr (int8_code_offset_shift(kType) >= 0 && !(int8_is_q8_0(kType) && Ops::kSignTrick)) {
                const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sums32(t0 + t) + b0));
                I = _mm256_sub_epi32(I, _mm256_slli_epi32(s, int8_code_offset_shift(kType)));
              } else if constexpr (kQ6) {
                const __m256i s = _mm256_madd_epi16(
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sums16(t0 + t) + 2 * b0)), H.sc16);
                I = _mm256_sub_epi32(I, _mm256_slli_epi32(s, 5));
              }
              __m256 tb = _mm256_mul_ps(H.fw, _mm256_cvtepi32_ps(I));
              if constexpr (kMins)
                tb = _mm256_fnmadd_ps(
                    H.fm,
                    _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sums32(t0 + t) + b0))),
                    tb);
              float* a = acc[i][t] + 8 * h;
              _mm256_store_ps(a, _mm256_fmadd_ps(_mm256_loadu_ps(x.ds(t0 + t) + b0), tb, _mm256_load_ps(a)));
            }
          }
        }
      }
      for (int i = 0; i < rows; ++i)
        for (int t = 0; t < T; ++t)
          Y[size_t(t0 + t) * size_t(m) + size_t(rb + i)] = lane_sum16(acc[i][t]) + (bias ? bias[rb + i] : 0.f);
    }
  }
}

template <class Ops>
void rows_ymm_dispatch(Int8Type type, const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias, float* Y,
                       int m, int r0, int r1) {
  switch (type) {
    case Int8Type::Q8_0: return rows_ymm<Ops, Int8Type::Q8_0>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_0: return rows_ymm<Ops, Int8Type::Q4_0>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_0: return rows_ymm<Ops, Int8Type::Q5_0>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_1: return rows_ymm<Ops, Int8Type::Q4_1>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_1: return rows_ymm<Ops, Int8Type::Q5_1>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::MXFP4: return rows_ymm<Ops, Int8Type::MXFP4>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_K: return rows_ymm<Ops, Int8Type::Q4_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_K: return rows_ymm<Ops, Int8Type::Q5_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q6_K: return rows_ymm<Ops, Int8Type::Q6_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_K_Lanes: return rows_ymm<Ops, Int8Type::Q4_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_0_Lanes: return rows_ymm<Ops, Int8Type::Q4_0_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q8_0_Lanes: return rows_ymm<Ops, Int8Type::Q8_0_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_K_Lanes: return rows_ymm<Ops, Int8Type::Q5_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q6_K_Lanes: return rows_ymm<Ops, Int8Type::Q6_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
  }
}

}  // namespace
}  // namespace specscope::cpu::detail
