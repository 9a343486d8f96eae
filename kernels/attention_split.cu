// The split-context path of llama_kernels.h's `attention` (attention_paths.h), for long contexts, as
// FlashDecoding does it: the slots are cut into contiguous chunks, one block per (new row, group of query heads
// sharing a KV head, chunk) computes its chunk's maximum score m, sum of exponentials l and unnormalised weighted
// values o per head with an online softmax (tile by tile, so its shared memory does not grow with the context),
// writes (m, l, o) to scratch, and a combine kernel rescales each chunk by exp(m_chunk - m_max) and normalises.
// Same contract, same visibility rule (attention_visibility.cuh) and same CPU reference (attention_ref.cpp) as the
// single-block path.
//
// Why it is shaped so (bench/results/gpu_h200_2026-11-28b, SPECSCOPE_CUDA_PROFILE): the first version ran one
// block per query head whose threads walked the chunk's slots one after another (a dot product per warp, then one
// value row per step), so each step waited on one load from L2: attention took 5.3 of a 12.7 ms Llama-3.1-8B
// decode step at 1k positions and 35 of 51 ms with 64 tree rows. Here each key and value row is loaded once for
// all the heads of its KV head, and each warp has its 8 rows of a tile in flight before it uses any.
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
// Slots per step of the online softmax: 8 per warp, each warp's 8 key (then value) rows loaded before any is used.
constexpr int kSplitTileSlots = 64;
constexpr int kSlotsPerWarp = kSplitTileSlots / kWarps;
constexpr int kMaxDimsPerLane = 4;  // head_dim <= 128: lane l holds dims l, l + 32, l + 64, l + 96
constexpr int kMaxGroup = 8;        // query heads per block
// How many blocks the launcher aims at: a few per SM of an H100/H200 (132 SMs) with 256-thread blocks, so one
// decode row over a long context still fills the device. A constant rather than a device query so that the same
// inputs give the same chunks, hence the same bits, on every GPU.
constexpr int64_t kTargetBlocks = 1024;

