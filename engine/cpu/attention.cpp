#include "engine/cpu/attention.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vec_math.h"

#if defined(__x86_64__) && !defined(__clang__) && !defined(SPECSCOPE_NO_TARGET_CLONES)
#define SS_ATTN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SS_ATTN_CLONES
#endif
#define SS_ATTN_INLINE __attribute__((always_inline)) inline

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace specscope::cpu {
namespace {

using vec::f16v;
using vec::kLanes;

// Per-thread scratch of one task: scores [heads of a chunk][padded keys], packed weights, visible key indices.
struct Scratch {
  std::vector<float> scores, weights;
  std::vector<int> vis;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// scores[g][j] = scale * sum_d q_g[d] kt[d][j] for GC heads and KB blocks of 16 keys from j0: one FMA chain per
// (head, key lane) over d in order, so a score never depends on which other heads or keys share the call.
template <int GC, int KB>
SS_ATTN_INLINE void score_blocks(const float* const* q, const float* kt, size_t kt_stride, int hd, int j0, float scale,
                                 float* scores, size_t score_stride) {
  f16v acc[GC][KB];
  for (int g = 0; g < GC; ++g)
    for (int b = 0; b < KB; ++b) acc[g][b] = f16v{};
  // kt: this head's tiles; tile j0 / 16 holds keys j0 .. j0 + 15 as [d][16].
  const float* tile = kt + size_t(j0 / kLanes) * size_t(hd) * kLanes;
  for (int d = 0; d < hd; ++d) {
    f16v kv[KB];
    for (int b = 0; b < KB; ++b) kv[b] = vec::load(tile + (size_t(b) * size_t(hd) + size_t(d)) * kLanes);
    for (int g = 0; g < GC; ++g) {
      const f16v qd = vec::splat(q[g][d]);
      for (int b = 0; b < KB; ++b) acc[g][b] += qd * kv[b];
    }
  }
  for (int g = 0; g < GC; ++g)
    for (int b = 0; b < KB; ++b) vec::store(scores + size_t(g) * score_stride + j0 + b * kLanes, acc[g][b] * scale);
}

template <int GC>
SS_ATTN_INLINE void scores_for(const float* const* q, const float* kt, size_t kt_stride, int hd, int keys, float scale,
                               float* scores, size_t score_stride) {
  int j0 = 0;
  // 4 blocks of 16 keys at a time: 12-16 accumulators, enough to cover the FMA latency (with 2 blocks, 3 heads
  // kept only 6 chains in flight).
  for (; j0 + 4 * kLanes <= keys; j0 += 4 * kLanes) score_blocks<GC, 4>(q, kt, kt_stride, hd, j0, scale, scores, score_stride);
  for (; j0 + 2 * kLanes <= keys; j0 += 2 * kLanes) score_blocks<GC, 2>(q, kt, kt_stride, hd, j0, scale, scores, score_stride);
  for (; j0 < keys; j0 += kLanes) score_blocks<GC, 1>(q, kt, kt_stride, hd, j0, scale, scores, score_stride);
}

// Softmax over the visible keys, packed in key order: w[i] = exp(s[vis[i]] - max) / sum. Only the gather is
// scalar; the maximum (exact in any order), the exponentials, the sum (lane i % 16 of the packed keys, then
// vec::hsum) and the scaling run in vectors.
SS_ATTN_INLINE void packed_softmax(const float* s, const int* vis, int nv, float* w) {
  for (int i = 0; i < nv; ++i) w[i] = s[vis[i]];
  vec::scale(w, nv, 1.f / vec::sum_exp(w, nv, vec::max_of(w, nv), true));
}

// out_g = sum_i w_g[i] v[vis[i]] for GC heads, head_dim = 16 * DB: values added in key order.
template <int GC, int DB>
SS_ATTN_INLINE void weighted_values(const float* const* w, const int* vis, int nv, const float* v, size_t v_stride,
                                    float* const* out) {
  f16v acc[GC][DB];
  for (int g = 0; g < GC; ++g)
    for (int b = 0; b < DB; ++b) acc[g][b] = f16v{};
  for (int i = 0; i < nv; ++i) {
    const float* vj = v + size_t(vis[i]) * v_stride;
    f16v vv[DB];
    for (int b = 0; b < DB; ++b) vv[b] = vec::load(vj + b * kLanes);
    for (int g = 0; g < GC; ++g) {
      const f16v wg = vec::splat(w[g][i]);
      for (int b = 0; b < DB; ++b) acc[g][b] += wg * vv[b];
    }
  }
  for (int g = 0; g < GC; ++g)
    for (int b = 0; b < DB; ++b) vec::store(out[g] + b * kLanes, acc[g][b]);
}

// Any head_dim (not a multiple of 16, or too wide for the register tiles): the same sums, element by element.
void weighted_values_any(const float* const* w, int gc, const int* vis, int nv, const float* v, size_t v_stride, int hd,
                         float* const* out) {
  for (int g = 0; g < gc; ++g) {
    std::fill(out[g], out[g] + hd, 0.f);
    for (int i = 0; i < nv; ++i) {
      const float* vj = v + size_t(vis[i]) * v_stride;
      const float wg = w[g][i];
      for (int d = 0; d < hd; ++d) out[g][d] += wg * vj[d];
    }
  }
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

// One (row, KV head) task: every query head of the group, in chunks of up to 4.
SS_ATTN_CLONES
void attend_group(const AttentionArgs& a, int row, int kvh) {
  const int hd = a.head_dim, group = a.heads / a.kv_heads;
  Scratch& s = scratch();
  const size_t pad = kt_stride_for(a.keys);
  if (s.scores.size() < 4 * pad) s.scores.resize(4 * pad);
  if (s.weights.size() < 4 * size_t(a.keys)) s.weights.resize(4 * size_t(a.keys));
  if (s.vis.size() < size_t(a.keys)) s.vis.resize(size_t(a.keys));
  int nv = 0;
  const uint8_t* visible = a.visible + size_t(row) * size_t(a.keys);
  for (int j = 0; j < a.keys; ++j)
    if (visible[j]) s.vis[size_t(nv++)] = j;
  const float* kt = a.kt + kt_index(kvh, 0, 0, hd, a.kt_stride);
  const float* v = a.v + size_t(kvh) * hd;
  const bool tiled = hd % kLanes == 0 && (hd == 64 || hd == 128);
  for (int g0 = 0; g0 < group; g0 += 4) {
    const int gc = std::min(4, group - g0);
    const float* q[4];
    float* out[4];
    float* w[4];
    for (int g = 0; g < gc; ++g) {
      const int h = kvh * group + g0 + g;
      q[g] = a.q + size_t(row) * a.q_stride + size_t(h) * hd;
      out[g] = a.out + size_t(row) * a.out_stride + size_t(h) * hd;
      w[g] = s.weights.data() + size_t(g) * size_t(a.keys);
    }
    if (nv == 0) {  // nothing attendable: zeros, as the softmax of all -inf gives
      for (int g = 0; g < gc; ++g) std::fill(out[g], out[g] + hd, 0.f);
      continue;
    }
    float* sc = s.scores.data();
    if (hd % kLanes == 0) {
      switch (gc) {
        case 1: scores_for<1>(q, kt, a.kt_stride, hd, a.keys, a.scale, sc, pad); break;
        case 2: scores_for<2>(q, kt, a.kt_stride, hd, a.keys, a.scale, sc, pad); break;
        case 3: scores_for<3>(q, kt, a.kt_stride, hd, a.keys, a.scale, sc, pad); break;
        default: scores_for<4>(q, kt, a.kt_stride, hd, a.keys, a.scale, sc, pad); break;
      }
    } else {
      scores_any(q, gc, kt, a.kt_stride, hd, a.keys, a.scale, sc, pad);
    }
    for (int g = 0; g < gc; ++g) packed_softmax(sc + size_t(g) * pad, s.vis.data(), nv, w[g]);
    if (tiled && hd == 64) {
      switch (gc) {
        case 1: weighted_values<1, 4>(w, s.vis.data(), nv, v, a.v_stride, out); break;
        case 2: weighted_values<2, 4>(w, s.vis.data(), nv, v, a.v_stride, out); break;
        case 3: weighted_values<3, 4>(w, s.vis.data(), nv, v, a.v_stride, out); break;
        default: weighted_values<4, 4>(w, s.vis.data(), nv, v, a.v_stride, out); break;
      }
    } else if (tiled && hd == 128) {
      for (int g = 0; g < gc; g += 2) {
        if (gc - g >= 2) weighted_values<2, 8>(w + g, s.vis.data(), nv, v, a.v_stride, out + g);
        else weighted_values<1, 8>(w + g, s.vis.data(), nv, v, a.v_stride, out + g);
      }
    } else {
      weighted_values_any(w, gc, s.vis.data(), nv, v, a.v_stride, hd, out);
    }
  }
}

}  // namespace

void attention(const AttentionArgs& a) {
  const int tasks = a.rows * a.kv_heads;
  const size_t macs = size_t(tasks) * size_t(a.heads / a.kv_heads) * size_t(a.keys) * size_t(a.head_dim) * 2;
  // Threads from ~32k multiply-adds: one-token decoding at context 128-192 gains from two threads already.
  run_team(tasks, macs, 32768, [&](int tid, int nt) {
    for (int t = tasks * tid / nt; t < tasks * (tid + 1) / nt; ++t) attend_group(a, t / a.kv_heads, t % a.kv_heads);
  });
}

}  // namespace specscope::cpu

#pragma GCC diagnostic pop
