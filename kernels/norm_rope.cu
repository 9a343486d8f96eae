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

// x += h, then y = rmsnorm(x): rmsnorm_k's arithmetic in the same order (each thread sums the squares of the same
// elements, now the sums it has just written), so y and x are bit for bit what add() then rmsnorm() give. Each element
// is read and written by one thread only, and y is written after the reduction's barrier: y may alias h or x.
// y16 (not null): y also in the 16-bit type t, as to_half() would make it for the products that read it.
__global__ void add_rmsnorm_k(const float* h, float* x, const float* w, float* y, int dim, float eps, void* y16,
                              WType t) {
  const float* hr = h + int64_t(blockIdx.x) * dim;
  float* xr = x + int64_t(blockIdx.x) * dim;
  float* yr = y + int64_t(blockIdx.x) * dim;
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = xr[i] + hr[i];
    xr[i] = v;
    ss += v * v;
  }
  ss = block_reduce<false>(ss);
  const float scale = rsqrtf(ss / float(dim) + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    const float r = w[i] * (xr[i] * scale);
    yr[i] = r;
    if (y16) store_half(y16, int64_t(blockIdx.x) * dim + i, r, t);
  }
}

// One rotated pair (i, i + half) of one head of a row at position p.
__device__ __forceinline__ void rope_pair(float* head, int i, int half, float p, const float* inv_freq) {
  float s, c;
  sincosf(p * inv_freq[i], &s, &c);  // the angle in f32 as transformers forms it
  const float a = head[i], b = head[i + half];
  head[i] = a * c - b * s;
  head[i + half] = b * c + a * s;
}

__global__ void rope_k(float* v, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq) {
  const int row = blockIdx.x, half = head_dim / 2;
  const float p = float(positions[row]);
  for (int idx = threadIdx.x; idx < n_heads * half; idx += blockDim.x)
    rope_pair(v + (int64_t(row) * n_heads + idx / half) * head_dim, idx % half, half, p, inv_freq);
}

// rope_k over a row's query heads and then its key heads, in one launch (k's rows may sit in the KV cache).
__global__ void rope_qk_k(float* q, float* k, int nh, int nkv, int head_dim, const int32_t* positions,
                          const float* inv_freq) {
  const int row = blockIdx.x, half = head_dim / 2;
  const float p = float(positions[row]);
  for (int idx = threadIdx.x; idx < (nh + nkv) * half; idx += blockDim.x) {
    const int h = idx / half;
    float* head = h < nh ? q + (int64_t(row) * nh + h) * head_dim : k + (int64_t(row) * nkv + (h - nh)) * head_dim;
    rope_pair(head, idx % half, half, p, inv_freq);
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
void add_rmsnorm(const float* h, float* x, const float* w, float* y, int rows, int dim, float eps, cudaStream_t s,
                 void* y16, WType t16) {
  add_rmsnorm_k<<<rows, 256, 0, s>>>(h, x, w, y, dim, eps, y16, t16);
  CUDA_CHECK(cudaGetLastError());
}
void rope_qk(float* q, float* k, int rows, int nh, int nkv, int head_dim, const int32_t* positions,
             const float* inv_freq, cudaStream_t s) {
  rope_qk_k<<<rows, 128, 0, s>>>(q, k, nh, nkv, head_dim, positions, inv_freq);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
