// Fused dequantize-and-dot AVX-512 kernels for GGUF block weights: the decode case (a few tokens) of
// linear_quant(). The generic path widens each weight row to an f32 buffer and then dots it; here the weights
// are widened in registers, 16 at a time, and multiplied into the tokens straight away, so each weight byte is
// read once and nothing is stored. Only called after a run-time AVX-512 check (matmul_quant.cpp).
//
// Every weight value is formed exactly as ggml's reference dequantization forms it (gguf_quant.h: an exact
// product d*sc*q), except that for Q4_K/Q5_K the "- dmin*m" of each 32-element sub-block is applied once per
// sub-block as dmin*m * sum(x) instead of to each weight. That changes only the order of f32 roundings, which is
// within the tolerances the tests hold the quantized layer to (matmul_quant_test, the GGUF model tests).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cpu/quant_dot.h"
#include "engine/formats/gguf_k_scales.h"

#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

namespace specscope::cpu::detail {
namespace {

#define QD_INLINE __attribute__((always_inline)) inline

constexpr int kMaxTokens = kQuantDotMaxTokens;

QD_INLINE float f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// 16 unsigned bytes -> 16 floats (exact).
QD_INLINE __m512 u8_to_ps(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)); }
// 16 signed bytes -> 16 floats (exact).
QD_INLINE __m512 i8_to_ps(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)); }

// The accumulators of one tile: R rows x T tokens, each a vector of partial sums, plus a scalar correction per
// (row, token) for the K-quant mins.
template <int R, int T>
struct Acc {
  __m512 v[R][T];
  float corr[R][T];
  QD_INLINE void zero() {
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) v[r][t] = _mm512_setzero_ps(), corr[r][t] = 0.f;
  }
  // 16 weights of row r at column c, against every token.
  QD_INLINE void fma16(int r, __m512 w, const float* const* x, int c) {
    for (int t = 0; t < T; ++t) v[r][t] = _mm512_fmadd_ps(w, _mm512_loadu_ps(x[t] + c), v[r][t]);
  }
};

// ---- one block of each type, for one row, accumulated into acc row r ----

template <int R, int T>
QD_INLINE void block_q8_0(const uint8_t* b, int c, int r, Acc<R, T>& acc, const float* const* x) {
  const __m512 d = _mm512_set1_ps(f16(b));
  const __m128i* q = reinterpret_cast<const __m128i*>(b + 2);
  acc.fma16(r, _mm512_mul_ps(i8_to_ps(_mm_loadu_si128(q)), d), x, c);
  acc.fma16(r, _mm512_mul_ps(i8_to_ps(_mm_loadu_si128(q + 1)), d), x, c + 16);
}

template <int R, int T>
QD_INLINE void block_q4_0(const uint8_t* b, int c, int r, Acc<R, T>& acc, const float* const* x) {
  const __m512 d = _mm512_set1_ps(f16(b));
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
  const __m128i m4 = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  const __m128i lo = _mm_sub_epi8(_mm_and_si128(qs, m4), eight);                      // elements 0..15
  const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), eight);  // elements 16..31
  acc.fma16(r, _mm512_mul_ps(i8_to_ps(lo), d), x, c);
  acc.fma16(r, _mm512_mul_ps(i8_to_ps(hi), d), x, c + 16);
}

// Q4_K (with_high = false) and Q5_K (true): x = d*sc*q - dmin*m per 32-element sub-block; xsum[t][s] is token
// t's sum over sub-block s of this super-block.
template <bool with_high, int R, int T>
QD_INLINE void block_k45(const uint8_t* b, int c, int r, Acc<R, T>& acc, const float* const* x,
                         const float* const* xsum, int sb0) {
  const float d = f16(b), dmin = f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = with_high ? b + 16 : nullptr;
  const uint8_t* qs = b + (with_high ? 48 : 16);
  const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  const __m256i hbits = with_high ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)) : _mm256_setzero_si256();
  for (int j = 0; j < 4; ++j) {  // 64 elements: sub-blocks 2j (low nibbles) and 2j + 1 (high nibbles)
    int sc0, m0, sc1, m1;
    k4_scale_min(2 * j, scales, &sc0, &m0);
    k4_scale_min(2 * j + 1, scales, &sc1, &m1);
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
    __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    if constexpr (with_high) {  // bit 2j of qh[l] is element l's fifth bit in sub-block 2j, bit 2j + 1 in 2j + 1
      lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), one), 4));
      hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), one), 4));
    }
    const __m512 d0 = _mm512_set1_ps(d * float(sc0)), d1 = _mm512_set1_ps(d * float(sc1));
    const int cc = c + 64 * j;
    acc.fma16(r, _mm512_mul_ps(u8_to_ps(_mm256_castsi256_si128(lo)), d0), x, cc);
    acc.fma16(r, _mm512_mul_ps(u8_to_ps(_mm256_extracti128_si256(lo, 1)), d0), x, cc + 16);
    acc.fma16(r, _mm512_mul_ps(u8_to_ps(_mm256_castsi256_si128(hi)), d1), x, cc + 32);
    acc.fma16(r, _mm512_mul_ps(u8_to_ps(_mm256_extracti128_si256(hi, 1)), d1), x, cc + 48);
    const float mn0 = dmin * float(m0), mn1 = dmin * float(m1);
    for (int t = 0; t < T; ++t) acc.corr[r][t] += mn0 * xsum[t][sb0 + 2 * j] + mn1 * xsum[t][sb0 + 2 * j + 1];
  }
}

