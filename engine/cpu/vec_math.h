#pragma once
// The one SIMD mapping of the element-wise kernels (ops.cpp, attention.cpp): vectors written with GCC's vector
// extensions, 16 floats by default, so one source compiles to AVX-512, AVX2 or SSE code in each per-ISA version of
// its caller, with no copy per instruction set (kernels whose 16-float code GCC handles badly on AVX2 take their
// instruction set's own width, below and isa_dispatch.h). Internal to engine/cpu.
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

// Narrower vectors of the register width of AVX2 (f8v: one ymm) and SSE (f4v: one xmm). GCC compiles an f16v to
// one zmm on AVX-512 but, where it is two ymm or four xmm, leaves arrays of them on the stack (attention's
// accumulators, copied through general registers at every FMA) and turns their comparisons and selects into one
// scalar compare per lane (exp_v's clamps, the maximum): attention ran at 3.5 GMAC/s and silu_mul lane by lane on an
// AVX2-only AMD EPYC. Kernels with such code are compiled once per instruction set at its own width
// (isa_dispatch.h); the functions below take the vector type, or L floats a vector, 16 by default.
typedef float f8v __attribute__((vector_size(32), aligned(4)));
typedef float f4v __attribute__((vector_size(16), aligned(4)));
typedef int32_t i8v __attribute__((vector_size(32), aligned(4)));
typedef int32_t i4v __attribute__((vector_size(16), aligned(4)));
template <class V>
constexpr int lanes_of = int(sizeof(V) / sizeof(float));
// The vectors of L floats and of L int32 (a type with an alignment attribute cannot be a template argument as it
// is, so templates name these).
template <int L>
struct of_lanes;
template <>
struct of_lanes<16> {
  using type = f16v;
  using ints = i16v;
};
template <>
struct of_lanes<8> {
  using type = f8v;
  using ints = i8v;
};
template <>
struct of_lanes<4> {
  using type = f4v;
  using ints = i4v;
};
template <int L>
using vec_t = typename of_lanes<L>::type;

template <class V = f16v>
SS_VEC_INLINE V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
SS_VEC_INLINE void store(float* p, V v) { std::memcpy(p, &v, sizeof v); }
// The first n (< lanes) lanes of p, zeros after (reads only those n floats).
template <class V = f16v>
SS_VEC_INLINE V load_part(const float* p, int n) {
  V v = {};
  for (int i = 0; i < n; ++i) v[i] = p[i];
  return v;
}
template <class V>
SS_VEC_INLINE void store_part(float* p, V v, int n) {
  for (int i = 0; i < n; ++i) p[i] = v[i];
}
// Every lane x. Spelled out rather than `f16v{} + x`: 0 + x is not x for x = -0, so GCC kept a scalar add before
// every broadcast (seen in attention's score loop: vaddss then vbroadcastss for each query element).
template <class V = f16v>
SS_VEC_INLINE V splat(float x) {
  const V first = {x};
  if constexpr (lanes_of<V> == 16)
    return __builtin_shufflevector(first, first, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  else if constexpr (lanes_of<V> == 8) return __builtin_shufflevector(first, first, 0, 0, 0, 0, 0, 0, 0, 0);
  else return __builtin_shufflevector(first, first, 0, 0, 0, 0);
}
// Lanes [0, n) set, the rest clear (V's comparison mask).
template <class V = f16v>
SS_VEC_INLINE auto first_lanes(int n) {
  using I = typename of_lanes<lanes_of<V>>::ints;
  if constexpr (lanes_of<V> == 16) return I{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} < n;
  else if constexpr (lanes_of<V> == 8) return I{0, 1, 2, 3, 4, 5, 6, 7} < n;
  else return I{0, 1, 2, 3} < n;
}
template <class M, class V>
SS_VEC_INLINE V select(M mask, V a, V b) { return mask ? a : b; }
template <class V>
SS_VEC_INLINE V vmax(V a, V b) { return a > b ? a : b; }
template <class V>
SS_VEC_INLINE V vmin(V a, V b) { return a < b ? a : b; }
template <class V, class I>
SS_VEC_INLINE V bits_to_float(I i) {
  V f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

// Horizontal sum in a fixed order (halves folded: lanes i and i+8, then +4, +2, +1), as whole-vector shuffles: the
// same additions as folding an array of the lanes, which GCC compiled to scalar adds and maxes through the stack.
// With whole-vector tails (load_tail), attention_bench's 8-row call went from 13.9 to 11.5 us on one thread.
template <int W, class V>
SS_VEC_INLINE V fold(V v) {  // lane i holds lane i + W (for the lanes that matter, i < W)
  static_assert(W < lanes_of<V>);
  if constexpr (lanes_of<V> == 16) {
    if constexpr (W == 8) return __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);
    else if constexpr (W == 4) return __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7);
    else if constexpr (W == 2) return __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    else return __builtin_shufflevector(v, v, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  } else if constexpr (lanes_of<V> == 8) {
    if constexpr (W == 4) return __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7);
    else if constexpr (W == 2) return __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3);
    else return __builtin_shufflevector(v, v, 1, 1, 1, 1, 1, 1, 1, 1);
  } else {
    if constexpr (W == 2) return __builtin_shufflevector(v, v, 2, 3, 2, 3);
    else return __builtin_shufflevector(v, v, 1, 1, 1, 1);
  }
}
template <class V>
SS_VEC_INLINE float hsum(V v) {
  if constexpr (lanes_of<V> > 8) v = v + fold<8>(v);
  if constexpr (lanes_of<V> > 4) v = v + fold<4>(v);
  v = v + fold<2>(v);
  v = v + fold<1>(v);
  return v[0];
}
template <class V>
SS_VEC_INLINE float hmax(V v) {  // the same folds, each lane keeping lane > other ? lane : other
  if constexpr (lanes_of<V> > 8) v = vmax(v, fold<8>(v));
  if constexpr (lanes_of<V> > 4) v = vmax(v, fold<4>(v));
  v = vmax(v, fold<2>(v));
  v = vmax(v, fold<1>(v));
  return v[0];
}
// hsum of the 16-lane vector whose lanes [p L, p L + L) are parts[p]: the same additions in the same order (the
// halves of the parts first, lane i with lane i + 8, ..., then within the last part), so a sum kept in L-lane parts
// is bit-identical to one kept in a 16-lane vector.
template <int L>
SS_VEC_INLINE float hsum_parts(vec_t<L>* parts) {
  for (int w = kLanes / L / 2; w >= 1; w /= 2)
    for (int p = 0; p < w; ++p) parts[p] += parts[p + w];
  return hsum(parts[0]);
}

