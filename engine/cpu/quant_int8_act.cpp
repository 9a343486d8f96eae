// Activation rows to 8-bit blocks (quant_int8.h): the one quantizer every integer kernel reads, so that all of them
// see the same codes and scales. Runs once per linear call on the calling thread; n * k work against the product's
// n * k * m, so plain loops are enough.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#include "engine/cpu/quant_int8.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace specscope::cpu::detail {
namespace {

// Round to nearest, ties to even (the default rounding mode), without a libm call per element: cvtss2si is in
// baseline x86-64, where std::nearbyint is a function call.
inline int round_even(float v) {
#if defined(__x86_64__)
  return _mm_cvtss_si32(_mm_set_ss(v));
#else
  return int(std::nearbyint(v));
#endif
}

}  // namespace

void quantize_act(const float* X, int n, int k, ActQ8* o) {
  o->n = n;
  o->k = k;
  o->kp = (k + kQ8Group - 1) / kQ8Group * kQ8Group;
  const int nb = k / kQ8Block, nbp = o->blocks();
  o->q.assign(size_t(n) * size_t(o->kp), 0);
  o->d.assign(size_t(n) * size_t(nbp), 0.f);
  o->s32.assign(size_t(n) * size_t(nbp), 0);
  o->s16.assign(size_t(n) * size_t(2 * nbp), 0);
  for (int t = 0; t < n; ++t) {
    const float* x = X + size_t(t) * size_t(k);
    int8_t* q = o->q.data() + size_t(t) * size_t(o->kp);
    float* d = o->d.data() + size_t(t) * size_t(nbp);
    int32_t* s32 = o->s32.data() + size_t(t) * size_t(nbp);
    int16_t* s16 = o->s16.data() + size_t(t) * size_t(2 * nbp);
    for (int b = 0; b < nb; ++b) {
      const float* xb = x + size_t(b) * kQ8Block;
      float amax = 0.f;
      bool finite = true;
      for (int i = 0; i < kQ8Block; ++i) {
        const float a = std::fabs(xb[i]);
        finite = finite && a <= FLT_MAX;  // false for NaN and infinities
        amax = a > amax ? a : amax;
      }
      if (!finite) {  // codes 0, scale NaN: the outputs turn NaN, as the exact product's would be non-finite
        d[b] = std::numeric_limits<float>::quiet_NaN();
        continue;
      }
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
    }
  }
}

}  // namespace specscope::cpu::detail
