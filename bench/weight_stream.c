// How fast a matrix-vector product's weights stream from memory with the 16-bit kernels' inner loops, stripped of
// everything else, on 1 or more threads (each its own contiguous share of the rows, as the engine splits them):
//  - bf16 through vdpbf16ps (one 64-byte load and one instruction per line), f16 through vcvtph2ps + FMA;
//  - 4 rows at a time (the engine's multi-token tiles), with and without software prefetch of the rows 8 ahead,
//    and one row at a time with one accumulator and a prefetch 16 KB ahead (the engine's one-token bf16 kernel
//    for rows of 4 KB or more, matmul_bf16dot.cpp: each thread then reads a single sequential stream).
// 64 MB of weights, best of 15 passes, the variants alternated pass by pass so that a drifting machine affects
// them alike. Results: bench/results/weight_stream_2026-11-28.txt, one_row_stream_2026-11-28.txt.
//   cc -O2 -pthread -o /tmp/weight_stream bench/weight_stream.c && /tmp/weight_stream [THREADS [K]]
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kBytes = 64 << 20, kAheadRows = 8, kAheadBytes = 16384, kVariants = 6 };
static size_t kK = 2048;  // elements per row

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define PF(p) _mm_prefetch((const char*)(p), _MM_HINT_T1)

__attribute__((target("avx512f,avx512bw,avx512bf16"))) static float bf16_4rows(const uint16_t* w, size_t rows,
                                                                               const uint16_t* xb, int prefetch) {
  __m512 total = _mm512_setzero_ps();
  for (size_t r = 0; r < rows; r += 4) {
    const uint16_t* p = w + r * kK;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < kK; i += 32) {
      if (prefetch)
        for (int j = 0; j < 4; j++) PF(p + (kAheadRows + j) * kK + i);
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

__attribute__((target("avx512f,avx512bw,avx512bf16"))) static float bf16_1row(const uint16_t* w, size_t rows,
                                                                              const uint16_t* xb) {
  __m512 total = _mm512_setzero_ps();
  for (size_t r = 0; r < rows; r++) {
    const uint16_t* p = w + r * kK;
    __m512 a = _mm512_setzero_ps();
    for (size_t i = 0; i < kK; i += 32) {
      PF((const char*)(p + i) + kAheadBytes);
      a = _mm512_dpbf16_ps(a, (__m512bh)_mm512_loadu_si512(p + i), (__m512bh)_mm512_loadu_si512(xb + i));
    }
    total = _mm512_add_ps(total, a);
  }
  return _mm512_reduce_add_ps(total);
}

__attribute__((target("avx512f,avx512bw,f16c"))) static float f16_4rows(const uint16_t* w, size_t rows,
                                                                        const float* x, int prefetch) {
  __m512 total = _mm512_setzero_ps();
  for (size_t r = 0; r < rows; r += 4) {
    const uint16_t* p = w + r * kK;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < kK; i += 16) {
      if (prefetch && (i & 31) == 0)  // one prefetch per 64-byte line
        for (int j = 0; j < 4; j++) PF(p + (kAheadRows + j) * kK + i);
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

__attribute__((target("avx512f,avx512bw,f16c"))) static float f16_1row(const uint16_t* w, size_t rows, const float* x) {
  __m512 total = _mm512_setzero_ps();
  for (size_t r = 0; r < rows; r++) {
    const uint16_t* p = w + r * kK;
    __m512 a = _mm512_setzero_ps();
    for (size_t i = 0; i < kK; i += 16) {
      if ((i & 31) == 0) PF((const char*)(p + i) + kAheadBytes);
      a = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p + i))), _mm512_loadu_ps(x + i), a);
    }
    total = _mm512_add_ps(total, a);
  }
  return _mm512_reduce_add_ps(total);
}

static const char* kNames[kVariants] = {"bf16 4 rows, no prefetch", "bf16 4 rows, prefetch", "bf16 one row",
                                        "f16 4 rows, no prefetch",  "f16 4 rows, prefetch",  "f16 one row"};
static uint16_t *g_w, *g_xb;
static float* g_x;
static int g_variant, g_threads;

typedef struct {
  int id;
  float sum;
} Share;

static void* run_share(void* arg) {
  Share* s = arg;
  const size_t rows = kBytes / sizeof(uint16_t) / kK / g_threads;
  const uint16_t* w = g_w + (size_t)s->id * rows * kK;
  switch (g_variant) {
    case 0: case 1: s->sum = bf16_4rows(w, rows, g_xb, g_variant); break;
    case 2: s->sum = bf16_1row(w, rows, g_xb); break;
    case 3: case 4: s->sum = f16_4rows(w, rows, g_x, g_variant - 3); break;
    default: s->sum = f16_1row(w, rows, g_x); break;
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("f16c")) {
    fprintf(stderr, "weight_stream: needs AVX512-BF16 and F16C\n");
    return 2;
  }
  g_threads = argc > 1 ? atoi(argv[1]) : 1;
  kK = argc > 2 ? (size_t)atol(argv[2]) : 2048;
  if (g_threads < 1 || g_threads > 64 || kK < 64 || kK % 64) {
    fprintf(stderr, "weight_stream: usage: weight_stream [THREADS 1-64 [K, a multiple of 64]]\n");
    return 2;
  }
  // Slack past the last row, so the prefetches ahead stay inside the buffer.
  const size_t elems = kBytes / sizeof(uint16_t) + (kAheadRows + 4) * kK + kAheadBytes;
  g_w = aligned_alloc(64, elems * sizeof(uint16_t));
  g_xb = aligned_alloc(64, kK * sizeof(uint16_t));
  g_x = aligned_alloc(64, kK * sizeof(float));
  if (!g_w || !g_xb || !g_x) return 1;
  for (size_t i = 0; i < elems; i++) g_w[i] = (uint16_t)(0x3c00 + i % 7);
  for (size_t i = 0; i < kK; i++) g_xb[i] = 0x3f80, g_x[i] = 1.0f;
  double best[kVariants];
  for (int v = 0; v < kVariants; v++) best[v] = 1e30;
  volatile float sink = 0;
  for (int rep = 0; rep < 15; rep++)
    for (g_variant = 0; g_variant < kVariants; g_variant++) {
      pthread_t th[64];
      Share shares[64];
      const double t0 = now_s();
      for (int i = 0; i < g_threads; i++) {
        shares[i].id = i;
        pthread_create(&th[i], NULL, run_share, &shares[i]);
      }
      for (int i = 0; i < g_threads; i++) {
        pthread_join(th[i], NULL);
        sink += shares[i].sum;
      }
      const double t = now_s() - t0;
      if (t < best[g_variant]) best[g_variant] = t;
    }
  printf("%d thread(s), rows of %zu elements\n", g_threads, kK);
  for (int v = 0; v < kVariants; v++) printf("  %-26s %5.1f GB/s\n", kNames[v], kBytes / best[v] / 1e9);
  free(g_w);
  free(g_xb);
  free(g_x);
  return 0;
}
