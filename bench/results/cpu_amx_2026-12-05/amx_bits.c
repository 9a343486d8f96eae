// How AMX's tdpbf16ps rounds against vdpbf16ps and plain f32 sums (thirty-fifth session, 2-core Sapphire Rapids):
// the experiment behind README's "Intel AMX tiles" section.
//   gcc -O2 -mamx-tile -mamx-bf16 -mavx512f -mavx512bf16 amx_bits.c -o amx_bits && ./amx_bits
// printed, on that machine:
//   vdpbf16ps panels: 288805 of 320000 outputs differ from the tiles
//   (c + p0) + p1: 288701 / (c + p1) + p0: 288805 / c + (p0 + p1): 282611 / exact per 32-input block: 206441 of 320000
// (the same count for vdpbf16ps and (c + p1) + p0: the order vdpbf16ps's definition gives.)
// (p0, p1: the exact f32 products of an input pair; c: the f32 accumulator.)
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { K = 384, PAIRS = K / 2, TRIALS = 20000 };
struct cfg { uint8_t palette, start; uint8_t r[14]; uint16_t colsb[16]; uint8_t rows[16]; } __attribute__((aligned(64)));

static uint16_t random_bf16(void) {
  float f = ((rand() / (float)RAND_MAX) - 0.5f) * (float)(1 << (rand() % 12)) / 64.f;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}
static float widen(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float r;
  memcpy(&r, &u, 4);
  return r;
}

int main(void) {
  syscall(SYS_arch_prctl, 0x1023, 18);  // ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA
  struct cfg c;
  memset(&c, 0, sizeof c);
  c.palette = 1;
  c.rows[0] = 1, c.colsb[0] = 64;   // C: one token x 16 outputs
  c.rows[1] = 1, c.colsb[1] = 64;   // A: one token x 32 inputs
  c.rows[2] = 16, c.colsb[2] = 64;  // B: 16 pair slots x 16 outputs (the panel layout)
  _tile_loadconfig(&c);
  static uint16_t x[K], panel[PAIRS * 32];
  float dot[16], amx[16];
  long differ_dot = 0, differ_a = 0, differ_b = 0, differ_c = 0, differ_d = 0, total = 0;
  for (int trial = 0; trial < TRIALS; trial++) {
    for (int i = 0; i < K; i++) x[i] = random_bf16();
    for (int i = 0; i < PAIRS * 32; i++) panel[i] = random_bf16();
    __m512 acc = _mm512_setzero_ps();  // the vdpbf16ps panel kernel: 16 outputs against a broadcast input pair
    for (int j = 0; j < PAIRS; j++) {
      int32_t pair;
      memcpy(&pair, x + 2 * j, 4);
      acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(panel + j * 32), (__m512bh)_mm512_set1_epi32(pair));
    }
    _mm512_storeu_ps(dot, acc);
    _tile_zero(0);
    for (int j = 0; j < PAIRS; j += 16) {
      _tile_loadd(1, x + 2 * j, 64);
      _tile_loadd(2, panel + j * 32, 64);
      _tile_dpbf16ps(0, 1, 2);
    }
    _tile_stored(0, amx, 64);
    for (int l = 0; l < 16; l++) {
      volatile float a = 0, b = 0, cc = 0, d = 0;
      for (int j = 0; j < PAIRS; j++) {
        float p0 = widen(x[2 * j]) * widen(panel[j * 32 + 2 * l]);
        float p1 = widen(x[2 * j + 1]) * widen(panel[j * 32 + 2 * l + 1]);
        a = (a + p0) + p1;
        b = (b + p1) + p0;
        cc = cc + (p0 + p1);
      }
      for (int j0 = 0; j0 < PAIRS; j0 += 16) {
        double s = 0;
        for (int j = j0; j < j0 + 16; j++)
          s += (double)widen(x[2 * j]) * widen(panel[j * 32 + 2 * l]) +
               (double)widen(x[2 * j + 1]) * widen(panel[j * 32 + 2 * l + 1]);
        d = d + (float)s;
      }
      total++;
      differ_dot += memcmp(dot + l, amx + l, 4) != 0;
      differ_a += a != amx[l], differ_b += b != amx[l], differ_c += cc != amx[l], differ_d += d != amx[l];
    }
  }
  printf("vdpbf16ps panels: %ld of %ld outputs differ from the tiles\n", differ_dot, total);
  printf("(c + p0) + p1: %ld / (c + p1) + p0: %ld / c + (p0 + p1): %ld / exact per 32-input block: %ld of %ld\n",
         differ_a, differ_b, differ_c, differ_d, total);
  _tile_release();
  return 0;
}
