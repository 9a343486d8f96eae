// Attention over the KV cache on the GPU (llama_kernels.h, "kernels/attention.cu"): the launcher, which picks one
// of three paths with the same contract (attention_paths.h), and the single-block path for short contexts: one
// block per (new row, query head), the scores of every slot in shared memory, written for clarity first. The
// row-tile path for batches of rows and for every row past 1024 slots is in attention_rows.cu, the split path
// (long contexts with the row tiles off) in attention_split.cu. The CPU reference of all three is
// attention_ref.cpp (the engine's cpu::attention behind the same visibility rule).
#include <algorithm>

#include "kernels/attention_paths.h"
#include "kernels/attention_visibility.cuh"
#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

namespace {

// Scores live in shared memory (base + n floats); an invisible slot's score is -FLT_MAX and its weight 0. Each
// weight's sum into the normaliser and into the output is one thread's, over the visible slots in order, so a
// row's bits depend only on its visible slots' keys and values in order: a tree row gets what its own decode gets
// (attention_rows.cu sums the same way, and the kernel tests hold the two to the same bits).
__global__ void attention_k(const float* q, const float* kc, const float* vc, const int32_t* slot_pos,
                            const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd,
                            int window, float soft_cap, float* out) {
  extern __shared__ float sc[];
  const int i = blockIdx.x, h = blockIdx.y, kvh = h / (nh / nkv);
  const int total = base + n, kv_dim = nkv * hd;
  const float* qi = q + (int64_t(i) * nh + h) * hd;
  const float scale = rsqrtf(float(hd));
  float local_max = -FLT_MAX;
  for (int j = threadIdx.x; j < total; j += blockDim.x) {
    float s = -FLT_MAX;
    if (slot_visible(i, j, n, base, mask, positions, slot_pos, window)) {
      const float* kj = kc + int64_t(j) * kv_dim + int64_t(kvh) * hd;
      float acc = 0.f;
      for (int d = 0; d < hd; ++d) acc = fmaf(qi[d], kj[d], acc);
      s = slot_score(acc, scale, soft_cap);  // every path rounds the score alike
    }
    sc[j] = s;
    local_max = fmaxf(local_max, s);
  }
  const float mx = block_reduce<true>(local_max);  // its barriers also publish sc
  for (int j = threadIdx.x; j < total; j += blockDim.x) sc[j] = sc[j] == -FLT_MAX ? 0.f : __expf(sc[j] - mx);
  __syncthreads();
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.f, sum = 0.f;
    for (int j = 0; j < total; ++j)
      if (sc[j] != 0.f) {
        sum += sc[j];
        acc = fmaf(sc[j], vc[int64_t(j) * kv_dim + int64_t(kvh) * hd + d], acc);
      }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;  // nothing visible: zeros, as the CPU backend gives (not 0 * inf)
    out[(int64_t(i) * nh + h) * hd + d] = acc * inv;
  }
}

}  // namespace

namespace attention_paths {

namespace {
size_t single_block_static_shmem() {  // block_reduce's partial sums
  static const size_t bytes = [] {
    cudaFuncAttributes a{};
    CUDA_CHECK(cudaFuncGetAttributes(&a, attention_k));
    return a.sharedSizeBytes;
  }();
  return bytes;
}
}  // namespace

int single_block_max_slots() {
  int device = 0, optin = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return int((size_t(optin) - single_block_static_shmem()) / sizeof(float));
}

void single_block(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
                  const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, float soft_cap,
                  float* out, cudaStream_t s) {
  if (n <= 0) return;  // no rows: nothing to write (a grid of 0 blocks is a launch error)
  const size_t shmem = sizeof(float) * size_t(base + n);
  // Above the default 48 KiB a launch needs the opt-in, and the limit counts the kernel's static shared memory
  // (block_reduce's partial sums) with the dynamic part.
  if (shmem + single_block_static_shmem() > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(attention_k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shmem)));
  attention_k<<<dim3(n, nh), 128, shmem, s>>>(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window,
                                                   soft_cap, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace attention_paths

void attention(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
               const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, float soft_cap,
               float* out, cudaStream_t s, AttentionScratch scratch, bool row_tiles) {
  const int total = base + n;
  if (hd > attention_paths::kMaxHeadDim)  // wide heads: one path at every context (attention_paths.h says why)
    return attention_paths::single_block(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window, soft_cap,
                                         out, s);
  const bool tiles = row_tiles && hd % 4 == 0;
  // Past kSplitAboveSlots every batch, one row included, takes the row tiles: their chunks follow each row's own
  // visible slots, so a tree row and its decode sum alike (attention_paths.h, canonical_chunks).
  if (tiles && (n >= attention_paths::kRowTilesFromRows || total > attention_paths::kSplitAboveSlots))
    attention_paths::row_tiles(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window, soft_cap, out, s,
                                scratch);
  else if (total > attention_paths::kSplitAboveSlots)  // long context: split it (attention_paths.h says why there)
    attention_paths::split_context(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window, soft_cap,
                                   attention_paths::split_count(n, nh, nkv, total), out, s, scratch);
  else
    attention_paths::single_block(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window, soft_cap, out,
                                  s);
}

// Eight rows' partials at the longest context: a decode and the first row tile of a tree in one call, more rows in
// batches (attention_rows.cu); and never less than the split path's own bound.
size_t attention_scratch_floats(int nh, int hd, int slots) {
  constexpr size_t kRowsAtTheLongestContext = 8;
  return std::max(attention_paths::split_scratch_floats(hd),
                  kRowsAtTheLongestContext *
                      attention_paths::split_partials_floats(1, nh, attention_paths::canonical_chunks(slots), hd));
}

}  // namespace specscope::cuda
