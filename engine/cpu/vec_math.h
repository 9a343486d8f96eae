#pragma once
// The one SIMD mapping of the element-wise kernels (ops.cpp, attention.cpp): 16-float vectors written with GCC's
// vector extensions, so one source compiles to AVX-512, AVX2 or SSE code in each target_clones version of its
// caller, with no copy per instruction set. Internal to engine/cpu.
//
// exp_v is Cephes' expf (range reduction by ln 2, a degree-6 polynomial: within 2 ulp of the correctly rounded
// result over the whole float range), computed lane by lane in the same order on every path, so an element's
// result does not depend on where it sits in a vector or how long the vector is. exp of anything below
// -87.33654 (the smallest normal result's argument), -inf included, is exactly 0: attention relies on masked keys
// getting weight 0.
#include <cstdint>
#include <cstring>

#include "engine/util/exp_zero.h"

// The helpers below return vectors by value; they are always inlined into target_clones functions, so the
// ABI note GCC gives for vector returns outside such a target does not apply. The note is issued when a function is
// compiled, at the end of the including file, so the setting stays in force there (no push/pop around it).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace specscope::cpu::vec {

constexpr int kLanes = 16;
typedef float f16v __attribute__((vector_size(64), aligned(4)));    // 16 floats; loads need only float alignment
typedef int32_t i16v __attribute__((vector_size(64), aligned(4)));  // 16 int32, the masks of comparisons

#define SS_VEC_INLINE __attribute__((always_inline)) inline

SS_VEC_INLINE f16v load(const float* p) {
  f16v v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
SS_VEC_INLINE void store(float* p, f16v v) { std::memcpy(p, &v, sizeof v); }
// The first n (< 16) lanes of p, zeros after (reads only those n floats).
SS_VEC_INLINE f16v load_part(const float* p, int n) {
  f16v v = {};
  for (int i = 0; i < n; ++i) v[i] = p[i];
  return v;
}
SS_VEC_INLINE void store_part(float* p, f16v v, int n) {
  for (int i = 0; i < n; ++i) p[i] = v[i];
}
// Every lane x. Spelled out rather than `f16v{} + x`: 0 + x is not x for x = -0, so GCC kept a scalar add before
// every broadcast (seen in attention's score loop: vaddss then vbroadcastss for each query element).
SS_VEC_INLINE f16v splat(float x) {
  const f16v first = {x};
  return __builtin_shufflevector(first, first, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
}
// Lanes [0, n) set, the rest clear.
SS_VEC_INLINE i16v first_lanes(int n) {
  const i16v idx = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  return idx < n;
}
SS_VEC_INLINE f16v select(i16v mask, f16v a, f16v b) { return mask ? a : b; }
SS_VEC_INLINE f16v vmax(f16v a, f16v b) { return a > b ? a : b; }
SS_VEC_INLINE f16v bits_to_float(i16v i) {
  f16v f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

// Horizontal sum in a fixed order (halves folded: lanes i and i+8, then +4, +2, +1), as whole-vector shuffles: the
// same additions as folding an array of the lanes, which GCC compiled to scalar adds and maxes through the stack.
// With whole-vector tails (load_tail), attention_bench's 8-row call went from 13.9 to 11.5 us on one thread.
template <int W>
SS_VEC_INLINE f16v fold(f16v v) {  // lane i holds lane i + W (for the lanes that matter, i < W)
  if constexpr (W == 8) return __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);
  else if constexpr (W == 4) return __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7);
  else if constexpr (W == 2) return __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  else return __builtin_shufflevector(v, v, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
}
SS_VEC_INLINE float hsum(f16v v) {
  v = v + fold<8>(v);
  v = v + fold<4>(v);
  v = v + fold<2>(v);
  v = v + fold<1>(v);
  return v[0];
}
SS_VEC_INLINE float hmax(f16v v) {  // the same folds, each lane keeping lane > other ? lane : other
  v = vmax(v, fold<8>(v));
  v = vmax(v, fold<4>(v));
  v = vmax(v, fold<2>(v));
  v = vmax(v, fold<1>(v));
  return v[0];
}

SS_VEC_INLINE f16v exp_v(f16v x) {
  const f16v lo = splat(kExpZeroBelow), hi = splat(88.0f);  // hi: n stays <= 127, a finite 2^n
  const i16v underflow = x < lo;  // also -inf; NaN compares false and stays NaN below
  x = x > hi ? hi : x;
  x = x < lo ? lo : x;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (round to nearest even), r = x - n ln 2 in two parts.
  const f16v magic = splat(12582912.0f);
  const f16v t = x * 1.44269504088896341f + magic;
  const f16v n = t - magic;
  f16v r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const f16v r2 = r * r;
  f16v p = splat(1.9875691500E-4f);
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  f16v y = p * r2 + r + 1.0f;
  // 2^n built in the exponent field; n is in [-126, 127] after the clamps.
  const i16v e = (__builtin_convertvector(n, i16v) + 127) << 23;
  y = y * bits_to_float(e);
  return underflow ? f16v{} : y;
}

// The last, partial vector of a row: lanes [0, n) of p, n < 16. Read and written lane by lane, or, where the
// caller's buffer is padded to whole vectors (kPadded: p may be read and written up to p + 16), as one vector whose
// lanes past n are whatever the buffer holds (callers mask them). Lane by lane costs ~40 instructions a vector: in
// attention's softmax, whose rows end mid-vector at most contexts, about as much as the whole vectors before it.
template <bool kPadded>
SS_VEC_INLINE f16v load_tail(const float* p, int n) {
  if constexpr (kPadded) return load(p);
  else return load_part(p, n);
}
template <bool kPadded>
SS_VEC_INLINE void store_tail(float* p, f16v v, int n) {
  if constexpr (kPadded) store(p, v);
  else store_part(p, v, n);
}

// The largest of x[0, n) (-inf for n = 0). Exact whatever the order. kPadded: as load_tail.
template <bool kPadded = false>
SS_VEC_INLINE float max_of(const float* x, int n) {
  constexpr float ninf = -__builtin_inff();
  f16v m = splat(ninf);
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) m = vmax(m, load(x + i));
  if (i < n) m = vmax(m, select(first_lanes(n - i), load_tail<kPadded>(x + i, n - i), splat(ninf)));
  return hmax(m);
}

// sum_i exp(x[i] - mx) over x[0, n): lane i % 16, then hsum, so the sum of a row is fixed by the row alone. With
// `store`, x[i] becomes exp(x[i] - mx) (and, kPadded, the padding after n becomes 0).
template <bool kPadded = false>
SS_VEC_INLINE float sum_exp(float* x, int n, float mx, bool store_exp) {
  f16v sum = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const f16v e = exp_v(load(x + i) - mx);
    if (store_exp) store(x + i, e);
    sum += e;
  }
  if (i < n) {
    const f16v e = select(first_lanes(n - i), exp_v(load_tail<kPadded>(x + i, n - i) - mx), f16v{});
    if (store_exp) store_tail<kPadded>(x + i, e, n - i);
    sum += e;
  }
  return hsum(sum);
}

// x[i] *= a over x[0, n) (kPadded: the padding after n is scaled too).
template <bool kPadded = false>
SS_VEC_INLINE void scale(float* x, int n, float a) {
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) store(x + i, load(x + i) * a);
  if (i < n) store_tail<kPadded>(x + i, load_tail<kPadded>(x + i, n - i) * a, n - i);
}

}  // namespace specscope::cpu::vec
