// The split-context path of llama_kernels.h's `attention` (attention_paths.h), for long contexts, as
// FlashDecoding does it: the slots are cut into contiguous chunks, one block per (new row, query head, chunk)
// computes its chunk's maximum score m, sum of exponentials l and unnormalised weighted values o with an online
// softmax (tile by tile, so its shared memory does not grow with the context), writes (m, l, o) to scratch, and a
// combine kernel rescales each chunk by exp(m_chunk - m_max) and normalises. Same contract, same visibility rule
// (attention_visibility.cuh) and same CPU reference (attention_ref.cpp) as the single-block path.
#include <algorithm>

#include "kernels/attention_paths.h"
#include "kernels/attention_visibility.cuh"
#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"

namespace specscope::cuda {

namespace {

constexpr int kThreads = 128;  // 4 warps: one slot's dot product per warp at a time
// Slots scored per step of the online softmax: their scores sit in 1 KiB of shared memory, and a chunk is a whole
// number of tiles.
constexpr int kSplitTileSlots = 256;
// How many blocks the launcher aims at: about what an H100 (132 SMs) keeps resident at once with 128-thread
// blocks, so one decode row over a long context still fills the device. A constant rather than a device query so
// that the same inputs give the same chunks, hence the same bits, on every GPU.
constexpr int64_t kTargetBlocks = 2048;

// One block per (row i, head h, chunk c) over slots [c * chunk, min(total, (c + 1) * chunk)). Shared memory:
// the query (hd floats), the running output (hd floats, entry d owned by thread d % blockDim) and one tile's
// scores, then its weights (kSplitTileSlots floats). The running maximum m and sum l are the same in every thread
// (each comes out of block_reduce). With gridDim.z == 1 the block holds the whole context and writes the
// normalised output; otherwise it writes its chunk's (m, l) to part_ml and o to part_o for combine_k.
__global__ void split_partial_k(const float* q, const float* kc, const float* vc, const int32_t* slot_pos,
                                const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd,
                                int window, int chunk, float* part_o, float* part_ml, float* out) {
  extern __shared__ float smem[];
  float* q_s = smem;
  float* o_s = smem + hd;
  float* sc = smem + 2 * hd;
  const int i = blockIdx.x, h = blockIdx.y, c = blockIdx.z, kvh = h / (nh / nkv);
  const int total = base + n, kv_dim = nkv * hd;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int c0 = c * chunk, c1 = min(total, c0 + chunk);
  const float scale = rsqrtf(float(hd));
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    q_s[d] = q[(int64_t(i) * nh + h) * hd + d];
    o_s[d] = 0.f;
  }
  __syncthreads();
  float m = -FLT_MAX, l = 0.f;  // -FLT_MAX: nothing visible yet
  for (int t0 = c0; t0 < c1; t0 += kSplitTileSlots) {
    const int tl = min(kSplitTileSlots, c1 - t0);
    // Scores: a warp per slot, its lanes over the head's dimensions (contiguous, so the key row is read coalesced).
    for (int t = warp; t < tl; t += warps) {
      const int j = t0 + t;
      float s = -FLT_MAX;
      if (slot_visible(i, j, n, base, mask, positions, slot_pos, window)) {  // the same for the whole warp
        const float* kj = kc + int64_t(j) * kv_dim + int64_t(kvh) * hd;
        float acc = 0.f;
        for (int d = lane; d < hd; d += 32) acc += q_s[d] * kj[d];
        for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        s = acc * scale;
      }
      if (lane == 0) sc[t] = s;
    }
    __syncthreads();
    float local_max = -FLT_MAX;
    for (int t = threadIdx.x; t < tl; t += blockDim.x) local_max = fmaxf(local_max, sc[t]);
    const float new_m = fmaxf(m, block_reduce<true>(local_max));  // block_reduce ends with a barrier: sc is read
    if (new_m == -FLT_MAX) continue;  // nothing visible so far (the same in every thread): o and l stay 0
    // Online softmax: what was summed against the old maximum is rescaled to the new one (0 when there was none).
    const float alpha = m == -FLT_MAX ? 0.f : __expf(m - new_m);
    float local_sum = 0.f;
    for (int t = threadIdx.x; t < tl; t += blockDim.x) {
      const float e = sc[t] == -FLT_MAX ? 0.f : __expf(sc[t] - new_m);
      sc[t] = e;
      local_sum += e;
    }
    l = l * alpha + block_reduce<false>(local_sum);  // its barriers also publish the weights in sc
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      float acc = o_s[d] * alpha;
      for (int t = 0; t < tl; ++t)
        if (sc[t] != 0.f) acc += sc[t] * vc[int64_t(t0 + t) * kv_dim + int64_t(kvh) * hd + d];
      o_s[d] = acc;
    }
    m = new_m;
    __syncthreads();  // every thread is done with sc before the next tile's scores overwrite it
  }
  const int64_t row_head = int64_t(i) * nh + h;
  if (gridDim.z == 1) {  // one chunk holds the whole context: normalise here (nothing visible: zeros)
    const float inv = l > 0.f ? 1.f / l : 0.f;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) out[row_head * hd + d] = o_s[d] * inv;
    return;
  }
  const int64_t part = row_head * gridDim.z + c;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) part_o[part * hd + d] = o_s[d];
  if (threadIdx.x == 0) part_ml[2 * part] = m, part_ml[2 * part + 1] = l;
}