// Q6_K: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales (one per 16 elements), f16 d;
// x = d*sc * (q - 32).
template <int R, int T>
QD_INLINE void block_q6_k(const uint8_t* b, int c, int r, Acc<R, T>& acc, const float* const* x) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16(b + 208);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
  const __m512i k32 = _mm512_set1_epi32(32);
  for (int half = 0; half < 2; ++half) {  // 128 elements each
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * half));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * half + 32));
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * half));
    // The four 32-element runs of this half: element l, l + 32, l + 64, l + 96.
    const __m256i q[4] = {
        _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4)),
        _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4)),
    };
    const int8_t* s = sc + 8 * half;
    for (int run = 0; run < 4; ++run) {
      const int cc = c + 128 * half + 32 * run;
      for (int part = 0; part < 2; ++part) {  // 16 elements, scale s[2 * run + part]
        const __m128i bytes = part ? _mm256_extracti128_si256(q[run], 1) : _mm256_castsi256_si128(q[run]);
        const __m512 qf = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), k32));
        acc.fma16(r, _mm512_mul_ps(qf, _mm512_set1_ps(d * float(s[2 * run + part]))), x, cc + 16 * part);
      }
    }
  }
}

// ---- tiles ----

template <int R, int T>
void tile(QuantDotType type, const uint8_t* W, size_t row_bytes, int k, const float* const* x,
          const float* const* xsum, int r0, float* const* y, const float* bias) {
  Acc<R, T> acc;
  acc.zero();
  for (int r = 0; r < R; ++r) {
    const uint8_t* row = W + size_t(r0 + r) * row_bytes;
    switch (type) {
      case QuantDotType::Q8_0:
        for (int c = 0, blk = 0; c < k; c += 32, ++blk) block_q8_0<R, T>(row + size_t(blk) * 34, c, r, acc, x);
        break;
      case QuantDotType::Q4_0:
        for (int c = 0, blk = 0; c < k; c += 32, ++blk) block_q4_0<R, T>(row + size_t(blk) * 18, c, r, acc, x);
        break;
      case QuantDotType::Q4_K:
        for (int c = 0, blk = 0; c < k; c += 256, ++blk)
          block_k45<false, R, T>(row + size_t(blk) * 144, c, r, acc, x, xsum, 8 * blk);
        break;
      case QuantDotType::Q5_K:
        for (int c = 0, blk = 0; c < k; c += 256, ++blk)
          block_k45<true, R, T>(row + size_t(blk) * 176, c, r, acc, x, xsum, 8 * blk);
        break;
      case QuantDotType::Q6_K:
        for (int c = 0, blk = 0; c < k; c += 256, ++blk) block_q6_k<R, T>(row + size_t(blk) * 210, c, r, acc, x);
        break;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[t][r0 + r] = _mm512_reduce_add_ps(acc.v[r][t]) - acc.corr[r][t] + (bias ? bias[r0 + r] : 0.f);
}

template <int T>
void rows_for(QuantDotType type, const uint8_t* W, size_t row_bytes, int k, const float* const* x,
              const float* const* xsum, int r0, int r1, float* const* y, const float* bias) {
  // 4 rows x up to 4 tokens, or 2 rows x 5-8 tokens: at most 16 accumulators, the rest of the 32 vector
  // registers hold the widened weights and the token vectors.
  constexpr int R = T <= 4 ? 4 : 2;
  int r = r0;
  for (; r + R <= r1; r += R) tile<R, T>(type, W, row_bytes, k, x, xsum, r, y, bias);
  for (; r < r1; ++r) tile<1, T>(type, W, row_bytes, k, x, xsum, r, y, bias);
}

}  // namespace

void quant_dot_rows_avx512(QuantDotType type, const uint8_t* W, size_t row_bytes, int k, const float* X, int n,
                           const float* bias, float* Y, int m, int r0, int r1) {
  // Per-token sums of every 32-element sub-block (the K-quant mins multiply them).
  const bool mins = type == QuantDotType::Q4_K || type == QuantDotType::Q5_K;
  thread_local std::vector<float> sums;
  if (mins) sums.assign(size_t(n) * size_t(k / 32), 0.f);
  for (int t0 = 0; t0 < n; t0 += kMaxTokens) {
    const int T = std::min(kMaxTokens, n - t0);
    const float* x[kMaxTokens];
    const float* xs[kMaxTokens];
    float* y[kMaxTokens];
    for (int t = 0; t < T; ++t) {
      x[t] = X + size_t(t0 + t) * k;
      y[t] = Y + size_t(t0 + t) * m;
      xs[t] = nullptr;
      if (mins) {
        float* s = sums.data() + size_t(t0 + t) * size_t(k / 32);
        for (int b = 0; b < k / 32; ++b) {
          __m512 v = _mm512_add_ps(_mm512_loadu_ps(x[t] + 32 * b), _mm512_loadu_ps(x[t] + 32 * b + 16));
          s[b] = _mm512_reduce_add_ps(v);
        }
        xs[t] = s;
      }
    }
    switch (T) {
      case 1: rows_for<1>(type, W, row_bytes, k, x, xs, r0, r1, y, bias); break;
      case 2: rows_for<2>(type, W, row_bytes, k, x, xs, r0, r1, y, bias); break;
      case 3: rows_for<3>(type, W, row_bytes, k, x, xs, r0, r1, y, bias); break;
      case 4: rows_for<4>(type, W, row_bytes, k, x, xs, r0, r1, y, bias); break;
      case 5: rows_for<5>(type, W, row_bytes, k, x, xs, r0, r1, y, bias); break;
      case 6: rows_for<6>(type, W, row_bytes, k, x, xs, r0, r1, y, bias); break;
      case 7: rows_for<7>(type, W, row_bytes, k, x, xs, r0, r1, y, bias); break;
      default: rows_for<8>(type, W, row_bytes, k, x, xs, r0, r1, y, bias); break;
    }
  }
}

}  // namespace specscope::cpu::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options