// One block per (row i, group of GB query heads of one KV head, chunk c) over slots [c * chunk, min(total,
// (c + 1) * chunk)), a tile of kSplitTileSlots at a time:
//  1. scores: warp w takes slots w, w + 8, ...; its lanes hold the GB queries' dims l + 32e in registers, load
//     the 8 key rows (coalesced) first, then reduce each of GB dot products across the warp;
//  2. per head, the tile's maximum and (after exponentiating) its sum, each reduced by one warp;
//  3. values: warp w again takes slots w, w + 8, ..., loads its 8 value rows, and adds weight x value into its own
//     accumulators (GB x dims-per-lane registers), rescaled by exp(m_old - m_new) when a head's maximum grows.
// At the end the 8 warps' accumulators are added in warp order through shared memory. The running maximum m and
// sum l of each head are the same in every thread. With gridDim.z == 1 the block holds the whole context and
// writes the normalised output; otherwise each head's (m, l) goes to part_ml and o to part_o for combine_k.
// Shared memory: scores/weights [GB][kSplitTileSlots], per head the tile's max then (reused) its sum [GB], and the
// warps' accumulators [kWarps][GB][hd] for the final sum.
template <int GB>
__global__ void __launch_bounds__(kThreads)
    split_partial_k(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
                    const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, float soft_cap,
                    int chunk, float* part_o, float* part_ml, float* out) {
  extern __shared__ float smem[];
  float* sc = smem;                            // [GB][kSplitTileSlots]
  float* tile_stat = sc + GB * kSplitTileSlots;  // [GB]: the tile's max, then its sum
  float* red = tile_stat + GB;                 // [kWarps][GB][hd]
  const int i = blockIdx.x, h0 = blockIdx.y * GB, c = blockIdx.z, kvh = h0 / (nh / nkv);
  const int total = base + n, kv_dim = nkv * hd;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c0 = c * chunk, c1 = min(total, c0 + chunk);
  const float scale = rsqrtf(float(hd));
  const float* kbase = kc + int64_t(kvh) * hd;
  const float* vbase = vc + int64_t(kvh) * hd;

  float qr[GB][kMaxDimsPerLane], acc[GB][kMaxDimsPerLane], m[GB], l[GB];
#pragma unroll
  for (int g = 0; g < GB; ++g) {
    m[g] = -FLT_MAX, l[g] = 0.f;  // -FLT_MAX: nothing visible yet
#pragma unroll
    for (int e = 0; e < kMaxDimsPerLane; ++e) {
      const int d = lane + 32 * e;
      qr[g][e] = d < hd ? q[(int64_t(i) * nh + h0 + g) * hd + d] : 0.f;
      acc[g][e] = 0.f;
    }
  }

  for (int t0 = c0; t0 < c1; t0 += kSplitTileSlots) {
    const int tl = min(kSplitTileSlots, c1 - t0);
    // 1. Scores of this warp's slots (-FLT_MAX where the row does not see the slot).
    bool seen[kSlotsPerWarp];  // kept for step 3: a slot the row does not see has no value row to read
    {
      float kr[kSlotsPerWarp][kMaxDimsPerLane];
#pragma unroll
      for (int u = 0; u < kSlotsPerWarp; ++u) {
        const int t = warp + kWarps * u, j = t0 + t;
        seen[u] = t < tl && slot_visible(i, j, n, base, mask, positions, slot_pos, window);  // warp-uniform
#pragma unroll
        for (int e = 0; e < kMaxDimsPerLane; ++e) {
          const int d = lane + 32 * e;
          kr[u][e] = seen[u] && d < hd ? kbase[int64_t(j) * kv_dim + d] : 0.f;
        }
      }
#pragma unroll
      for (int u = 0; u < kSlotsPerWarp; ++u) {
        const int t = warp + kWarps * u;
#pragma unroll
        for (int g = 0; g < GB; ++g) {
          float s = 0.f;
#pragma unroll
          for (int e = 0; e < kMaxDimsPerLane; ++e) s = fmaf(qr[g][e], kr[u][e], s);
          for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
          if (lane == 0 && t < kSplitTileSlots) sc[g * kSplitTileSlots + t] = seen[u] ? slot_score(s, scale, soft_cap) : -FLT_MAX;
        }
      }
    }
    __syncthreads();
    // 2. Per head: the tile's maximum, the new running maximum, the weights and their sum.
    if (warp < GB) {
      float mx = -FLT_MAX;
      for (int t = lane; t < tl; t += 32) mx = fmaxf(mx, sc[warp * kSplitTileSlots + t]);
      for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      if (lane == 0) tile_stat[warp] = mx;
    }
    __syncthreads();
    float alpha[GB], new_m[GB];
#pragma unroll
    for (int g = 0; g < GB; ++g) {
      new_m[g] = fmaxf(m[g], tile_stat[g]);
      // What was summed against the old maximum is rescaled to the new one (0 when there was none).
      alpha[g] = m[g] == -FLT_MAX ? 0.f : __expf(m[g] - new_m[g]);
    }
    __syncthreads();  // every thread has read tile_stat before it is reused for the sums
#pragma unroll
    for (int g = 0; g < GB; ++g)
      if (warp == g) {  // (a loop over g, not new_m[warp], keeps new_m in registers)
        float sum = 0.f;
        for (int t = lane; t < tl; t += 32) {
          float& w = sc[g * kSplitTileSlots + t];
          w = w == -FLT_MAX ? 0.f : __expf(w - new_m[g]);
          sum += w;
        }
        for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (lane == 0) tile_stat[g] = sum;
      }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < GB; ++g) {
      l[g] = l[g] * alpha[g] + tile_stat[g];
      m[g] = new_m[g];
#pragma unroll
      for (int e = 0; e < kMaxDimsPerLane; ++e) acc[g][e] *= alpha[g];
    }
    // 3. Weighted values of this warp's slots.
    {
      float vr[kSlotsPerWarp][kMaxDimsPerLane];
#pragma unroll
      for (int u = 0; u < kSlotsPerWarp; ++u) {
        const int t = warp + kWarps * u, j = t0 + t;
#pragma unroll
        for (int e = 0; e < kMaxDimsPerLane; ++e) {
          const int d = lane + 32 * e;
          vr[u][e] = seen[u] && d < hd ? vbase[int64_t(j) * kv_dim + d] : 0.f;  // seen[u] implies t < tl
        }
      }
#pragma unroll
      for (int u = 0; u < kSlotsPerWarp; ++u) {
        const int t = warp + kWarps * u;
        if (t >= tl) continue;
#pragma unroll
        for (int g = 0; g < GB; ++g) {
          const float w = sc[g * kSplitTileSlots + t];
          if (w == 0.f) continue;  // an unseen slot adds nothing, whatever its value row holds
#pragma unroll
          for (int e = 0; e < kMaxDimsPerLane; ++e) acc[g][e] = fmaf(w, vr[u][e], acc[g][e]);
        }
      }
    }
    __syncthreads();  // every warp is done with sc and tile_stat before the next tile overwrites them
  }

  // The warps' accumulators, added in warp order.
