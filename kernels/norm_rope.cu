// RMSNorm and RoPE on the GPU (llama_kernels.h, "kernels/norm_rope.cu"): one block of threads per row. The CPU
// references are in norm_rope_ref.cpp (the engine's cpu::rmsnorm and cpu::rope).
#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

namespace {

__global__ void rmsnorm_k(const float* x, const float* w, float* y, int dim, float eps) {
  const float* xr = x + int64_t(blockIdx.x) * dim;
  float* yr = y + int64_t(blockIdx.x) * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_reduce<false>(ss);
  const float scale = rsqrtf(ss / float(dim) + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = w[i] * (xr[i] * scale);
}

__global__ void rope_k(float* v, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq) {
  const int row = blockIdx.x, half = head_dim / 2;
  const float p = float(positions[row]);
  for (int idx = threadIdx.x; idx < n_heads * half; idx += blockDim.x) {
    const int h = idx / half, i = idx % half;
    float s, c;
    sincosf(p * inv_freq[i], &s, &c);  // the angle in f32 as transformers forms it
    float* base = v + (int64_t(row) * n_heads + h) * head_dim;
    const float a = base[i], b = base[i + half];
    base[i] = a * c - b * s;
    base[i + half] = b * c + a * s;
  }
}

}  // namespace

void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps, cudaStream_t s) {
  rmsnorm_k<<<rows, 256, 0, s>>>(x, w, y, dim, eps);
  CUDA_CHECK(cudaGetLastError());
}
void rope(float* v, int rows, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          cudaStream_t s) {
  rope_k<<<rows, 128, 0, s>>>(v, n_heads, head_dim, positions, inv_freq);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
