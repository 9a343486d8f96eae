#include "engine/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/cpu/isa_dispatch.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vec_math.h"

#define SS_ATTN_INLINE __attribute__((always_inline)) inline

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace specscope::cpu {
namespace {

using vec::kLanes;

// Per-thread scratch of one task: scores and packed weights, [query vectors][keys padded to whole vectors].
struct Scratch {
  std::vector<float> scores, weights;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// A task's query vectors: up to kMaxQ (row, head) pairs of one KV head's group, rows in order, heads in order.
constexpr int kMaxQ = 6;

// scores[g][j] = scale * sum_d q_g[d] kt[d][j] for GC query vectors and KB vectors of keys (V: lanes_of<V> keys
// each) from j0: one FMA chain per (query, key lane) over d in order, so a score never depends on which other
// queries or keys share the call, nor on the vector width.
template <class V, int GC, int KB>
SS_ATTN_INLINE void score_blocks(const float* const* q, const float* kt, int hd, int j0, float scale, float* scores,
                                 size_t score_stride) {
  constexpr int L = vec::lanes_of<V>;
  V acc[GC][KB];
  for (int g = 0; g < GC; ++g)
    for (int b = 0; b < KB; ++b) acc[g][b] = V{};
  // kt: this head's tiles; tile j / 16 holds keys j / 16 * 16 .. + 15 as [d][16].
  const float* key[KB];
  for (int b = 0; b < KB; ++b) {
    const int j = j0 + b * L;
    key[b] = kt + size_t(j / kLanes) * size_t(hd) * kLanes + size_t(j % kLanes);
  }
  for (int d = 0; d < hd; ++d) {
    V kv[KB];
    for (int b = 0; b < KB; ++b) kv[b] = vec::load<V>(key[b] + size_t(d) * kLanes);
    for (int g = 0; g < GC; ++g) {
      const V qd = vec::splat<V>(q[g][d]);
      for (int b = 0; b < KB; ++b) acc[g][b] += qd * kv[b];
    }
  }
  for (int g = 0; g < GC; ++g)
    for (int b = 0; b < KB; ++b) vec::store(scores + size_t(g) * score_stride + j0 + b * L, acc[g][b] * scale);
}

// Blocks of Wide key vectors: GC x Wide accumulators plus Wide loaded key vectors and a broadcast must fit the
// register file (Blocking below), enough FMA chains in flight to cover the latency, with each loaded key vector
// reused by all GC query vectors. Keys are padded to whole tiles of 16, so the last vector may run past `keys`.
template <class V, int GC, int kWide>
SS_ATTN_INLINE void scores_for(const float* const* q, const float* kt, int hd, int keys, float scale, float* scores,
                               size_t score_stride) {
  constexpr int L = vec::lanes_of<V>;
  int j0 = 0;
  for (; j0 + kWide * L <= keys; j0 += kWide * L)
    score_blocks<V, GC, kWide>(q, kt, hd, j0, scale, scores, score_stride);
  if constexpr (kWide > 2)
    for (; j0 + 2 * L <= keys; j0 += 2 * L) score_blocks<V, GC, 2>(q, kt, hd, j0, scale, scores, score_stride);
  for (; j0 < keys; j0 += L) score_blocks<V, GC, 1>(q, kt, hd, j0, scale, scores, score_stride);
}

void scores_any(const float* const* q, int gc, const float* kt, size_t kt_stride, int hd, int keys, float scale,
                float* scores, size_t score_stride) {
  for (int g = 0; g < gc; ++g)
    for (int j = 0; j < keys; ++j) {
      float acc = 0.f;
      for (int d = 0; d < hd; ++d) acc += q[g][d] * kt[kt_index(0, d, j, hd, kt_stride)];
      scores[size_t(g) * score_stride + j] = acc * scale;
    }
}

// Softmax over a row's visible keys, packed in key order: w[i] = exp(s[key(i)] - max) / sum. The all-visible prefix
// is copied as it is; only the tail is gathered. The maximum (exact in any order), the exponentials, the sum (lane
// i % 16 of the packed keys, then vec::hsum, whatever the width L) and the scaling run in vectors of L floats.
// w is padded to whole 16-float vectors (attend_block's weight rows), so the row's last, partial vector is one load
// and store.
// With soft_cap > 0 (Gemma 2), each visible score first becomes soft_cap * tanh(score / soft_cap), element by element
// (the padding too: whatever it holds is masked below).
// A sink (GPT-OSS; -inf: none) joins the maximum and adds exp(sink - max) to the sum, as transformers appends it as
// one more logit and drops its column after the softmax. Without one the bits are those of the plain softmax.
template <int L>
SS_ATTN_INLINE void packed_softmax(const float* s, int prefix, const int* tail, int nv, float soft_cap, float sink,
                                   float* w) {
  std::memcpy(w, s, sizeof(float) * size_t(prefix));
  for (int i = prefix; i < nv; ++i) w[i] = s[tail[i - prefix]];
  if (soft_cap > 0.f) vec::soft_cap<true, L>(w, nv, soft_cap);
  const float max = std::max(vec::max_of<true, L>(w, nv), sink);
  float sum = vec::sum_exp<true, L>(w, nv, max, true);
  if (sink != -std::numeric_limits<float>::infinity()) sum += std::exp(sink - max);
  vec::scale<true, L>(w, nv, 1.f / sum);
}

// out_g[b] (+)= sum_i w_g[first + i] v[key(first + i)][b] over i < n, for GC query vectors and DB vectors of
// elements (V) from element d0: values added in key order. keys == nullptr: key(p) = p (the shared prefix);
// otherwise key(first + i) = keys[i]. With resume, the sums go on from what out holds (a row's tail after the prefix
// its block shared), so every sum is its row's visible keys in order, however the rows were grouped.
template <class V, int GC, int DB>
SS_ATTN_INLINE void weighted_values(const float* const* w, int first, const int* keys, int n, const float* v,
                                    size_t v_stride, int d0, float* const* out, bool resume) {
  constexpr int L = vec::lanes_of<V>;
  V acc[GC][DB];
  for (int g = 0; g < GC; ++g)
    for (int b = 0; b < DB; ++b) acc[g][b] = resume ? vec::load<V>(out[g] + d0 + b * L) : V{};
  for (int i = 0; i < n; ++i) {
    const int key = keys ? keys[i] : first + i;
    const float* vj = v + size_t(key) * v_stride + d0;
    V vv[DB];
    for (int b = 0; b < DB; ++b) vv[b] = vec::load<V>(vj + b * L);
    for (int g = 0; g < GC; ++g) {
      const V wg = vec::splat<V>(w[g][first + i]);
      for (int b = 0; b < DB; ++b) acc[g][b] += wg * vv[b];
    }
  }
  for (int g = 0; g < GC; ++g)
    for (int b = 0; b < DB; ++b) vec::store(out[g] + d0 + b * L, acc[g][b]);
}

// The same over the whole head (a multiple of 16 elements), kWide vectors at a time.
template <class V, int GC, int kWide>
SS_ATTN_INLINE void values_for(const float* const* w, int first, const int* keys, int n, const float* v,
                               size_t v_stride, int hd, float* const* out, bool resume) {
  constexpr int L = vec::lanes_of<V>;
  int d0 = 0;
  for (; d0 + kWide * L <= hd; d0 += kWide * L)
    weighted_values<V, GC, kWide>(w, first, keys, n, v, v_stride, d0, out, resume);
  for (; d0 < hd; d0 += L) weighted_values<V, GC, 1>(w, first, keys, n, v, v_stride, d0, out, resume);
}

// Any head_dim (not a multiple of 16): the same sums, element by element.
void values_any(const float* const* w, int gc, int first, const int* keys, int n, const float* v, size_t v_stride,
                int hd, float* const* out, bool resume) {
  for (int g = 0; g < gc; ++g) {
    if (!resume) std::fill(out[g], out[g] + hd, 0.f);
    for (int i = 0; i < n; ++i) {
      const float* vj = v + size_t(keys ? keys[i] : first + i) * v_stride;
      const float wg = w[g][first + i];
      for (int d = 0; d < hd; ++d) out[g][d] += wg * vj[d];
    }
  }
}

// The register blocking of the kernel at width L (floats a vector): vectors V, chunks of up to kMaxQ query
// vectors, kWide vectors of keys (scores) or of head elements (values) a block. Changing any of them regroups the same
// sums, never reorders them. Accumulators + loaded vectors + one broadcast: AVX-512 6 x 4 + 4 + 1 zmm (of 32); AVX2
// 6 x 2 + 2 + 1 ymm (of 16); SSE 6 x 2 + 2 + 1 xmm (of 16).
template <int L>
struct Blocking {
  using V = vec::vec_t<L>;
  static constexpr int kWidth = L, kWide = L == 16 ? 4 : 2;
};

template <class B>
SS_ATTN_INLINE void scores_dispatch(int gc, const float* const* q, const AttentionArgs& a, const float* kt, float* sc,
                                    size_t pad) {
  using V = typename B::V;
  constexpr int W = B::kWide;
  const int hd = a.head_dim;
  if (hd % kLanes) return scores_any(q, gc, kt, a.kt_stride, hd, a.keys, a.scale, sc, pad);
  switch (gc) {
    case 1: return scores_for<V, 1, W>(q, kt, hd, a.keys, a.scale, sc, pad);
    case 2: return scores_for<V, 2, W>(q, kt, hd, a.keys, a.scale, sc, pad);
    case 3: return scores_for<V, 3, W>(q, kt, hd, a.keys, a.scale, sc, pad);
    case 4: return scores_for<V, 4, W>(q, kt, hd, a.keys, a.scale, sc, pad);
    case 5: return scores_for<V, 5, W>(q, kt, hd, a.keys, a.scale, sc, pad);
    default: return scores_for<V, 6, W>(q, kt, hd, a.keys, a.scale, sc, pad);
  }
}

template <class B>
SS_ATTN_INLINE void values_dispatch(int gc, const float* const* w, int first, const int* keys, int n,
                                    const AttentionArgs& a, const float* v, float* const* out, bool resume) {
  using V = typename B::V;
  constexpr int W = B::kWide;
  const int hd = a.v_dim > 0 ? a.v_dim : a.head_dim;
  if (hd % kLanes) return values_any(w, gc, first, keys, n, v, a.v_stride, hd, out, resume);
  switch (gc) {
    case 1: return values_for<V, 1, W>(w, first, keys, n, v, a.v_stride, hd, out, resume);
    case 2: return values_for<V, 2, W>(w, first, keys, n, v, a.v_stride, hd, out, resume);
    case 3: return values_for<V, 3, W>(w, first, keys, n, v, a.v_stride, hd, out, resume);
    case 4: return values_for<V, 4, W>(w, first, keys, n, v, a.v_stride, hd, out, resume);
    case 5: return values_for<V, 5, W>(w, first, keys, n, v, a.v_stride, hd, out, resume);
    default: return values_for<V, 6, W>(w, first, keys, n, v, a.v_stride, hd, out, resume);
  }
}

// One task: KV head kvh for rows [r0, r0 + nrows), every query head of its group, in chunks of up to kMaxQ query
// vectors (rows in order, heads in order). The rows of a chunk share each loaded key and value vector: their scores
// in one pass over the keys, and their values over the prefix every one of them sees, then each row's own tail.
template <class B>
SS_ATTN_INLINE void attend_block(const AttentionArgs& a, const VisibleKeys& vk, int kvh, int r0, int nrows) {
  const int hd = a.head_dim, vd = a.v_dim > 0 ? a.v_dim : hd, group = a.heads / a.kv_heads;
  Scratch& s = scratch();
  const size_t pad = kt_stride_for(a.keys);  // scores and weights per query vector: keys padded to whole vectors
  if (s.scores.size() < kMaxQ * pad) s.scores.resize(kMaxQ * pad);
  if (s.weights.size() < kMaxQ * pad) s.weights.resize(kMaxQ * pad);
  const float* kt = a.kt + kt_index(kvh, 0, 0, hd, a.kt_stride);
  const float* v = a.v + size_t(kvh) * vd;
  const int total = nrows * group;
  for (int c0 = 0; c0 < total; c0 += kMaxQ) {
    const int gc = std::min(kMaxQ, total - c0);
    const float* q[kMaxQ];
    float* out[kMaxQ];
    float* w[kMaxQ];
    int row_of[kMaxQ], head_of[kMaxQ];
    for (int g = 0; g < gc; ++g) {
      const int row = r0 + (c0 + g) / group, h = kvh * group + (c0 + g) % group;
      row_of[g] = row;
      head_of[g] = h;
      q[g] = a.q + size_t(row) * a.q_stride + size_t(h) * hd;
      out[g] = a.out + size_t(row) * a.out_stride + size_t(h) * vd;
      w[g] = s.weights.data() + size_t(g) * pad;
    }
    float* sc = s.scores.data();
    scores_dispatch<B>(gc, q, a, kt, sc, pad);
    int shared = a.keys;  // the prefix every row of the chunk sees
    for (int g = 0; g < gc; ++g) {
      const int row = row_of[g];
      const float sink = a.sinks ? a.sinks[head_of[g]] : -std::numeric_limits<float>::infinity();
      packed_softmax<B::kWidth>(sc + size_t(g) * pad, vk.prefix[size_t(row)], vk.tail_of(row), vk.count[size_t(row)],
                                a.soft_cap, sink, w[g]);
      shared = std::min(shared, vk.prefix[size_t(row)]);
    }
    values_dispatch<B>(gc, w, 0, nullptr, shared, a, v, out, false);
    // Each row's own keys after the shared prefix: its prefix beyond it, then its listed keys, resuming its sums.
    for (int g0 = 0; g0 < gc;) {
      int g1 = g0 + 1;
      while (g1 < gc && row_of[g1] == row_of[g0]) ++g1;
      const int row = row_of[g0], p = vk.prefix[size_t(row)], nv = vk.count[size_t(row)];
      if (nv == 0) {  // nothing attendable: zeros, as the softmax of all -inf gives
        for (int g = g0; g < g1; ++g) std::fill(out[g], out[g] + vd, 0.f);
      } else {
        if (p > shared) values_dispatch<B>(g1 - g0, w + g0, shared, nullptr, p - shared, a, v, out + g0, true);
        if (nv > p) values_dispatch<B>(g1 - g0, w + g0, p, vk.tail_of(row), nv - p, a, v, out + g0, true);
      }
      g0 = g1;
    }
  }
}

// Every task of one attention() call: (KV head, block of per_task rows) pairs t0 .. t1 - 1.
template <int L>
SS_ATTN_INLINE void attend_tasks_with(const AttentionArgs& a, const VisibleKeys& vk, int per_task, int t0, int t1) {
  for (int t = t0; t < t1; ++t) {
    const int r0 = (t / a.kv_heads) * per_task;
    attend_block<Blocking<L>>(a, vk, t % a.kv_heads, r0, std::min(per_task, a.rows - r0));
  }
}
SS_PER_ISA_KERNEL(void, attend_tasks,
                  (const AttentionArgs& a, const VisibleKeys& vk, int per_task, int t0, int t1),
                  (a, vk, per_task, t0, t1))

}  // namespace

void VisibleKeys::build(const uint8_t* visible, int rows, int n_keys) {
  keys = n_keys;
  prefix.resize(size_t(rows));
  count.resize(size_t(rows));
  if (tail.size() < size_t(rows) * size_t(keys)) tail.resize(size_t(rows) * size_t(keys));
  for (int r = 0; r < rows; ++r) {
    const uint8_t* vis = visible + size_t(r) * size_t(keys);
    const void* zero = std::memchr(vis, 0, size_t(keys));
    const int p = zero ? int(static_cast<const uint8_t*>(zero) - vis) : keys;
    int* t = tail.data() + size_t(r) * size_t(keys);
    int n = 0;
    for (int j = p; j < keys; ++j)
      if (vis[j]) t[n++] = j;
    prefix[size_t(r)] = p;
    count[size_t(r)] = p + n;
  }
}

void attention(const AttentionArgs& a) {
  // The caller's packed lists, or this thread's own (by reference: a thread_local named inside the lambda would be
  // each worker's own, empty, one).
  thread_local VisibleKeys own;
  if (!a.seen) own.build(a.visible, a.rows, a.keys);
  const VisibleKeys& vk = a.seen ? *a.seen : own;
  const int group = a.heads / a.kv_heads;
  // Two rows per task where their query vectors fit one chunk (the default base: 2 x 3 heads), sharing every key
  // and value load; tasks are (KV head, row pair), so an 8-row step still gives each of two threads 4 tasks.
  const int per_task = 2 * group <= kMaxQ ? 2 : 1;
  const int blocks = (a.rows + per_task - 1) / per_task, tasks = blocks * a.kv_heads;
  const size_t macs = size_t(a.rows) * size_t(a.heads) * size_t(a.keys) * size_t(a.head_dim) * 2;
  // Threads from ~32k multiply-adds: one-token decoding at context 128-192 gains from two threads already.
  run_team_units(tasks, macs, 32768, [&](int t0, int t1) { attend_tasks(a, vk, per_task, t0, t1); });
}

}  // namespace specscope::cpu

#pragma GCC diagnostic pop
