// The row-tile path of llama_kernels.h's `attention` (attention_paths.h), for batches of several new rows: tree
// verification (4-128 rows) and prefill. One block per (tile of rows, group of query heads sharing a KV head,
// chunk of the context) loads each tile of 64 key and value rows into shared memory once and uses it for every
// (row, head) query of the block, 32 of them: 8 rows of Llama's 4-head groups. The split path (attention_split.cu)
// runs one block per row, so a tree of 64 rows read every key and value row 64 times; on the H200 attention took
// 6.4 of a 17.9 ms 64-row Llama-3.1-8B step at 1k positions and 309 of 347 ms of a 1,024-token prefill
// (bench/results/gpu_h200_2026-12-04b, profile_8b). Same contract, visibility rule (attention_visibility.cuh),
// partials layout and combine (FlashDecoding) as the split path; CPU reference attention_ref.cpp.
//
// Each query's arithmetic is its own and sums in slot order: which rows share its block, and where invisible
// slots lie between its visible ones, change nothing in its bits; only the chunks (row_tile_count) do, and up to
// 1,024 slots there is one. A first version kept an online softmax (rescaling by each tile's maximum, as the split
// path does): on the H200 greedy trees then parted from vanilla on 2-3 of 80 held-out prompts (gpu_h200_2026-12-04c),
// at near ties, as the tree rows' bits no longer matched their decode's. Two passes (the maximum, then the weights)
// cost the keys a second read.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/attention_paths.h"
#include "kernels/attention_visibility.cuh"
#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"

