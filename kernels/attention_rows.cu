// The row-tile path of llama_kernels.h's `attention` (attention_paths.h), for batches of several new rows: tree
// verification (4-128 rows) and prefill. One block per (tile of rows, group of query heads sharing a KV head,
// chunk of the context) loads each tile of 64 key and value rows into shared memory once and uses it for every
// (row, head) query of the block, 32 of them: 8 rows of Llama's 4-head groups. The split path (attention_split.cu)
// runs one block per row, so a tree of 64 rows read every key and value row 64 times; on the H200 attention took
// 6.4 of a 17.9 ms 64-row Llama-3.1-8B step at 1k positions and 309 of 347 ms of a 1,024-token prefill
// (bench/results/gpu_h200_2026-12-04b, profile_8b). Same contract, visibility rule (attention_visibility.cuh),
// online softmax, partials layout and combine (FlashDecoding) as the split path; CPU reference attention_ref.cpp.
//
// Each query's arithmetic is its own: its scores are one thread's sums over the head's dims in order, its tile
// maxima and sums one warp's reductions over the tile's 64 slots, its output one lane's sums over the slots in
// order. Which other rows share its block changes nothing in its bits; only the chunks (row_tile_count) do.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

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

// Block (x, y, z): rows x * R .. x * R + R - 1 (R = kQueries / GB), query heads y * GB .. y * GB + GB - 1 (one KV
// head), slots [z * chunk, min(total, (z + 1) * chunk)), a tile of kTile slots at a time:
//  0. skip the tile when none of the block's rows sees any of its slots (causal prefill: half the tiles); skipping
//     gives the very bits of processing it (every weight 0, every maximum unchanged, so alpha exactly 1, or 0
//     on an accumulator still 0);
//  1. the tile's key and value rows into shared memory (keys padded to hd + 1 floats, so that the 32 lanes reading
//     32 different slots at one dim hit 32 banks);
//  2. scores: lane l of warp w computes its 4 queries' dot products with slots l and l + 32, dims in order;
//  3. per query, the tile's maximum and sum by warp shuffles, rescaling the running (m, l, acc) as the split path
//     does; the weights go to shared memory for the warp's own use;
//  4. values: lane l adds weight x value for its dims, slot by slot in order.
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

  for (int idx = threadIdx.x; idx < kQueries * hd; idx += kThreads) {
    const int x = idx / hd, d = idx % hd, row = r0 + x / GB;
    queries[idx] = x < R * GB && row < n ? q[(int64_t(row) * nh + h0 + x % GB) * hd + d] : 0.f;
  }
  int row[kQueriesPerWarp];
  bool live[kQueriesPerWarp];  // warp-uniform
  float m[kQueriesPerWarp], l[kQueriesPerWarp], acc[kQueriesPerWarp][kMaxDimsPerLane];
#pragma unroll
  for (int a = 0; a < kQueriesPerWarp; ++a) {
    const int x = warp * kQueriesPerWarp + a;
    row[a] = r0 + x / GB;
    live[a] = x < R * GB && row[a] < n;
    m[a] = -FLT_MAX, l[a] = 0.f;  // -FLT_MAX: nothing visible yet
#pragma unroll
    for (int e = 0; e < kMaxDimsPerLane; ++e) acc[a][e] = 0.f;
  }
  const bool warp_live = live[0];  // queries fill warps in order: a warp's first query is live if any is

  for (int t0 = c0; t0 < c1; t0 += kTile) {
    const int tl = min(kTile, c1 - t0);
    // 0. Does any row of the block see any slot of the tile?
    bool seen = false;
    for (int p = threadIdx.x; p < rows_here * tl && !seen; p += kThreads)
      seen = slot_visible(r0 + p / tl, t0 + p % tl, n, base, mask, positions, slot_pos, window);
    if (!__syncthreads_or(seen)) continue;  // block-uniform; its barrier also orders the previous tile's reads
    // 1. The tile's keys and values (zeros past the chunk's end).
    for (int idx = threadIdx.x; idx < kTile * hd; idx += kThreads) {
      const int t = idx / hd, d = idx % hd;
      const int64_t at = int64_t(t0 + t) * kv_dim + int64_t(kvh) * hd + d;
      key_tile[t * ks + d] = t < tl ? kc[at] : 0.f;
      value_tile[t * hd + d] = t < tl ? vc[at] : 0.f;
    }
    __syncthreads();
    if (warp_live) {
      // 2. Scores of slots lane and lane + 32 for the warp's queries.
      float s[kQueriesPerWarp][2];
#pragma unroll
      for (int a = 0; a < kQueriesPerWarp; ++a) s[a][0] = s[a][1] = 0.f;
      const float* k0 = key_tile + lane * ks;
      const float* k1 = key_tile + (lane + 32) * ks;
      const float* qw = queries + warp * kQueriesPerWarp * hd;
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
      // 3. Per query: the tile's maximum, the new running maximum, the weights and their sum.
#pragma unroll
      for (int a = 0; a < kQueriesPerWarp; ++a) {
        if (!live[a]) continue;
        float sc[2];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int t = lane + 32 * u;
          sc[u] = t < tl && slot_visible(row[a], t0 + t, n, base, mask, positions, slot_pos, window) ? s[a][u] * scale
                                                                                                     : -FLT_MAX;
        }
        float mx = fmaxf(sc[0], sc[1]);
        for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        const float new_m = fmaxf(m[a], mx);
        // What was summed against the old maximum is rescaled to the new one (0 when there was none; exactly 1
        // when it did not grow, so that a tile the row does not see leaves its bits as a skipped tile does).
        const float alpha = m[a] == -FLT_MAX ? 0.f : new_m == m[a] ? 1.f : __expf(m[a] - new_m);
        float w[2], sum = 0.f;
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          w[u] = sc[u] == -FLT_MAX ? 0.f : __expf(sc[u] - new_m);
          sum += w[u];
        }
        for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        l[a] = l[a] * alpha + sum;
        m[a] = new_m;
#pragma unroll
        for (int e = 0; e < kMaxDimsPerLane; ++e) acc[a][e] *= alpha;
        float* wa = weights + (warp * kQueriesPerWarp + a) * kTile;
        wa[lane] = w[0];
        wa[lane + 32] = w[1];
      }
      __syncwarp();
      // 4. Weighted values, slot by slot.
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
#pragma unroll
          for (int e = 0; e < kMaxDimsPerLane; ++e) acc[a][e] = fmaf(w, vr[e], acc[a][e]);
        }
      }
    }
    __syncthreads();  // every warp is done with the tile before the next one overwrites it
  }

