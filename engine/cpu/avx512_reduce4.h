// Internal to engine/cpu: the AVX-512 horizontal sum of four vectors shared by the f32/f16/bf16 widening kernels
// (matmul_avx512.cpp) and the bf16 dot kernel (matmul_bf16dot.cpp). Included by each after its
// `#pragma GCC target(...)` line (with <immintrin.h> included before it), so that it compiles for AVX-512 there
// and nowhere else.
#pragma once

namespace specscope::cpu::detail {
namespace {  // internal to each including file: each compiles it for its own target

// [sum(a), sum(b), sum(c), sum(d)] with 13 instructions instead of four full horizontal sums. The order of the
// additions is fixed, so a sum never depends on which vectors share the call.
__attribute__((always_inline)) inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // Per 128-bit block j: [a_j0+a_j1, a_j2+a_j3, b_j0+b_j1, b_j2+b_j3], same for c, d.
  __m512 ab = _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
  __m512 cd = _mm512_add_ps(_mm512_shuffle_ps(c, d, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(c, d, _MM_SHUFFLE(3, 1, 3, 1)));
  // Per block j: [a_j, b_j, c_j, d_j].
  __m512 s = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

}  // namespace
}  // namespace specscope::cpu::detail