template <class V>
SS_VEC_INLINE V exp_v(V x) {
  using I = typename of_lanes<lanes_of<V>>::ints;
  const V lo = splat<V>(kExpZeroBelow), hi = splat<V>(88.0f);  // hi: n stays <= 127, a finite 2^n
  const I underflow = x < lo;  // also -inf; NaN compares false and stays NaN below
  x = x > hi ? hi : x;
  x = x < lo ? lo : x;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (round to nearest even), r = x - n ln 2 in two parts.
  const V magic = splat<V>(12582912.0f);
  const V t = x * 1.44269504088896341f + magic;
  const V n = t - magic;
  V r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const V r2 = r * r;
  V p = splat<V>(1.9875691500E-4f);
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  V y = p * r2 + r + 1.0f;
  // 2^n built in the exponent field; n is in [-126, 127] after the clamps.
  const I e = (__builtin_convertvector(n, I) + 127) << 23;
  y = y * bits_to_float<V>(e);
  return underflow ? V{} : y;
}

// tanh, lane by lane as exp_v: Cephes' tanhf, an odd polynomial below |x| = 0.625 (where 1 - 2 / (e^2x + 1) would
// lose digits to cancellation) and that form above it; within a few float ulps everywhere, +-1 past |x| ~ 9, NaN
// stays NaN. Gemma 2's soft caps (cap * tanh(x / cap)) run on it.
template <class V>
SS_VEC_INLINE V tanh_v(V x) {
  const V zero{};
  const V ax = x < zero ? -x : x;
  const V z = x * x;
  V p = splat<V>(-5.70498872745E-3f);
  p = p * z + 2.06390887954E-2f;
  p = p * z - 5.37397155531E-2f;
  p = p * z + 1.33314422036E-1f;
  p = p * z - 3.33332819422E-1f;
  const V small = p * z * x + x;
  const V big = 1.0f - 2.0f / (exp_v(ax + ax) + 1.0f);  // exp_v clamps at 88: 1 for every |x| past 44
  return ax < splat<V>(0.625f) ? small : (x < zero ? -big : big);
}