#pragma unroll
  for (int g = 0; g < GB; ++g)
#pragma unroll
    for (int e = 0; e < kMaxDimsPerLane; ++e) {
      const int d = lane + 32 * e;
      if (d < hd) red[(warp * GB + g) * hd + d] = acc[g][e];
    }
  __syncthreads();
  for (int x = threadIdx.x; x < GB * hd; x += kThreads) {
    const int g = x / hd, d = x % hd;
    float o = 0.f;
    for (int w = 0; w < kWarps; ++w) o += red[(w * GB + g) * hd + d];
    const int64_t row_head = int64_t(i) * nh + h0 + g;
    if (gridDim.z == 1) {  // one chunk holds the whole context: normalise here (nothing visible: zeros)
      out[row_head * hd + d] = l[g] > 0.f ? o / l[g] : 0.f;
    } else {
      const int64_t part = row_head * gridDim.z + c;
      part_o[part * hd + d] = o;
      if (d == 0) part_ml[2 * part] = m[g], part_ml[2 * part + 1] = l[g];
    }
  }
}

// One block per (row, head): out = sum_c w_c o_c / sum_c w_c l_c with w_c = exp(m_c - max_c m_c), over the
// chunks that saw a slot (l_c > 0); zeros when none did. Both sums are folded chunk by chunk in order by one thread
// each (every thread the same normaliser), the first term a product: the bits depend only on the sequence of chunks
// that saw a slot, not on how many empty ones the call had, and one such chunk gives exactly o / l (w = 1), the
// bits of a call of one chunk (finish_chunks in attention_paths.h). Shared memory: the `chunks` weights w_c.
__global__ void combine_k(const float* part_o, const float* part_ml, int nh, int hd, int chunks, float* out) {
  extern __shared__ float w[];
  const int64_t row_head = int64_t(blockIdx.x) * nh + blockIdx.y;
  const float* ml = part_ml + row_head * chunks * 2;
  float local_max = -FLT_MAX;
  for (int c = threadIdx.x; c < chunks; c += blockDim.x)
    if (ml[2 * c + 1] > 0.f) local_max = fmaxf(local_max, ml[2 * c]);
  const float m = block_reduce<true>(local_max);
  for (int c = threadIdx.x; c < chunks; c += blockDim.x)
    w[c] = ml[2 * c + 1] > 0.f ? (ml[2 * c] == m ? 1.f : __expf(ml[2 * c] - m)) : 0.f;
  __syncthreads();
  float l = 0.f;
  bool first = true;
  for (int c = 0; c < chunks; ++c)
    if (w[c] != 0.f) {
      l = first ? w[c] * ml[2 * c + 1] : fmaf(w[c], ml[2 * c + 1], l);
      first = false;
    }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  const float* o = part_o + row_head * chunks * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.f;
    first = true;
    for (int c = 0; c < chunks; ++c)
      if (w[c] != 0.f) {
        const float oc = o[int64_t(c) * hd + d];
        acc = first ? w[c] * oc : fmaf(w[c], oc, acc);
        first = false;
      }
    out[row_head * hd + d] = acc * inv;
  }
}

}  // namespace

