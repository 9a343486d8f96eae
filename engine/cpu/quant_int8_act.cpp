// Activation rows to 8-bit blocks (quant_int8.h): the one quantizer every integer kernel reads, so that all of them
// see the same codes and scales. Runs once per linear call on the calling thread: a scalar loop (the reference), and
// AVX-512 and AVX2 ones that give the same bits.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/cpu/quant_int8.h"
#include "engine/cpu/round_even.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace specscope::cpu::detail {
namespace {

// One block of 32 activations: codes into q (interleaved, ActQ8::code_offset), scale and sums; false when the block
// holds a NaN or infinity (then nothing is written: codes 0, scale NaN by the caller).
bool quantize_block_scalar(const float* xb, int b, int8_t* q, float* d, int32_t* s32, int16_t* s16) {
  float amax = 0.f;
  bool finite = true;
  for (int i = 0; i < kQ8Block; ++i) {
    const float a = std::fabs(xb[i]);
    finite = finite && a <= FLT_MAX;  // false for NaN and infinities
    amax = a > amax ? a : amax;
  }
  if (!finite) return false;
  // Round to nearest (even) after one f32 multiply, as every kernel's codes were formed. A scale that is not a
  // normal float (max|x| below 127 * FLT_MIN) would overflow 1/d: such a block is quantized to zeros.
  const float db = amax / 127.f;
  const float id = db >= FLT_MIN ? 1.f / db : 0.f;
  int sum_lo = 0, sum_hi = 0;
  for (int i = 0; i < kQ8Block; ++i) {
    const int r = round_even(xb[i] * id);  // |x * id| <= 127 up to rounding: the clamp is a safeguard
    const int c = r > 127 ? 127 : r < -127 ? -127 : r;
    q[ActQ8::code_offset(b, i)] = int8_t(c);
    (i < 16 ? sum_lo : sum_hi) += c;
  }
  d[b] = id != 0.f ? db : 0.f;
  s32[b] = sum_lo + sum_hi;
  s16[2 * b] = int16_t(sum_lo);
  s16[2 * b + 1] = int16_t(sum_hi);
  return true;
}

#if defined(__x86_64__)
// The same operations 16 lanes at a time (IEEE division, multiply and cvtps2dq's round-to-nearest-even give the
// scalar loop's values bit for bit; quant_int8_test compares the two). One call per linear layer runs on the calling
// thread while the other threads wait, so its speed shows at many tokens (scalar: ~2 ns per activation).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) bool quantize_block_avx512(
    const float* xb, int b, int8_t* q, float* d, int32_t* s32, int16_t* s16) {
  const __m512 x0 = _mm512_loadu_ps(xb), x1 = _mm512_loadu_ps(xb + 16);
  const __m512 a0 = _mm512_abs_ps(x0), a1 = _mm512_abs_ps(x1);
  const __m512 big = _mm512_set1_ps(FLT_MAX);
  // a <= FLT_MAX is false for NaN and infinities (ordered, non-signalling compare)
  if ((_mm512_cmp_ps_mask(a0, big, _CMP_LE_OQ) & _mm512_cmp_ps_mask(a1, big, _CMP_LE_OQ)) != 0xFFFF) return false;
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));  // max is exact: order does not matter
  const float db = amax / 127.f;
  const float id = db >= FLT_MIN ? 1.f / db : 0.f;
  const __m512 vid = _mm512_set1_ps(id);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  const __m512i c0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x0, vid)), lo), hi);
  const __m512i c1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x1, vid)), lo), hi);
  // Dword j of the block's 32 codes goes to row j of its group (ActQ8::code_offset): 64 bytes apart.
  alignas(32) int32_t w[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(w), _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(c0)),
                                                                            _mm512_cvtepi32_epi8(c1), 1));
  int8_t* qb = q + ActQ8::code_offset(b, 0);
  for (int j = 0; j < 8; ++j) std::memcpy(qb + 64 * j, &w[j], 4);
  const int sum_lo = _mm512_reduce_add_epi32(c0), sum_hi = _mm512_reduce_add_epi32(c1);
  d[b] = id != 0.f ? db : 0.f;
  s32[b] = sum_lo + sum_hi;
  s16[2 * b] = int16_t(sum_lo);
  s16[2 * b + 1] = int16_t(sum_hi);
  return true;
}