// One block per (row, head): out = sum_c w_c o_c / sum_c w_c l_c with w_c = exp(m_c - max_c m_c), over the
// chunks that saw a slot (l_c > 0); zeros when none did. Shared memory: the `splits` weights w_c.
__global__ void combine_k(const float* part_o, const float* part_ml, int nh, int hd, int splits, float* out) {
  extern __shared__ float w[];
  const int64_t row_head = int64_t(blockIdx.x) * nh + blockIdx.y;
  const float* ml = part_ml + row_head * splits * 2;
  float local_max = -FLT_MAX;
  for (int c = threadIdx.x; c < splits; c += blockDim.x)
    if (ml[2 * c + 1] > 0.f) local_max = fmaxf(local_max, ml[2 * c]);
  const float m = block_reduce<true>(local_max);
  float local_sum = 0.f;
  for (int c = threadIdx.x; c < splits; c += blockDim.x) {
    w[c] = ml[2 * c + 1] > 0.f ? __expf(ml[2 * c] - m) : 0.f;
    local_sum += w[c] * ml[2 * c + 1];
  }
  const float l = block_reduce<false>(local_sum);  // its barriers also publish w
  const float inv = l > 0.f ? 1.f / l : 0.f;
  const float* o = part_o + row_head * splits * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.f;
    for (int c = 0; c < splits; ++c)
      if (w[c] != 0.f) acc += w[c] * o[int64_t(c) * hd + d];
    out[row_head * hd + d] = acc * inv;
  }
}

}  // namespace

namespace attention_paths {

// Enough chunks that rows x heads x chunks reaches kTargetBlocks, never more than one per tile. Rows x heads at or
// above it (a tree of 64 rows over 32 heads, a long prefill) give one chunk: no scratch, no combine, and the
// blocks already fill the device. This also bounds the scratch: rows x heads x chunks <= kTargetBlocks whenever
// there is more than one chunk, so at most 2048 x (hd + 2) floats (about 1 MiB at hd 128).
int split_count(int n, int nh, int total_slots) {
  const int64_t tiles = (int64_t(total_slots) + kSplitTileSlots - 1) / kSplitTileSlots;
  const int64_t wanted = std::max<int64_t>(1, kTargetBlocks / std::max<int64_t>(1, int64_t(n) * nh));
  return int(std::max<int64_t>(1, std::min(tiles, wanted)));
}

// Scratch for the chunks' partials comes from the stream-ordered allocator (cudaMallocAsync / cudaFreeAsync on
// `s`): no host synchronisation, no state kept between calls (so concurrent streams and devices need no care),
// the pool reuses the memory from one call to the next, and both calls can be captured into a CUDA graph. A cached
// growable buffer would need an owner per stream and device for at most ~1 MiB (split_count bounds it).
void split_context(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
                   const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, int splits,
                   float* out, cudaStream_t s) {
  if (n <= 0) return;  // no rows: nothing to write (a grid of 0 blocks is a launch error)
  const int total = base + n;
  const int tiles = (total + kSplitTileSlots - 1) / kSplitTileSlots;
  const int chunk_tiles = (tiles + std::max(1, splits) - 1) / std::max(1, splits);
  const int chunks = (tiles + chunk_tiles - 1) / chunk_tiles;  // no empty chunk (3 splits of 4 tiles: 2 + 2)
  const int chunk = chunk_tiles * kSplitTileSlots;
  const size_t shmem = sizeof(float) * (size_t(2) * hd + kSplitTileSlots);
  const dim3 grid(n, nh, chunks);
  if (chunks == 1) {
    split_partial_k<<<grid, kThreads, shmem, s>>>(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window,
                                                  chunk, nullptr, nullptr, out);
    CUDA_CHECK(cudaGetLastError());
    return;
  }
  const size_t parts = size_t(n) * nh * chunks;
  float* scratch = nullptr;  // part_o [n, nh, chunks, hd], then part_ml [n, nh, chunks, 2]
  CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch), sizeof(float) * parts * (hd + 2), s));
  float* part_o = scratch;
  float* part_ml = scratch + parts * hd;
  split_partial_k<<<grid, kThreads, shmem, s>>>(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window,
                                                chunk, part_o, part_ml, out);
  CUDA_CHECK(cudaGetLastError());
  combine_k<<<dim3(n, nh), kThreads, sizeof(float) * chunks, s>>>(part_o, part_ml, nh, hd, chunks, out);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaFreeAsync(scratch, s));
}

}  // namespace attention_paths

}  // namespace specscope::cuda