namespace specscope::cuda {

namespace {

constexpr int kThreads = 256;  // 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 64;              // slots a tile: lane l scores slots l and l + 32
constexpr int kQueriesPerWarp = 4;     // each warp owns 4 (row, head) queries from the first tile to the last
constexpr int kQueries = kWarps * kQueriesPerWarp;
constexpr int kMaxDimsPerLane = 4;     // head_dim <= 128: lane l accumulates dims l, l + 32, l + 64, l + 96
// Blocks the launcher aims at: one wave of two 90 KiB blocks per SM of an H100/H200 (132 SMs). It also bounds the
// scratch: row tiles x head groups x chunks <= 256 whenever there is more than one chunk, and a block holds at most
// kQueries (row, head) pairs, so the partials fit split_scratch_floats (1024 x 8 queries). A constant rather than
// a device query so that the same inputs give the same bits on every GPU.
constexpr int kRowTargetBlocks = 256;

size_t shared_floats(int hd) {
  return size_t(kTile) * (hd + 1) + size_t(kTile) * hd + size_t(kQueries) * hd + size_t(kQueries) * kTile;
}

// float4s a thread loads of a tile's keys (or values) at the largest head, and of the block's queries.
constexpr int kTileVecs = kTile * attention_paths::kMaxHeadDim / 4 / kThreads;
constexpr int kQueryVecs = kQueries * attention_paths::kMaxHeadDim / 4 / kThreads;

// Rows [t0, t0 + tl) of a cache (head kvh's hd floats of each; zeros from tl to kTile) into a shared tile of row
// stride `stride`. Every load of a thread is issued before any store: one memory latency a tile, not one per
// element (a loop of load-then-store waited on each: ~30 us a tile on the H200).
__device__ inline void load_tile(const float* cache, int t0, int tl, int kv_dim, int kvh, int hd, float* tile,
                                 int stride) {
  const int vecs_per_row = hd / 4;
  float4 r[kTileVecs];
#pragma unroll
  for (int u = 0; u < kTileVecs; ++u) {
    const int idx = threadIdx.x + u * kThreads, t = idx / vecs_per_row, d4 = idx % vecs_per_row;
    r[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (t < tl) r[u] = *reinterpret_cast<const float4*>(cache + int64_t(t0 + t) * kv_dim + int64_t(kvh) * hd + 4 * d4);
  }
#pragma unroll
  for (int u = 0; u < kTileVecs; ++u) {
    const int idx = threadIdx.x + u * kThreads, t = idx / vecs_per_row, d = 4 * (idx % vecs_per_row);
    if (t >= kTile) continue;
    float* o = tile + t * stride + d;
    o[0] = r[u].x, o[1] = r[u].y, o[2] = r[u].z, o[3] = r[u].w;
  }
}

// Whether any row of the block [r0, r0 + rows) sees any slot of the tile [t0, t0 + tl): block-uniform (its barrier
// also orders the previous tile's reads of shared memory before the next tile's stores).
__device__ inline bool block_sees_tile(int r0, int rows, int t0, int tl, int n, int base, const uint8_t* mask,
                                       const int32_t* positions, const int32_t* slot_pos, int window) {
  bool seen = false;
  for (int p = threadIdx.x; p < rows * tl && !seen; p += kThreads)
    seen = slot_visible(r0 + p / tl, t0 + p % tl, n, base, mask, positions, slot_pos, window);
  return __syncthreads_or(seen);
}

// The scaled scores of slots lane and lane + 32 of the tile for a warp's queries (-FLT_MAX where the query's row
// does not see the slot): each one thread's sum over the dims in order, as attention.cu's single-block path sums.
__device__ inline void tile_scores(const float* key_tile, int ks, const float* qw, int hd, float scale, int t0, int tl,
                                   const int* row, const bool* live, int n, int base, const uint8_t* mask,
                                   const int32_t* positions, const int32_t* slot_pos, int window,
                                   float (&sc)[kQueriesPerWarp][2]) {
  const int lane = threadIdx.x % 32;
  float s[kQueriesPerWarp][2];
#pragma unroll
  for (int a = 0; a < kQueriesPerWarp; ++a) s[a][0] = s[a][1] = 0.f;
  const float* k0 = key_tile + lane * ks;
  const float* k1 = key_tile + (lane + 32) * ks;
#pragma unroll 4
  for (int d = 0; d < hd; ++d) {
    const float a0 = k0[d], a1 = k1[d];
#pragma unroll
    for (int a = 0; a < kQueriesPerWarp; ++a) {
      const float qv = qw[a * hd + d];  // the same address in every lane: a broadcast
      s[a][0] = fmaf(qv, a0, s[a][0]);
      s[a][1] = fmaf(qv, a1, s[a][1]);
    }
  }
#pragma unroll
  for (int a = 0; a < kQueriesPerWarp; ++a)
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int t = lane + 32 * u;
      sc[a][u] = live[a] && t < tl && slot_visible(row[a], t0 + t, n, base, mask, positions, slot_pos, window)
                     ? s[a][u] * scale
                     : -FLT_MAX;
    }
}

// Block (x, y, z): rows x * R .. x * R + R - 1 (R = kQueries / GB), query heads y * GB .. y * GB + GB - 1 (one KV
// head), slots [z * chunk, min(total, (z + 1) * chunk)), in tiles of kTile slots, twice:
//  pass 1: each query's largest score over the chunk (a maximum: the same whatever the order);
//  pass 2: weights exp(s - max), then lane l adds, slot by slot in order, each weight into the query's sum and
//     weight x value into its dims l, l + 32, ... (every lane the same sum).
// So a query's weights, sum and output are each one thread's sums over its visible slots in order: with the whole
// context in one chunk the bits attention.cu's single-block path gives (it sums the same way), whatever rows share
// the block and wherever invisible slots sit between the visible ones (a tree row against its own decode). Tiles no
// row of the block sees are skipped (causal prefill: half of them); skipping changes no sum. Keys go to shared
// memory padded to hd + 1 floats, so the 32 lanes reading 32 slots at one dim hit 32 banks.
// Query x of the block is (row x / GB, head x % GB); x >= R * GB (GB not dividing 32) or a row past n is dead.
template <int GB>
__global__ void __launch_bounds__(kThreads)
    rows_partial_k(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
                   const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, int chunk,
                   float* part_o, float* part_ml, float* out) {
  constexpr int R = kQueries / GB;
  extern __shared__ float smem[];
  const int ks = hd + 1;
  float* key_tile = smem;                            // [kTile][hd + 1]
  float* value_tile = key_tile + kTile * ks;         // [kTile][hd]
  float* queries = value_tile + kTile * hd;          // [kQueries][hd]
  float* weights = queries + kQueries * hd;          // [kQueries][kTile]
  const int r0 = blockIdx.x * R, h0 = blockIdx.y * GB, c = blockIdx.z, kvh = h0 / (nh / nkv);
  const int total = base + n, kv_dim = nkv * hd;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c0 = c * chunk, c1 = min(total, c0 + chunk);
  const int rows_here = min(R, n - r0);
  const float scale = rsqrtf(float(hd));

  {  // The block's queries (every load before any store, as load_tile does).
    const int vecs_per_query = hd / 4;
    float4 r[kQueryVecs];
#pragma unroll
    for (int u = 0; u < kQueryVecs; ++u) {
      const int idx = threadIdx.x + u * kThreads, x = idx / vecs_per_query, d4 = idx % vecs_per_query;
      const int row = r0 + x / GB;
      r[u] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (x < R * GB && row < n)
        r[u] = *reinterpret_cast<const float4*>(q + (int64_t(row) * nh + h0 + x % GB) * hd + 4 * d4);
    }
#pragma unroll
    for (int u = 0; u < kQueryVecs; ++u) {
      const int idx = threadIdx.x + u * kThreads, x = idx / vecs_per_query, d = 4 * (idx % vecs_per_query);
      if (x >= kQueries) continue;
      float* o = queries + x * hd + d;
      o[0] = r[u].x, o[1] = r[u].y, o[2] = r[u].z, o[3] = r[u].w;
    }
  }
  int row[kQueriesPerWarp];
  bool live[kQueriesPerWarp];  // warp-uniform
  float m[kQueriesPerWarp], l[kQueriesPerWarp], acc[kQueriesPerWarp][kMaxDimsPerLane];
#pragma unroll
  for (int a = 0; a < kQueriesPerWarp; ++a) {
    const int x = warp * kQueriesPerWarp + a;
    row[a] = r0 + x / GB;
    live[a] = x < R * GB && row[a] < n;
    m[a] = -FLT_MAX, l[a] = 0.f;  // -FLT_MAX: nothing visible
#pragma unroll
    for (int e = 0; e < kMaxDimsPerLane; ++e) acc[a][e] = 0.f;
  }
  const bool warp_live = live[0];  // queries fill warps in order: a warp's first query is live if any is
  const float* qw = queries + warp * kQueriesPerWarp * hd;

  // Each tile of the chunk that some row of the block sees: its keys (and with `values` its values) into shared
  // memory, then in the warps with live queries `use(tl, scores)`. Both passes walk the tiles this one way.
  auto each_seen_tile = [&](bool values, auto&& use) {
    for (int t0 = c0; t0 < c1; t0 += kTile) {
      const int tl = min(kTile, c1 - t0);
      if (!block_sees_tile(r0, rows_here, t0, tl, n, base, mask, positions, slot_pos, window)) continue;
      load_tile(kc, t0, tl, kv_dim, kvh, hd, key_tile, ks);
      if (values) load_tile(vc, t0, tl, kv_dim, kvh, hd, value_tile, hd);
      __syncthreads();
      if (!warp_live) continue;
      float sc[kQueriesPerWarp][2];
      tile_scores(key_tile, ks, qw, hd, scale, t0, tl, row, live, n, base, mask, positions, slot_pos, window, sc);
      use(tl, sc);
    }
  };
  // Pass 1: each query's largest visible score over the chunk.
  each_seen_tile(false, [&](int, const float (&sc)[kQueriesPerWarp][2]) {
#pragma unroll
    for (int a = 0; a < kQueriesPerWarp; ++a) {
      float mx = fmaxf(sc[a][0], sc[a][1]);
      for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      m[a] = fmaxf(m[a], mx);
    }
  });
  // Pass 2: weights, their sum and the weighted values.
  each_seen_tile(true, [&](int tl, const float (&sc)[kQueriesPerWarp][2]) {
#pragma unroll
    for (int a = 0; a < kQueriesPerWarp; ++a) {
      float* wa = weights + (warp * kQueriesPerWarp + a) * kTile;
      wa[lane] = sc[a][0] == -FLT_MAX ? 0.f : __expf(sc[a][0] - m[a]);
      wa[lane + 32] = sc[a][1] == -FLT_MAX ? 0.f : __expf(sc[a][1] - m[a]);
    }
    __syncwarp();
    const float* ww = weights + warp * kQueriesPerWarp * kTile;
    for (int t = 0; t < tl; ++t) {
      float vr[kMaxDimsPerLane];
#pragma unroll
      for (int e = 0; e < kMaxDimsPerLane; ++e) {
        const int d = lane + 32 * e;
        vr[e] = d < hd ? value_tile[t * hd + d] : 0.f;
      }
#pragma unroll
      for (int a = 0; a < kQueriesPerWarp; ++a) {
        if (!live[a]) continue;
        const float w = ww[a * kTile + t];
        if (w == 0.f) continue;  // an unseen slot adds nothing, whatever its value row holds
        l[a] += w;
#pragma unroll
        for (int e = 0; e < kMaxDimsPerLane; ++e) acc[a][e] = fmaf(w, vr[e], acc[a][e]);
      }
    }
  });

#pragma unroll
  for (int a = 0; a < kQueriesPerWarp; ++a) {
    if (!live[a]) continue;
    const int x = warp * kQueriesPerWarp + a;
    const int64_t row_head = int64_t(row[a]) * nh + h0 + x % GB;
    const int64_t part = row_head * gridDim.z + c;
    const float inv = l[a] > 0.f ? 1.f / l[a] : 0.f;  // nothing visible: zeros
#pragma unroll
    for (int e = 0; e < kMaxDimsPerLane; ++e) {
      const int d = lane + 32 * e;
      if (d >= hd) continue;
      if (gridDim.z == 1)  // one chunk holds the whole context: normalise here, as the single-block path does
        out[row_head * hd + d] = acc[a][e] * inv;
      else
        part_o[part * hd + d] = acc[a][e];
    }
    if (gridDim.z > 1 && lane == 0) part_ml[2 * part] = m[a], part_ml[2 * part + 1] = l[a];
  }
}

template <int GB>
void launch_rows(dim3 grid, cudaStream_t s, const float* q, const float* kc, const float* vc,
                 const int32_t* slot_pos, const uint8_t* mask, const int32_t* positions, int n, int base, int nh,
                 int nkv, int hd, int window, int chunk, float* part_o, float* part_ml, float* out) {
  const size_t shmem = sizeof(float) * shared_floats(hd);
  // 90 KiB at hd 128: above the default 48 KiB, so the launch needs the opt-in, given once per instance for the
  // largest head (thread-safe static initialisation; sm_86/89 allow 99 KiB a block, sm_80 163, sm_90 227).
  static const bool opted_in = [] {
    CUDA_CHECK(cudaFuncSetAttribute(rows_partial_k<GB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(sizeof(float) * shared_floats(attention_paths::kMaxHeadDim))));
    return true;
  }();
  (void)opted_in;
  rows_partial_k<GB><<<grid, kThreads, shmem, s>>>(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window,
                                                   chunk, part_o, part_ml, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

namespace attention_paths {

int row_tile_rows(int nh, int nkv) { return kQueries / heads_per_block(nh, nkv); }

int row_tile_count(int n, int nh, int nkv, int total_slots) {
  // Up to kSplitAboveSlots one chunk: a row's bits are then those of its own decode on the single-block path (the
  // decode of a short context), so tree verification cannot part from vanilla at a near tie.
  if (total_slots <= kSplitAboveSlots) return 1;
  const int rows = row_tile_rows(nh, nkv);
  const int64_t tiles = (int64_t(total_slots) + kTile - 1) / kTile;
  const int64_t blocks = (int64_t(n) + rows - 1) / rows * (nh / heads_per_block(nh, nkv));
  const int64_t wanted = std::max<int64_t>(1, kRowTargetBlocks / std::max<int64_t>(1, blocks));
  return int(std::max<int64_t>(1, std::min(tiles, wanted)));
}

void row_tiles(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
               const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, int splits, float* out,
               cudaStream_t s, float* given_scratch, size_t given_floats) {
  if (n <= 0) return;  // no rows: nothing to write (a grid of 0 blocks is a launch error)
  if (hd > kMaxHeadDim || hd % 4 != 0)
    throw std::invalid_argument("attention: row tiles need a head_dim that is a multiple of 4 up to " +
                                std::to_string(kMaxHeadDim) + ", not " + std::to_string(hd));
  const ChunkPlan plan = plan_chunks(n, nh, hd, base + n, kTile, splits, given_scratch, given_floats, s);
  const int gb = heads_per_block(nh, nkv), rows = row_tile_rows(nh, nkv);
  const dim3 grid((n + rows - 1) / rows, nh / gb, plan.chunks);
  with_head_group(gb, [&](auto group) {
    launch_rows<decltype(group)::value>(grid, s, q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window,
                                        plan.chunk_slots, plan.part_o, plan.part_ml, out);
  });
  finish_chunks(plan, n, nh, hd, out, s);
}

}  // namespace attention_paths

}  // namespace specscope::cuda
