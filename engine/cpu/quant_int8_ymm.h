#pragma once
// The 256-bit integer dot kernels (quant_int8.h), shared by the AVX2 (vpmaddubsw + vpmaddwd) and AVX-VNNI
// (vpdpbusd on ymm) families: each includes this file inside its own #pragma GCC target region and supplies an Ops
// with the 4-product dot-and-add. Everything here has internal linkage (anonymous namespace) on purpose, so that the two
// translation units' copies, compiled for different instruction sets, never merge at link time.
//
// A group of 16 blocks is done as two halves of 8 (a K-quant super-block each), one block per ymm lane: per row and
// half, the weights are unpacked once and transposed to the activations' interleaved layout (ActQ8: lane b of
// vector j = codes 4j..4j+3 of block b), then reused for every token, where 8 dots leave each block's exact integer
// dot in its own lane. Both families multiply unsigned weight codes by signed activation codes (exact: vpmaddubsw's
// pair sums stay below 2 * 63 * 127 for codes up to 63), with the same exact offset corrections as the AVX-512
// kernels; Q8_0's signed weights, whose 128-offset codes could saturate vpmaddubsw, go through |w| and sign(x, w) on
// AVX2 (Ops::kSignTrick). Then quant_int8.h's float formula, so the results equal the scalar reference's bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/cpu/quant_int8.h"

