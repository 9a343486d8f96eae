// How long this CPU stays slow after heavy vector work: times reads of a cache-sized buffer (28 MB, the default
// base's weights) one after another, first after nothing, then right after a 20 ms burst of AVX-512 FMAs (no
// memory traffic), then right after a 256 MB memset. On the 2-core development VM (AMD EPYC, 2026-11-28) the reads
// after the FMA burst ran ~25% slower and took ~5 ms to recover; after the memset they did not. Why the step-cost
// curve warms every size up for milliseconds before timing it (runs/step_cost.h, kWarmMs).
//   cc -O2 -o /tmp/clock_recovery bench/clock_recovery.c && /tmp/clock_recovery
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static volatile float g_sink;

__attribute__((target("avx512f"))) static void fma_burst(double ms) {
  __m512 x[12];
  for (int i = 0; i < 12; i++) x[i] = _mm512_set1_ps(1.0f + 1e-4f * i);
  const double t0 = now_ms();
  while (now_ms() - t0 < ms)
    for (int j = 0; j < 10000; j++)
      for (int i = 0; i < 12; i++) x[i] = _mm512_fmadd_ps(x[i], x[(i + 1) % 12], x[i]);
  float s = 0;
  for (int i = 0; i < 12; i++) s += _mm512_reduce_add_ps(x[i]);
  g_sink = s;
}

__attribute__((target("avx512f"))) static void read_buffer(const float* a, size_t count) {
  __m512 s = _mm512_setzero_ps();
  for (size_t i = 0; i < count; i += 16) s = _mm512_add_ps(s, _mm512_load_ps(a + i));
  g_sink = _mm512_reduce_add_ps(s);
}

int main(void) {
  if (!__builtin_cpu_supports("avx512f")) {
    fprintf(stderr, "clock_recovery: needs AVX-512\n");
    return 2;
  }
  const size_t bytes = (size_t)28 << 20;
  float* a = aligned_alloc(64, bytes);
  memset(a, 0, bytes);
  const char* names[] = {"after nothing", "after a 20 ms AVX-512 FMA burst", "after a 256 MB memset"};
  printf("ms per read of 28 MB, 12 reads in a row, 4 rounds each\n");
  for (int mode = 0; mode < 3; mode++)
    for (int round = 0; round < 4; round++) {
      if (mode == 1) fma_burst(20);
      if (mode == 2) {
        char* b = malloc((size_t)256 << 20);
        memset(b, 2, (size_t)256 << 20);
        g_sink = b[12345];
        free(b);
      }
      double t[12];
      for (int k = 0; k < 12; k++) {
        const double q = now_ms();
        read_buffer(a, bytes / sizeof(float));
        t[k] = now_ms() - q;
      }
      printf("%-34s", names[mode]);
      for (int k = 0; k < 12; k++) printf(" %.3f", t[k]);
      printf("\n");
    }
  free(a);
  return 0;
}
