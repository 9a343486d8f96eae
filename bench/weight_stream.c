// How fast one thread streams a matrix-vector product's weights from memory with the two 16-bit kernels' inner
// loops, stripped of everything else: 4 rows at a time, bf16 through vdpbf16ps (one 64-byte load and one
// instruction per line), f16 through vcvtph2ps + FMA (two loads, two conversions and two FMAs per line), each with
// and without software prefetch of the rows 8 ahead (what the engine's row kernels do). 64 MB of weights, best of
// 15 passes. On the 2-core development VM (AMD EPYC, Zen 5, 2026-11-28, three runs): bf16 38.3-40.7 GB/s without
// prefetch and 34.7-35.8 with it; f16 24.2-25.6 without and 33.2-34.9 with. The f16 loop needs the prefetch and
// still stays behind the best bf16 one, as llama.cpp's F16 does on the same machine (its F16 decode 19.6 tok/s
// against BF16 27.2 on the 1B files).
//   cc -O2 -o /tmp/weight_stream bench/weight_stream.c && /tmp/weight_stream
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kK = 2048, kRows = 16384, kAhead = 8 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) static float bf16_rows(const uint16_t* w, size_t rows,
                                                                              const uint16_t* xb, int prefetch) {
  __m512 total = _mm512_setzero_ps();
  for (size_t r = 0; r < rows; r += 4) {
    const uint16_t* p = w + r * kK;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < kK; i += 32) {
      if (prefetch)
        for (int j = 0; j < 4; j++) _mm_prefetch((const char*)(p + (kAhead + j) * kK + i), _MM_HINT_T1);
      const __m512bh x = (__m512bh)_mm512_loadu_si512(xb + i);
      a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(p + i), x);
      a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_loadu_si512(p + kK + i), x);
      a2 = _mm512_dpbf16_ps(a2, (__m512bh)_mm512_loadu_si512(p + 2 * kK + i), x);
      a3 = _mm512_dpbf16_ps(a3, (__m512bh)_mm512_loadu_si512(p + 3 * kK + i), x);
    }
    total = _mm512_add_ps(total, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
  return _mm512_reduce_add_ps(total);
}

__attribute__((target("avx512f,avx512bw,f16c"))) static float f16_rows(const uint16_t* w, size_t rows, const float* x,
                                                                       int prefetch) {
  __m512 total = _mm512_setzero_ps();
  for (size_t r = 0; r < rows; r += 4) {
    const uint16_t* p = w + r * kK;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < kK; i += 16) {
      if (prefetch && (i & 31) == 0)  // one prefetch per 64-byte line
        for (int j = 0; j < 4; j++) _mm_prefetch((const char*)(p + (kAhead + j) * kK + i), _MM_HINT_T1);
      const __m512 xv = _mm512_loadu_ps(x + i);
      a0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p + i))), xv, a0);
      a1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p + kK + i))), xv, a1);
      a2 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p + 2 * kK + i))), xv, a2);
      a3 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p + 3 * kK + i))), xv, a3);
    }
    total = _mm512_add_ps(total, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
  return _mm512_reduce_add_ps(total);
}

int main(void) {
  if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("f16c")) {
    fprintf(stderr, "weight_stream: needs AVX512-BF16 and F16C\n");
    return 2;
  }
  // Rows past the last streamed one, so the prefetch 8 rows ahead stays inside the buffer.
  uint16_t* w = aligned_alloc(64, (size_t)(kRows + kAhead + 4) * kK * sizeof(uint16_t));
  uint16_t* xb = aligned_alloc(64, kK * sizeof(uint16_t));
  float* x = aligned_alloc(64, kK * sizeof(float));
  if (!w || !xb || !x) return 1;
  for (size_t i = 0; i < (size_t)(kRows + kAhead + 4) * kK; i++) w[i] = (uint16_t)(0x3c00 + i % 7);
  for (int i = 0; i < kK; i++) xb[i] = 0x3f80, x[i] = 1.0f;
  static const char* names[4] = {"bf16 dot, no prefetch", "bf16 dot, prefetch", "f16 widen+FMA, no prefetch",
                                 "f16 widen+FMA, prefetch"};
  double best[4] = {1e30, 1e30, 1e30, 1e30};
  volatile float sink = 0;
  for (int rep = 0; rep < 15; rep++)
    for (int v = 0; v < 4; v++) {
      const double t0 = now_s();
      sink += v < 2 ? bf16_rows(w, kRows, xb, v & 1) : f16_rows(w, kRows, x, v & 1);
      const double t = now_s() - t0;
      if (t < best[v]) best[v] = t;
    }
  for (int v = 0; v < 4; v++)
    printf("%-28s %5.1f GB/s\n", names[v], (double)kRows * kK * sizeof(uint16_t) / best[v] / 1e9);
  free(w);
  free(xb);
  free(x);
  return 0;
}
