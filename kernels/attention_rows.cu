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
// slots lie between its visible ones, change nothing in its bits; only the chunks do. A first version kept an
// online softmax (rescaling by each tile's maximum, as the split path does): on the H200 greedy trees then parted
// from vanilla on 2-3 of 80 held-out prompts (gpu_h200_2026-12-04c), at near ties, as the tree rows' bits no longer
// matched their decode's. Two passes (the maximum, then the weights) cost the keys a second read.
//
// The chunks are the row's own (attention_paths.h, canonical_chunks): up to 1,024 slots one; past them a "long" row
// (one whose decode would see more than 1,024 slots) cuts its visible slots at every 256th rank, a prefix slot's
// rank being its index and a tree slot's the prefix's length plus the tree slots the row sees before it. Its decode,
// after the accepted rows are moved together, has the same keys at the same ranks, so the same chunks, partials and
// fold. Before, the chunks were cut by slot index in numbers chosen for the call's rows (and a decode took the split
// path's online softmax), so past 1,024 slots a tree row and its decode could part at a near tie.
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

// The walk of a block (attention_paths.h, chunk_walk): for each tile of its slots that some row of [r0, r0 + rows)
// sees, its keys (and with `values` its values) loaded into shared memory and published, then per_tile(t0, tl),
// which must not let a thread leave before the block's next barrier. Both kernels below walk their tiles this one
// way, both passes each.
template <class PerTile>
__device__ __forceinline__ void walk_seen_tiles(const attention_paths::ChunkWalk& walk, int r0, int rows, int n,
                                                int base, const uint8_t* mask, const int32_t* positions,
                                                const int32_t* slot_pos, int window, const float* kc, const float* vc,
                                                int kv_dim, int kvh, int hd, float* key_tile, int ks, float* value_tile,
                                                bool values, PerTile&& per_tile) {
  for (int segment = 0; segment < 2; ++segment) {  // one loop body for both: fewer registers than two copies
    const int lo = segment == 0 ? walk.prefix_lo : base;
    const int hi = segment == 0 ? walk.prefix_hi : walk.tree_too ? base + n : base;
    for (int t0 = lo; t0 < hi; t0 += kTile) {
      const int tl = min(kTile, hi - t0);
      if (!block_sees_tile(r0, rows, t0, tl, n, base, mask, positions, slot_pos, window)) continue;
      load_tile(kc, t0, tl, kv_dim, kvh, hd, key_tile, ks);
      if (values) load_tile(vc, t0, tl, kv_dim, kvh, hd, value_tile, hd);
      __syncthreads();
      per_tile(t0, tl);
    }
  }
}

// How many of the tree slots 0..k-1 row i sees. One warp, every lane (ballots); the same value in every lane.
__device__ inline int tree_slots_seen_before(int i, int k, int n, const uint8_t* mask) {
  if (!mask) return min(k, i + 1);
  int count = 0;
  for (int k0 = 0; k0 < k; k0 += 32) {
    const int kk = k0 + threadIdx.x % 32;
    count += __popc(__ballot_sync(0xffffffffu, kk < k && tree_slot_seen(i, kk, n, mask)));
  }
  return count;
}

// Whether slots lane and lane + 32 of the tile [t0, t0 + tl) are in chunk z of new row i's context (bits 0 and 1),
// for a visible slot: its rank's chunk for a long row, chunk 0 for a short one. A prefix slot's rank is its index, a
// tree slot's the prefix's length plus the tree slots the row sees before it (those before the tile, then those of
// the tile below this lane's). One warp, every lane (ballots).
__device__ __noinline__ unsigned slots_in_chunk(int t0, int tl, int i, int n, int base, const uint8_t* mask,
                                                bool long_row, int z) {
  if (!long_row) return z == 0 ? 3u : 0u;
  const int lane = threadIdx.x % 32;
  int rank[2] = {t0 + lane, t0 + lane + 32};
  if (t0 + tl > base) {
    const int before = tree_slots_seen_before(i, max(0, t0 - base), n, mask);
    bool seen[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int j = t0 + lane + 32 * u;
      seen[u] = j >= base && lane + 32 * u < tl && tree_slot_seen(i, j - base, n, mask);
    }
    const unsigned b0 = __ballot_sync(0xffffffffu, seen[0]), b1 = __ballot_sync(0xffffffffu, seen[1]);
    const unsigned below = (1u << lane) - 1u;
    if (rank[0] >= base) rank[0] = base + before + __popc(b0 & below);
    if (rank[1] >= base) rank[1] = base + before + __popc(b0) + __popc(b1 & below);
  }
  return (attention_paths::chunk_of_rank(rank[0], true) == z ? 1u : 0u) |
         (attention_paths::chunk_of_rank(rank[1], true) == z ? 2u : 0u);
}