namespace attention_paths {

// All G = nh / nkv query heads of a KV head when G <= kMaxGroup, else the largest divisor of G that is (so every
// block's heads share one KV head). Each key and value row a block loads is used by all of them: grouped-query
// attention's whole point, which a block per query head threw away.
int heads_per_block(int nh, int nkv) {
  const int g = nh / nkv;
  for (int b = std::min(g, kMaxGroup); b > 1; --b)
    if (g % b == 0) return b;
  return 1;
}

// Enough chunks that rows x head groups x chunks reaches kTargetBlocks, never more than one per tile. Rows x head
// groups at or above it (a long prefill) give one chunk: no scratch, no combine, and the blocks already fill the
// device. This also bounds the scratch: rows x heads x chunks <= kTargetBlocks x kMaxGroup whenever there is more
// than one chunk, so at most 8192 x (hd + 2) floats (about 4 MiB at hd 128).
int split_count(int n, int nh, int nkv, int total_slots) {
  const int64_t tiles = (int64_t(total_slots) + kSplitTileSlots - 1) / kSplitTileSlots;
  const int64_t groups = int64_t(n) * (nh / heads_per_block(nh, nkv));
  const int64_t wanted = std::max<int64_t>(1, kTargetBlocks / std::max<int64_t>(1, groups));
  return int(std::max<int64_t>(1, std::min(tiles, wanted)));
}

namespace {

template <int GB>
void launch_partial(dim3 grid, cudaStream_t s, const float* q, const float* kc, const float* vc,
                    const int32_t* slot_pos, const uint8_t* mask, const int32_t* positions, int n, int base, int nh,
                    int nkv, int hd, int window, float soft_cap, int chunk, float* part_o, float* part_ml,
                    float* out) {
  const size_t shmem = sizeof(float) * (size_t(GB) * kSplitTileSlots + GB + size_t(kWarps) * GB * hd);
  split_partial_k<GB><<<grid, kThreads, shmem, s>>>(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd,
                                                    window, soft_cap, chunk, part_o, part_ml, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

// The chunks' partials go to the caller's scratch (CudaContext owns one of attention_scratch_floats, at least
// split_scratch_floats(hd) floats: 4.3 MB at hd 128), else to memory from the stream-ordered allocator
// (cudaMallocAsync / cudaFreeAsync on `s`: no host synchronisation, no state kept between calls). Captured into a CUDA graph, such an allocation becomes a node whose
// address is fixed at capture, a different one each capture, and updating an instantiated graph from a later
// capture cannot carry it over; the pool also hands its memory back at each synchronisation (release threshold 0),
// so every forward mapped it again. Hence the caller's buffer on every path CudaContext runs.
size_t split_scratch_floats(int hd) {
  // split_count gives rows x heads x chunks <= kTargetBlocks x kMaxGroup whenever there is more than one chunk (with
  // one, nothing goes through scratch).
  return size_t(kTargetBlocks) * size_t(kMaxGroup) * (size_t(hd) + 2);
}

ChunkPlan plan_chunks(int n, int nh, int hd, int chunks, AttentionScratch scratch, cudaStream_t s) {
  ChunkPlan p;
  p.chunks = chunks;
  if (chunks == 1) return p;
  const size_t parts = size_t(n) * nh * chunks, need = split_partials_floats(n, nh, chunks, hd);
  if (scratch.data && scratch.floats < need)
    throw std::logic_error("attention: " + std::to_string(chunks) + " chunks need " + std::to_string(need) +
                           " floats of scratch, the caller's holds " + std::to_string(scratch.floats));
  p.own = !scratch.data;
  p.part_o = scratch.data;
  if (p.own) CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&p.part_o), sizeof(float) * need, s));
  p.part_ml = p.part_o + parts * hd;
  return p;
}

void finish_chunks(const ChunkPlan& p, int n, int nh, int hd, float* out, cudaStream_t s) {
  if (p.chunks == 1) return;
  combine_k<<<dim3(n, nh), kThreads, sizeof(float) * p.chunks, s>>>(p.part_o, p.part_ml, nh, hd, p.chunks, out);
  CUDA_CHECK(cudaGetLastError());
  if (p.own) CUDA_CHECK(cudaFreeAsync(p.part_o, s));
}

void split_context(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
                   const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, float soft_cap,
                   int splits, float* out, cudaStream_t s, AttentionScratch scratch) {
  if (n <= 0) return;  // no rows: nothing to write (a grid of 0 blocks is a launch error)
  if (hd > kMaxHeadDim) throw std::invalid_argument("attention: head_dim above " + std::to_string(kMaxHeadDim));
  // The context's tiles cut into at most `splits` chunks of whole tiles, none empty (3 splits of 4 tiles: 2 + 2).
  const int tiles = (base + n + kSplitTileSlots - 1) / kSplitTileSlots;
  const int chunk_tiles = (tiles + std::max(1, splits) - 1) / std::max(1, splits);
  const ChunkPlan plan = plan_chunks(n, nh, hd, (tiles + chunk_tiles - 1) / chunk_tiles, scratch, s);
  const int gb = heads_per_block(nh, nkv);
  const dim3 grid(n, nh / gb, plan.chunks);
  with_head_group(gb, [&](auto group) {
    launch_partial<decltype(group)::value>(grid, s, q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd,
                                           window, soft_cap, chunk_tiles * kSplitTileSlots, plan.part_o,
                                           plan.part_ml, out);
  });
  finish_chunks(plan, n, nh, hd, out, s);
}

}  // namespace attention_paths

}  // namespace specscope::cuda