// The last, partial vector of a row: lanes [0, n) of p, n < lanes. Read and written lane by lane, or, where the
// caller's buffer is padded to whole 16-float vectors (kPadded: p may be read and written up to the next multiple
// of 16 floats), as one vector whose lanes past n are whatever the buffer holds (callers mask them). Lane by lane
// costs ~40 instructions a vector: in attention's softmax, whose rows end mid-vector at most contexts, about as much
// as the whole vectors before it.
template <bool kPadded, class V>
SS_VEC_INLINE V load_tail(const float* p, int n) {
  if constexpr (kPadded) return load<V>(p);
  else return load_part<V>(p, n);
}
template <bool kPadded, class V>
SS_VEC_INLINE void store_tail(float* p, V v, int n) {
  if constexpr (kPadded) store(p, v);
  else store_part(p, v, n);
}

// The largest of x[0, n) (-inf for n = 0), in vectors of L floats. Exact whatever the order. kPadded: as load_tail.
template <bool kPadded = false, int L = kLanes>
SS_VEC_INLINE float max_of(const float* x, int n) {
  using V = vec_t<L>;
  constexpr float ninf = -__builtin_inff();
  V m = splat<V>(ninf);
  int i = 0;
  for (; i + L <= n; i += L) m = vmax(m, load<V>(x + i));
  if (i < n) m = vmax(m, select(first_lanes<V>(n - i), load_tail<kPadded, V>(x + i, n - i), splat<V>(ninf)));
  return hmax(m);
}

// sum_i exp(x[i] - mx) over x[0, n): lane i % 16, then hsum, so the sum of a row is fixed by the row alone, and the
// same whatever L (a 16-lane sum kept in 16 / L parts, hsum_parts). With `store`, x[i] becomes exp(x[i] - mx)
// (and, kPadded, the padding after n up to the next multiple of 16 becomes 0).
template <bool kPadded = false, int L = kLanes>
SS_VEC_INLINE float sum_exp(float* x, int n, float mx, bool store_exp) {
  using V = vec_t<L>;
  constexpr int kParts = kLanes / L;
  V sum[kParts];
  for (int p = 0; p < kParts; ++p) sum[p] = V{};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int p = 0; p < kParts; ++p) {
      const V e = exp_v(load<V>(x + i + p * L) - mx);
      if (store_exp) store(x + i + p * L, e);
      sum[p] += e;
    }
  if (i < n)
    for (int p = 0; p < kParts; ++p) {  // the last 16: whole parts, one partial part, then only padding
      float* xp = x + i + p * L;
      const int left = n - i - p * L;
      if (left >= L) {
        const V e = exp_v(load<V>(xp) - mx);
        if (store_exp) store(xp, e);
        sum[p] += e;
      } else if (left > 0) {
        const V e = select(first_lanes<V>(left), exp_v(load_tail<kPadded, V>(xp, left) - mx), V{});
        if (store_exp) store_tail<kPadded>(xp, e, left);
        sum[p] += e;
      } else if (kPadded && store_exp) {
        store(xp, V{});  // adding these zeros would change no sum: x + 0 is x for the sum's non-negative x
      }
    }
  return hsum_parts<L>(sum);
}

// x[i] *= a over x[0, n) in vectors of L floats (kPadded: the padding after n is scaled too).
template <bool kPadded = false, int L = kLanes>
SS_VEC_INLINE void scale(float* x, int n, float a) {
  using V = vec_t<L>;
  int i = 0;
  for (; i + L <= n; i += L) store(x + i, load<V>(x + i) * a);
  if (i < n) store_tail<kPadded>(x + i, load_tail<kPadded, V>(x + i, n - i) * a, n - i);
}

// x[i] = cap * tanh(x[i] / cap) over x[0, n) in vectors of L floats (Gemma 2's soft cap; kPadded: the padding
// after n is capped too). Element by element, so a value's result does not depend on where it sits.
template <bool kPadded = false, int L = kLanes>
SS_VEC_INLINE void soft_cap(float* x, int64_t n, float cap) {
  using V = vec_t<L>;
  int64_t i = 0;
  for (; i + L <= n; i += L) store(x + i, cap * tanh_v(load<V>(x + i) / cap));
  if (i < n) store_tail<kPadded>(x + i, cap * tanh_v(load_tail<kPadded, V>(x + i, int(n - i)) / cap), int(n - i));
}

}  // namespace specscope::cpu::vec