#pragma unroll
  for (int a = 0; a < kQueriesPerWarp; ++a) {
    if (!live[a]) continue;
    const int x = warp * kQueriesPerWarp + a;
    const int64_t row_head = int64_t(row[a]) * nh + h0 + x % GB;
    const int64_t part = row_head * gridDim.z + c;
#pragma unroll
    for (int e = 0; e < kMaxDimsPerLane; ++e) {
      const int d = lane + 32 * e;
      if (d >= hd) continue;
      if (gridDim.z == 1)  // one chunk holds the whole context: normalise here (nothing visible: zeros)
        out[row_head * hd + d] = l[a] > 0.f ? acc[a][e] / l[a] : 0.f;
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
  const int gb = heads_per_block(nh, nkv);
  const int64_t tiles = (int64_t(total_slots) + kTile - 1) / kTile;
  const int64_t blocks = (int64_t(n) + kQueries / gb - 1) / (kQueries / gb) * (nh / gb);
  const int64_t wanted = std::max<int64_t>(1, kRowTargetBlocks / std::max<int64_t>(1, blocks));
  return int(std::max<int64_t>(1, std::min(tiles, wanted)));
}

void row_tiles(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
               const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, int splits, float* out,
               cudaStream_t s, float* given_scratch, size_t given_floats) {
  if (n <= 0) return;  // no rows: nothing to write (a grid of 0 blocks is a launch error)
  if (hd > kMaxHeadDim) throw std::invalid_argument("attention: head_dim above " + std::to_string(kMaxHeadDim));
  const int total = base + n;
  const int tiles = (total + kTile - 1) / kTile;
  const int chunk_tiles = (tiles + std::max(1, splits) - 1) / std::max(1, splits);
  const int chunks = (tiles + chunk_tiles - 1) / chunk_tiles;  // no empty chunk
  const int chunk = chunk_tiles * kTile;
  const int gb = heads_per_block(nh, nkv), rows = kQueries / gb;
  const dim3 grid((n + rows - 1) / rows, nh / gb, chunks);
  float* scratch = nullptr;  // part_o [n, nh, chunks, hd], then part_ml [n, nh, chunks, 2]
  const size_t parts = size_t(n) * nh * chunks, need = split_partials_floats(n, nh, chunks, hd);
  if (chunks > 1 && given_scratch && given_floats < need)
    throw std::logic_error("attention: " + std::to_string(chunks) + " chunks need " + std::to_string(need) +
                           " floats of scratch, the caller's holds " + std::to_string(given_floats));
  const bool own = chunks > 1 && !given_scratch;
  if (chunks > 1) scratch = given_scratch;
  if (own) CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch), sizeof(float) * need, s));
  float* part_o = scratch;
  float* part_ml = scratch ? scratch + parts * hd : nullptr;
  auto launch = [&](auto group) {
    launch_rows<decltype(group)::value>(grid, s, q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window,
                                        chunk, part_o, part_ml, out);
  };
  switch (gb) {
    case 1: launch(std::integral_constant<int, 1>{}); break;
    case 2: launch(std::integral_constant<int, 2>{}); break;
    case 3: launch(std::integral_constant<int, 3>{}); break;
    case 4: launch(std::integral_constant<int, 4>{}); break;
    case 5: launch(std::integral_constant<int, 5>{}); break;
    case 6: launch(std::integral_constant<int, 6>{}); break;
    case 7: launch(std::integral_constant<int, 7>{}); break;
    default: launch(std::integral_constant<int, 8>{}); break;
  }
  if (chunks > 1) combine_chunks(part_o, part_ml, n, nh, hd, chunks, out, s);
  if (own) CUDA_CHECK(cudaFreeAsync(scratch, s));
}

}  // namespace attention_paths

}  // namespace specscope::cuda
