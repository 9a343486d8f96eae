#pragma once
// Device helpers shared by the kernel files (attention.cu, attention_split.cu, norm_rope.cu, dequant.cu, elementwise.cu,
// experts.cu). Each .cu
// includes this once; everything here has internal linkage, so the files stay independent translation units.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>

#include "kernels/wtype.h"

namespace specscope::cuda {
namespace {

// Element i of a dense (f32, f16 or bf16) weight array, widened to f32.
__device__ __forceinline__ float load_w(const void* p, WType t, int64_t i) {
  switch (t) {
    case WType::F16: return __half2float(static_cast<const __half*>(p)[i]);
    case WType::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

// Sum (or max) over a block of blockDim.x threads (a multiple of 32, at most 1024); every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = threadIdx.x < warps ? partial[threadIdx.x] : (kMax ? -FLT_MAX : 0.f);
  if (warp == 0)
    for (int o = 16; o > 0; o /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, v, o);
      v = kMax ? fmaxf(v, other) : v + other;
    }
  if (threadIdx.x == 0) partial[0] = v;
  __syncthreads();
  v = partial[0];
  __syncthreads();  // partial[] is reused by the next reduction
  return v;
}

// out[i] = v rounded to nearest even in the 16-bit type t (F16, else BF16): to_half's conversion, also used by the
// kernels that write a product's 16-bit input beside their f32 output.
__device__ __forceinline__ void store_half(void* out, int64_t i, float v, WType t) {
  if (t == WType::F16)
    static_cast<__half*>(out)[i] = __float2half_rn(v);
  else
    static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(v);
}

// Blocks for a grid-stride loop over n elements: enough to cover n, capped at 65535 (the loop does the rest).
inline int grid_for(int64_t n, int block) {
  const int64_t blocks = (n + block - 1) / block;
  return int(blocks < 65535 ? blocks : 65535);
}

}  // namespace
}  // namespace specscope::cuda