// A warp's queries in the chunks of a long context: for each, whether its row is long (it sums in chunks of
// kLongRowChunkSlots by rank; a short one keeps everything in chunk 0), and the chunk this block sums.
struct ChunkOfBlock {
  bool chunked = false;  // more than one chunk in the call
  int z = 0;
  unsigned long_rows = 0;  // bit a: query a's row is long (one register for the four)
};

// The scaled scores of slots lane and lane + 32 of the tile for a warp's queries (-FLT_MAX where the query's row
// does not see the slot, or sees it in another chunk than the block's): each one thread's sum over the dims in
// order, as attention.cu's single-block path sums. Every lane of the warp calls it (the ranks take ballots).
__device__ inline void tile_scores(const float* key_tile, int ks, const float* qw, int hd, float scale, float soft_cap,
                                   int t0, int tl,
                                   const int* row, const bool* live, int n, int base, const uint8_t* mask,
                                   const int32_t* positions, const int32_t* slot_pos, int window,
                                   const ChunkOfBlock& cb, float (&sc)[kQueriesPerWarp][2]) {
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
  for (int a = 0; a < kQueriesPerWarp; ++a) {
    // warp-uniform; out of line, so that the common case of one chunk keeps its registers
    const unsigned in_chunk =
        cb.chunked && live[a] ? slots_in_chunk(t0, tl, row[a], n, base, mask, cb.long_rows >> a & 1u, cb.z) : 3u;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int t = lane + 32 * u;
      sc[a][u] = live[a] && t < tl && (in_chunk >> u & 1u) &&
                         slot_visible(row[a], t0 + t, n, base, mask, positions, slot_pos, window)
                     ? slot_score(s[a][u], scale, soft_cap)  // as every path rounds it
                     : -FLT_MAX;
    }
  }
}