// The same with 8-lane vectors, for CPUs without AVX-512 (the same operations, so the same bits). The 32 codes,
// clamped to [-127, 127], narrow exactly through the saturating packs; the packs interleave 128-bit lanes, leaving
// dword j of the result holding codes 4p..4p+3 of vector j % 4 (p = j / 4), which the permute puts back in order.
__attribute__((target("avx2"))) inline int hsum_epi32_avx2(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
}

__attribute__((target("avx2"))) bool quantize_block_avx2(const float* xb, int b, int8_t* q, float* d, int32_t* s32,
                                                         int16_t* s16) {
  const __m256 sign = _mm256_set1_ps(-0.f), big = _mm256_set1_ps(FLT_MAX);
  __m256 x[4], amax8 = _mm256_setzero_ps();
  int finite = 0xFF;
  for (int v = 0; v < 4; ++v) {
    x[v] = _mm256_loadu_ps(xb + 8 * v);
    const __m256 a = _mm256_andnot_ps(sign, x[v]);
    finite &= _mm256_movemask_ps(_mm256_cmp_ps(a, big, _CMP_LE_OQ));  // false for NaN and infinities
    amax8 = _mm256_max_ps(amax8, a);
  }
  if (finite != 0xFF) return false;
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax8), _mm256_extractf128_ps(amax8, 1));  // max is exact in any order
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
  const float db = amax / 127.f;
  const float id = db >= FLT_MIN ? 1.f / db : 0.f;
  const __m256 vid = _mm256_set1_ps(id);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  __m256i c[4];
  for (int v = 0; v < 4; ++v)
    c[v] = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(x[v], vid)), lo), hi);
  const __m256i bytes = _mm256_permutevar8x32_epi32(
      _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3])),
      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  alignas(32) int32_t w[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(w), bytes);
  int8_t* qb = q + ActQ8::code_offset(b, 0);
  for (int j = 0; j < 8; ++j) std::memcpy(qb + 64 * j, &w[j], 4);
  const int sum_lo = hsum_epi32_avx2(_mm256_add_epi32(c[0], c[1]));
  const int sum_hi = hsum_epi32_avx2(_mm256_add_epi32(c[2], c[3]));
  d[b] = id != 0.f ? db : 0.f;
  s32[b] = sum_lo + sum_hi;
  s16[2 * b] = int16_t(sum_lo);
  s16[2 * b + 1] = int16_t(sum_hi);
  return true;
}
#endif

using BlockFn = bool (*)(const float*, int, int8_t*, float*, int32_t*, int16_t*);

void quantize_rows(BlockFn block, const float* X, int n, int k, ActQ8* o) {
  o->n = n;
  o->k = k;
  o->kp = (k + kQ8Group - 1) / kQ8Group * kQ8Group;
  const int nb = k / kQ8Block, nbp = o->blocks();
  o->q.assign(size_t(n) * o->ldq(), 0);
  o->d.assign(size_t(n) * size_t(nbp), 0.f);
  o->s32.assign(size_t(n) * size_t(nbp), 0);
  o->s16.assign(size_t(n) * size_t(2 * nbp), 0);
  for (int t = 0; t < n; ++t) {
    const float* x = X + size_t(t) * size_t(k);
    int8_t* q = o->q.data() + size_t(t) * o->ldq();
    float* d = o->d.data() + size_t(t) * size_t(nbp);
    int32_t* s32 = o->s32.data() + size_t(t) * size_t(nbp);
    int16_t* s16 = o->s16.data() + size_t(t) * size_t(2 * nbp);
    for (int b = 0; b < nb; ++b)
      if (!block(x + size_t(b) * kQ8Block, b, q, d, s32, s16))  // codes 0, scale NaN: the outputs turn NaN, as the
        d[b] = std::numeric_limits<float>::quiet_NaN();         // exact product's would be non-finite
  }
}

}  // namespace

void quantize_act_scalar(const float* X, int n, int k, ActQ8* o) { quantize_rows(quantize_block_scalar, X, n, k, o); }

bool quantize_act_avx2(const float* X, int n, int k, ActQ8* o) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2")) return false;
  quantize_rows(quantize_block_avx2, X, n, k, o);
  return true;
#else
  return false;
#endif
}

void quantize_act(const float* X, int n, int k, ActQ8* o) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) return quantize_rows(quantize_block_avx512, X, n, k, o);
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return quantize_rows(quantize_block_avx2, X, n, k, o);
#endif
  quantize_act_scalar(X, n, k, o);
}

}  // namespace specscope::cpu::detail