namespace specscope::cpu::detail {
namespace {

#define QY_INLINE __attribute__((always_inline)) inline

constexpr int kYmmMaxTokens = 64;

struct Half {
  __m256i w[8];          // lane b of w[j]: codes 4j..4j+3 of block b (Q8_0 with kSignTrick: the signed codes)
  __m256 fw, fm;         // as quant_int8_avx512.cpp's Group
  __m256i sc_lo, sc_hi;  // Q6_K: the scales of each block's first and second 16 elements
  __m256i sc16;          // Q6_K: the same as int16 pairs
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
}

// Q4_0, Q4_1, Q5_0, Q5_1 (blocks of kBytes): 32 codes from the 16 bytes of nibbles at byte kQs (elements 0-15 the low
// nibbles, 16-31 the high); the 5-bit types (kQh >= 0) add bit i of the qh word at byte kQh as element i's fifth bit:
// the word broadcast, each byte p picking byte p / 8 of it, then bit p % 8 tested by or-ing in every other bit and
// comparing with all ones.
template <int kBytes, int kQs, int kQh>
QY_INLINE void unpack_nibbles(const uint8_t* g, Half& H) {
  const __m256i shift = _mm256_set_epi64x(4, 4, 0, 0), m4 = _mm256_set1_epi8(15), fifth = _mm256_set1_epi8(16);
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
  }
  to_lanes(a, H);
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

// One Q4_K / Q5_K super-block in the lanes layouts (kquant_lanes.h): a super-block is a half here, so chunk k,
// masked, is step k and, shifted by 4, step k + 4, with no transposes; Q5_K's fifth bit j joins step j.
template <bool q5>
QY_INLINE void unpack_k45_lanes(const uint8_t* blk, Half& H) {
  k45_factors(blk, H);
  const __m256i m4 = _mm256_set1_epi8(15);
  const uint8_t* qs = blk + (q5 ? 48 : 16);
  for (int k = 0; k < 4; ++k) {
    const __m256i v = load256(qs + 32 * k);
    H.w[k] = _mm256_and_si256(v, m4);
    H.w[k + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  }
  if constexpr (q5) {
    const __m256i h = load256(blk + 16), bit4 = _mm256_set1_epi8(0x10);
    for (int j = 0; j < 8; ++j) {
      const __m256i moved = j <= 4 ? _mm256_slli_epi16(h, 4 - j) : _mm256_srli_epi16(h, j - 4);
      H.w[j] = _mm256_or_si256(H.w[j], _mm256_and_si256(moved, bit4));
    }
  }
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

template <class Ops, Int8Type kType>
void rows_ymm(const uint8_t* W, size_t row_bytes, const ActQ8& x, const float* bias, float* Y, int m, int r0, int r1) {
  constexpr bool kMins = int8_has_mins(kType);
  constexpr bool kQ6 = kType == Int8Type::Q6_K || kType == Int8Type::Q6_K_Lanes;
  const size_t gb = int8_group_bytes(kType), hb = gb / 2;
  const int groups = x.blocks() / kQ8Lanes;
  const int full = int(row_bytes / gb);
  const uint8_t* W_end = W + size_t(m) * row_bytes;
  alignas(64) uint8_t pad[544];
  alignas(64) float acc[kYmmMaxTokens][kQ8Lanes];
  for (int t0 = 0; t0 < x.n; t0 += kYmmMaxTokens) {
    const int T = std::min(kYmmMaxTokens, x.n - t0);
    for (int r = r0; r < r1; ++r) {
      const uint8_t* row = W + size_t(r) * row_bytes;
      for (int t = 0; t < T; ++t) std::fill(acc[t], acc[t] + kQ8Lanes, 0.f);
      for (int g = 0; g < groups; ++g) {
        const uint8_t* gp = row + size_t(g) * gb;
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
          const uint8_t* hp = gp + size_t(h) * hb;
          if constexpr (kType == Int8Type::Q8_0) unpack_q8_0<Ops>(hp, H);
          else if constexpr (int8_is_nibble_block(kType)) unpack_nibble_blocks<kType>(hp, H);
          else if constexpr (kType == Int8Type::Q4_K) unpack_k45<false>(hp, H);
          else if constexpr (kType == Int8Type::Q5_K) unpack_k45<true>(hp, H);
          else if constexpr (kType == Int8Type::Q4_K_Lanes) unpack_k45_lanes<false>(hp, H);
          else if constexpr (kType == Int8Type::Q5_K_Lanes) unpack_k45_lanes<true>(hp, H);
          else if constexpr (kType == Int8Type::Q6_K_Lanes) unpack_q6k_lanes(hp, H);
          else unpack_q6_k(hp, H);
          if (keep_lanes < kQ8Lanes) {
            const __m256 keep = _mm256_castsi256_ps(
                _mm256_cmpgt_epi32(_mm256_set1_epi32(keep_lanes - 8 * h), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
            H.fw = _mm256_and_ps(H.fw, keep);
            if constexpr (kMins) H.fm = _mm256_and_ps(H.fm, keep);
          }
          const size_t b0 = size_t(g) * kQ8Lanes + size_t(h) * 8;
          for (int t = 0; t < T; ++t) {
            // Two chains of 4 (each block's first and second 16 elements): lane b sums block b's products.
            const int8_t* xq = x.qs(t0 + t) + size_t(g) * kQ8Group + 32 * h;
            __m256i part[2];
            for (int c = 0; c < 2; ++c) {
              __m256i sum = _mm256_setzero_si256();
              for (int j = 4 * c; j < 4 * c + 4; ++j) {
                const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 64 * j));
                if constexpr (kType == Int8Type::Q8_0 && Ops::kSignTrick)
                  sum = Ops::dot_add(sum, _mm256_sign_epi8(H.w[j], H.w[j]), _mm256_sign_epi8(xv, H.w[j]));
                else
                  sum = Ops::dot_add(sum, H.w[j], xv);
              }
              part[c] = sum;
            }
            __m256i I = kQ6 ? _mm256_add_epi32(_mm256_mullo_epi32(part[0], H.sc_lo), _mm256_mullo_epi32(part[1], H.sc_hi))
                            : _mm256_add_epi32(part[0], part[1]);
            // Codes offset by 128, 8 or 16 (Q8_0's sign trick multiplies the signed codes instead).
            if constexpr (int8_code_offset_shift(kType) >= 0 && !(kType == Int8Type::Q8_0 && Ops::kSignTrick)) {
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
                  _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.sums32(t0 + t) + b0))), tb);
            float* a = acc[t] + 8 * h;
            _mm256_store_ps(a, _mm256_fmadd_ps(_mm256_loadu_ps(x.ds(t0 + t) + b0), tb, _mm256_load_ps(a)));
          }
        }
      }
      for (int t = 0; t < T; ++t) Y[size_t(t0 + t) * size_t(m) + size_t(r)] = lane_sum16(acc[t]) + (bias ? bias[r] : 0.f);
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
    case Int8Type::Q4_K: return rows_ymm<Ops, Int8Type::Q4_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_K: return rows_ymm<Ops, Int8Type::Q5_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q6_K: return rows_ymm<Ops, Int8Type::Q6_K>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q4_K_Lanes: return rows_ymm<Ops, Int8Type::Q4_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q5_K_Lanes: return rows_ymm<Ops, Int8Type::Q5_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
    case Int8Type::Q6_K_Lanes: return rows_ymm<Ops, Int8Type::Q6_K_Lanes>(W, row_bytes, x, bias, Y, m, r0, r1);
  }
}

}  // namespace
}  // namespace specscope::cpu::detail