// Block (x, y, z) of a call over rows [row0, row0 + rows): rows row0 + x * R .. + R - 1 (R = kQueries / GB), query
// heads y * GB .. y * GB + GB - 1 (one KV head), chunk z of gridDim.z (one: the whole context), in tiles of kTile
// slots, twice:
//  pass 1: each query's largest score over the chunk (a maximum: the same whatever the order);
//  pass 2: weights exp(s - max), then lane l adds, slot by slot in order, each weight into the query's sum and
//     weight x value into its dims l, l + 32, ... (every lane the same sum).
// So a query's weights, sum and output are each one thread's sums over its visible slots of the chunk in order:
// with the whole context in one chunk the bits attention.cu's single-block path gives (it sums the same way),
// whatever rows share the block and wherever invisible slots sit between the visible ones (a tree row against its
// own decode). With several chunks (the file's head says which slots a row has in each) the block walks the prefix
// slots of its chunk, all of them in chunk 0 while a row can still be short (base < kSplitAboveSlots), then the tree
// slots when some row can rank them into its chunk. Tiles no row of the block sees are skipped (causal prefill: half
// of them); skipping changes no sum. Keys go to shared memory padded to hd + 1 floats, so the 32 lanes reading 32
// slots at one dim hit 32 banks. Query x of the block is (row x / GB, head x % GB); x >= R * GB (GB not dividing 32)
// or a row past the call's is dead. Partials are indexed by the row's place in the call.
template <int GB>
__global__ void __launch_bounds__(kThreads)
    rows_partial_k(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
                   const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, float soft_cap,
                   int row0, int rows, float* part_o, float* part_ml, float* out) {
  constexpr int R = kQueries / GB;
  extern __shared__ float smem[];
  const int ks = hd + 1;
  float* key_tile = smem;                            // [kTile][hd + 1]
  float* value_tile = key_tile + kTile * ks;         // [kTile][hd]
  float* queries = value_tile + kTile * hd;          // [kQueries][hd]
  float* weights = queries + kQueries * hd;          // [kQueries][kTile]
  const int r0 = row0 + blockIdx.x * R, h0 = blockIdx.y * GB, kvh = h0 / (nh / nkv);
  const int kv_dim = nkv * hd, row_end = row0 + rows;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int rows_here = min(R, row_end - r0);
  const float scale = rsqrtf(float(hd));

  {  // The block's queries (every load before any store, as load_tile does).
    const int vecs_per_query = hd / 4;
    float4 r[kQueryVecs];
#pragma unroll
    for (int u = 0; u < kQueryVecs; ++u) {
      const int idx = threadIdx.x + u * kThreads, x = idx / vecs_per_query, d4 = idx % vecs_per_query;
      const int row = r0 + x / GB;
      r[u] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (x < R * GB && row < row_end)
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
  ChunkOfBlock cb;
  cb.chunked = gridDim.z > 1;
  cb.z = blockIdx.z;
#pragma unroll
  for (int a = 0; a < kQueriesPerWarp; ++a) {
    const int x = warp * kQueriesPerWarp + a;
    row[a] = r0 + x / GB;
    live[a] = x < R * GB && row[a] < row_end;
    m[a] = -FLT_MAX, l[a] = 0.f;  // -FLT_MAX: nothing visible
#pragma unroll
    for (int e = 0; e < kMaxDimsPerLane; ++e) acc[a][e] = 0.f;
    // Long: the row's own decode would see more than kSplitAboveSlots slots (the prefix and its tree slots).
    if (cb.chunked && live[a] && attention_paths::is_long_row(base, tree_slots_seen_before(row[a], n, n, mask)))
      cb.long_rows |= 1u << a;
  }
  const bool warp_live = live[0];  // queries fill warps in order: a warp's first query is live if any is
  const float* qw = queries + warp * kQueriesPerWarp * hd;

  // The slots this block walks (attention_paths.h, chunk_walk).
  const attention_paths::ChunkWalk walk = attention_paths::chunk_walk(blockIdx.z, gridDim.z, base, n);

  // Each tile of those slots that some row of the block sees: its keys (and with `values` its values) into shared
  // memory, then in the warps with live queries `use(tl, scores)`. Both passes walk the tiles this one way.
  auto each_seen_tile = [&](bool values, auto&& use) {
    walk_seen_tiles(walk, r0, rows_here, n, base, mask, positions, slot_pos, window, kc, vc, kv_dim, kvh, hd,
                    key_tile, ks, value_tile, values, [&](int t0, int tl) {
                      if (!warp_live) return;
                      float sc[kQueriesPerWarp][2];
                      tile_scores(key_tile, ks, qw, hd, scale, soft_cap, t0, tl, row, live, n, base, mask, positions,
                                  slot_pos, window, cb, sc);
                      use(tl, sc);
                    });
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
    const int64_t part = (int64_t(row[a] - row0) * nh + h0 + x % GB) * gridDim.z + blockIdx.z;
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

// The row tiles' form for one row: a decode past 1,024 slots, in the chunks rows_partial_k gives that row (the
// slot index is a decode's rank). rows_partial_k would run it on one warp of eight (a block holds 8 rows); here the
// same arithmetic is spread over the block: each score is still one thread's sum over the dims in order, a query's
// maximum a maximum, and each weighted-value sum and the normaliser (summed again by every thread that needs it) one
// thread's, over the chunk's visible slots in order. So the decode of a token and its row in a tree give the same
// bits (the kernel tests hold them to it). Threads: the scores of (query p / kTile, slot p % kTile) for p = t, t +
// 256, ...; the sums of (query x / hd, dim x % hd) for x = t, t + 256, ... (GB x hd <= 1024: at most 4 a thread).
constexpr int kOneRowPairs = attention_paths::kMaxHeadDim * 8 / kThreads;
template <int GB>
__global__ void __launch_bounds__(kThreads)
    one_row_partial_k(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
                      const int32_t* positions, int base, int nh, int nkv, int hd, int window, float soft_cap,
                      float* part_o, float* part_ml) {
  extern __shared__ float smem[];
  __shared__ float m[GB];
  const int ks = hd + 1;
  float* key_tile = smem;                     // [kTile][hd + 1]
  float* value_tile = key_tile + kTile * ks;  // [kTile][hd]
  float* queries = value_tile + kTile * hd;   // [GB][hd]
  float* weights = queries + GB * hd;         // [GB][kTile]: the scores, then the weights
  const int h0 = blockIdx.y * GB, kvh = h0 / (nh / nkv), kv_dim = nkv * hd;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float scale = rsqrtf(float(hd));
  for (int x = threadIdx.x; x < GB * hd; x += kThreads) queries[x] = q[int64_t(h0) * hd + x];  // row 0's GB heads
  if (threadIdx.x < GB) m[threadIdx.x] = -FLT_MAX;
  const bool long_row = attention_paths::is_long_row(base, tree_slot_seen(0, 0, 1, mask) ? 1 : 0);
  const attention_paths::ChunkWalk walk = attention_paths::chunk_walk(blockIdx.z, gridDim.z, base, 1);
  __syncthreads();

  // Each tile of the walk the row sees (rows_partial_k's walk): keys (and with `values` values) into shared memory,
  // every score into `weights`, then use(tl).
  auto each_seen_tile = [&](bool values, auto&& use) {
    walk_seen_tiles(
        walk, 0, 1, 1, base, mask, positions, slot_pos, window, kc, vc, kv_dim, kvh, hd, key_tile, ks, value_tile,
        values, [&](int t0, int tl) {
          for (int p = threadIdx.x; p < GB * kTile; p += kThreads) {
            const int a = p / kTile, t = p % kTile, j = t0 + t;
            float sc = -FLT_MAX;
            // A decode's rank is its slot index (its own slot, base, ranks base: no tree slot before it).
            if (t < tl && attention_paths::chunk_of_rank(j, long_row) == int(blockIdx.z) &&
                slot_visible(0, j, 1, base, mask, positions, slot_pos, window)) {
              float acc = 0.f;
              const float* kj = key_tile + t * ks;
              const float* qa = queries + a * hd;
              for (int d = 0; d < hd; ++d) acc = fmaf(qa[d], kj[d], acc);
              sc = slot_score(acc, scale, soft_cap);
            }
            weights[a * kTile + t] = sc;
          }
          __syncthreads();
          use(tl);
          __syncthreads();  // every thread is done with the tiles and weights before the next tile overwrites them
        });
  };
  // Pass 1: each query's largest visible score over the chunk (warp a reduces query a's tile).
  each_seen_tile(false, [&](int) {
    if (warp < GB) {
      float mx = fmaxf(weights[warp * kTile + lane], weights[warp * kTile + lane + 32]);
      for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      if (lane == 0) m[warp] = fmaxf(m[warp], mx);
    }
  });
  // Pass 2: weights, then each (query, dim) pair's sums in slot order.
  float acc[kOneRowPairs], l[kOneRowPairs];
#pragma unroll
  for (int u = 0; u < kOneRowPairs; ++u) acc[u] = 0.f, l[u] = 0.f;
  each_seen_tile(true, [&](int tl) {
    for (int p = threadIdx.x; p < GB * kTile; p += kThreads) {
      const int a = p / kTile;
      float& w = weights[p];
      w = w == -FLT_MAX ? 0.f : __expf(w - m[a]);
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kOneRowPairs; ++u) {
      const int x = threadIdx.x + u * kThreads;
      if (x >= GB * hd) break;
      const int a = x / hd, d = x % hd;
      const float* wa = weights + a * kTile;
      for (int t = 0; t < tl; ++t) {
        const float w = wa[t];
        if (w == 0.f) continue;  // an unseen slot adds nothing, whatever its value row holds
        l[u] += w;
        acc[u] = fmaf(w, value_tile[t * hd + d], acc[u]);
      }
    }
  });
#pragma unroll
  for (int u = 0; u < kOneRowPairs; ++u) {
    const int x = threadIdx.x + u * kThreads;
    if (x >= GB * hd) break;
    const int a = x / hd, d = x % hd;
    const int64_t part = int64_t(h0 + a) * gridDim.z + blockIdx.z;  // row 0 of the call
    part_o[part * hd + d] = acc[u];
    if (d == 0) part_ml[2 * part] = m[a], part_ml[2 * part + 1] = l[u];
  }
}

template <int GB>
void launch_rows(dim3 grid, cudaStream_t s, const float* q, const float* kc, const float* vc,
                 const int32_t* slot_pos, const uint8_t* mask, const int32_t* positions, int n, int base, int nh,
                 int nkv, int hd, int window, float soft_cap, int row0, int rows, float* part_o, float* part_ml,
                 float* out) {
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
                                                   soft_cap, row0, rows, part_o, part_ml, out);
  CUDA_CHECK(cudaGetLastError());
}

// one_row_partial_k's shared memory: the key and value tiles, its GB queries and their scores (67 KiB at hd 128 and
// groups of 4, where rows_partial_k's 32 queries take 90: three blocks an SM of an H100/H200, not two).
size_t one_row_shared_floats(int gb, int hd) {
  return size_t(kTile) * (hd + 1) + size_t(kTile) * hd + size_t(gb) * hd + size_t(gb) * kTile;
}

template <int GB>
void launch_one_row(dim3 grid, cudaStream_t s, const float* q, const float* kc, const float* vc,
                    const int32_t* slot_pos, const uint8_t* mask, const int32_t* positions, int base, int nh, int nkv,
                    int hd, int window, float soft_cap, float* part_o, float* part_ml) {
  const size_t shmem = sizeof(float) * one_row_shared_floats(GB, hd);
  static const bool opted_in = [] {
    CUDA_CHECK(cudaFuncSetAttribute(one_row_partial_k<GB>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(sizeof(float) * one_row_shared_floats(GB, attention_paths::kMaxHeadDim))));
    return true;
  }();
  (void)opted_in;
  one_row_partial_k<GB><<<grid, kThreads, shmem, s>>>(q, kc, vc, slot_pos, mask, positions, base, nh, nkv, hd, window,
                                                      soft_cap, part_o, part_ml);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

namespace attention_paths {

int row_tile_rows(int nh, int nkv) { return kQueries / heads_per_block(nh, nkv); }

void row_tiles(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
               const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, float soft_cap,
               float* out, cudaStream_t s, AttentionScratch scratch) {
  if (n <= 0) return;  // no rows: nothing to write (a grid of 0 blocks is a launch error)
  if (hd > kMaxHeadDim || hd % 4 != 0)
    throw std::invalid_argument("attention: row tiles need a head_dim that is a multiple of 4 up to " +
                                std::to_string(kMaxHeadDim) + ", not " + std::to_string(hd));
  const int chunks = canonical_chunks(base + n);
  const int gb = heads_per_block(nh, nkv), tile_rows = row_tile_rows(nh, nkv);
  // Rows a call: all of them in one chunk (no partials) or without scratch; else as many as the scratch holds
  // partials for, whole tiles of rows where more than one fits. A row's bits do not depend on its call.
  int per_call = n;
  if (chunks > 1 && scratch.data) {
    const size_t row_floats = split_partials_floats(1, nh, chunks, hd);
    if (scratch.floats < row_floats)
      throw std::logic_error("attention: a row's partials in " + std::to_string(chunks) + " chunks need " +
                             std::to_string(row_floats) + " floats of scratch, the caller's holds " +
                             std::to_string(scratch.floats));
    per_call = int(std::min<size_t>(size_t(n), scratch.floats / row_floats));
    if (per_call > tile_rows) per_call -= per_call % tile_rows;
  }
  for (int row0 = 0; row0 < n; row0 += per_call) {
    const int rows = std::min(per_call, n - row0);
    const ChunkPlan plan = plan_chunks(rows, nh, hd, chunks, scratch, s);
    const dim3 grid((rows + tile_rows - 1) / tile_rows, nh / gb, chunks);
    with_head_group(gb, [&](auto group) {
      if (n == 1 && chunks > 1)  // a decode past one chunk: the same sums over the whole block
        launch_one_row<decltype(group)::value>(grid, s, q, kc, vc, slot_pos, mask, positions, base, nh, nkv, hd,
                                               window, soft_cap, plan.part_o, plan.part_ml);
      else
        launch_rows<decltype(group)::value>(grid, s, q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd,
                                            window, soft_cap, row0, rows, plan.part_o, plan.part_ml, out);
    });
    finish_chunks(plan, rows, nh, hd, out + size_t(row0) * nh * hd, s);
  }
}

}  // namespace attention_paths

}  // namespace specscope::cuda
