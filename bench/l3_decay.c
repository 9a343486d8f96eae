// How long data we leave untouched stays in this machine's last-level cache: reads a buffer, waits (spinning, no
// memory traffic of ours), reads it again, and reports the median read time per wait. On a machine to itself the
// wait changes nothing while the buffer fits the cache; on a cloud VM whose L3 is shared with other tenants, the
// buffer is evicted as time passes. On the 2-core development VM (AMD EPYC, 2026-11-28) an 8 MB buffer was re-read
// at 113 GB/s after waits up to 200 us, 87 GB/s after 400 us, 53 after 800 us and 38 (memory speed) after 1.6 ms.
// A speculative step leaves the target's weights alone while the drafter runs, and pays for it in the verification
// that follows: why `bench --beside` also times the target after an idle gap as long (runs/model_turns.h).
//   cc -O2 -o /tmp/l3_decay bench/l3_decay.c && /tmp/l3_decay 8 && /tmp/l3_decay 24
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

__attribute__((target("avx512f"))) static float read_all(const float* p, size_t n) {
  __m512 s = _mm512_setzero_ps();
  for (size_t i = 0; i < n; i += 16) s = _mm512_add_ps(s, _mm512_load_ps(p + i));
  return _mm512_reduce_add_ps(s);
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  const size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 8;
  if (!__builtin_cpu_supports("avx512f") || mb == 0 || mb > 4096) {
    fprintf(stderr, "usage: l3_decay MB (1-4096; needs AVX-512)\n");
    return 2;
  }
  const size_t n = mb << 18;  // floats
  float* p = aligned_alloc(64, n * sizeof(float));
  if (!p) return 1;
  for (size_t i = 0; i < n; i++) p[i] = 1.0f;
  static const int waits_us[] = {0, 50, 100, 200, 400, 800, 1600};
  enum { kReps = 301 };
  volatile float sink = 0;
  for (size_t w = 0; w < sizeof waits_us / sizeof waits_us[0]; w++) {
    double t[kReps];
    for (int r = 0; r < kReps; r++) {
      const double w0 = now_us();
      while (now_us() - w0 < waits_us[w]) {
      }
      const double t0 = now_us();
      sink += read_all(p, n);
      t[r] = now_us() - t0;
    }
    qsort(t, kReps, sizeof t[0], by_value);
    printf("%zu MB re-read after %4d us untouched: %8.1f us (%.1f GB/s)\n", mb, waits_us[w], t[kReps / 2],
           (double)(n * sizeof(float)) / t[kReps / 2] / 1e3);
  }
  free(p);
  return 0;
}
