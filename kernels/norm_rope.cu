// RMSNorm and RoPE on the GPU (llama_kernels.h, "kernels/norm_rope.cu"): one block of threads per row. The CPU
// references are in norm_rope_ref.cpp (the engine's cpu::rmsnorm and cpu::rope).
#include <algorithm>

#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

namespace {

// RMSNorm of each row of x into y, after x += h when kAdd (the residual add and the norm after it, one launch).
// kPer > 0: each thread's elements (i = threadIdx.x + k * blockDim.x, k < kPer) staged in registers, every load
// (x, h, w) issued before any store, so one row at decode is one round trip to memory rather than one per element
// a thread holds (the loop's stores may alias its later loads, so the compiler keeps them in order: ~20 us a norm
// on the 8B shape, 1.3 ms of its 8.4 ms step on the H200). kPer == 0: the same arithmetic as loops, for any width.
// Both sum each thread's squares in the same order, so the results are the same bits. Each element is read and
// written by one thread, and y after the reduction's barrier: y may alias h or x. y16 (not null): y also in the
// 16-bit type t, as to_half() would make it for the products that read it.
template <int kPer, bool kAdd>
__global__ void norm_k(const float* h, float* x, const float* w, float* y, int dim, float eps, void* y16, WType t) {
  const int64_t row = int64_t(blockIdx.x) * dim;
  const float* hr = h + row;
  float* xr = x + row;
  float* yr = y + row;
  float ss = 0.f;
  if constexpr (kPer > 0) {
    float v[kPer], wv[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      v[k] = i < dim ? (kAdd ? xr[i] + hr[i] : xr[i]) : 0.f;
      wv[k] = i < dim ? w[i] : 0.f;
    }
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (threadIdx.x + k * blockDim.x < dim) {
        if (kAdd) xr[threadIdx.x + k * blockDim.x] = v[k];
        ss += v[k] * v[k];
      }
    ss = block_reduce<false>(ss);
    const float scale = rsqrtf(ss / float(dim) + eps);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      if (i < dim) {
        const float r = wv[k] * (v[k] * scale);
        yr[i] = r;
        if (y16) store_half(y16, row + i, r, t);
      }
    }
  } else {
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
      const float v = kAdd ? xr[i] + hr[i] : xr[i];
      if (kAdd) xr[i] = v;
      ss += v * v;
    }
    ss = block_reduce<false>(ss);
    const float scale = rsqrtf(ss / float(dim) + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
      const float r = w[i] * (xr[i] * scale);
      yr[i] = r;
      if (y16) store_half(y16, row + i, r, t);
    }
  }
}

constexpr int kNormThreads = 256;

// norm_k for `rows` rows of `dim`, with the smallest register stage that holds a thread's elements.
template <bool kAdd>
void launch_norm(const float* h, float* x, const float* w, float* y, int rows, int dim, float eps, void* y16, WType t,
                 cudaStream_t s) {
  const int per = (dim + kNormThreads - 1) / kNormThreads;
  if (per <= 4) norm_k<4, kAdd><<<rows, kNormThreads, 0, s>>>(h, x, w, y, dim, eps, y16, t);
  else if (per <= 8) norm_k<8, kAdd><<<rows, kNormThreads, 0, s>>>(h, x, w, y, dim, eps, y16, t);
  else if (per <= 16) norm_k<16, kAdd><<<rows, kNormThreads, 0, s>>>(h, x, w, y, dim, eps, y16, t);
  else if (per <= 32) norm_k<32, kAdd><<<rows, kNormThreads, 0, s>>>(h, x, w, y, dim, eps, y16, t);
  else norm_k<0, kAdd><<<rows, kNormThreads, 0, s>>>(h, x, w, y, dim, eps, y16, t);
  CUDA_CHECK(cudaGetLastError());
}

// One rotated pair (i, i + half) of one head of a row at position p; half is rotary_dim / 2 (the dimensions past
// rotary_dim are never touched), and the cosine and sine are multiplied by `scale` as cpu::rope_angles does.
__device__ __forceinline__ void rope_pair(float* head, int i, int half, float p, const float* inv_freq, float scale) {
  float s, c;
  sincosf(p * inv_freq[i], &s, &c);  // the angle in f32 as transformers forms it
  if (scale != 1.f) c *= scale, s *= scale;
  const float a = head[i], b = head[i + half];
  head[i] = a * c - b * s;
  head[i + half] = b * c + a * s;
}

__global__ void rope_k(float* v, int n_heads, int head_dim, int half, const int32_t* positions, const float* inv_freq,
                       float scale) {
  const int row = blockIdx.x;
  const float p = float(positions[row]);
  for (int idx = threadIdx.x; idx < n_heads * half; idx += blockDim.x)
    rope_pair(v + (int64_t(row) * n_heads + idx / half) * head_dim, idx % half, half, p, inv_freq, scale);
}

// rope_k over a row's query heads and then its key heads, in one launch (k's rows may sit in the KV cache).
__global__ void rope_qk_k(float* q, float* k, int nh, int nkv, int head_dim, int half, const int32_t* positions,
                          const float* inv_freq, float scale) {
  const int row = blockIdx.x;
  const float p = float(positions[row]);
  for (int idx = threadIdx.x; idx < (nh + nkv) * half; idx += blockDim.x) {
    const int h = idx / half;
    float* head = h < nh ? q + (int64_t(row) * nh + h) * head_dim : k + (int64_t(row) * nkv + (h - nh)) * head_dim;
    rope_pair(head, idx % half, half, p, inv_freq, scale);
  }
}

// Threads for one row's `pairs` rotations: enough for one pass at decode (a 128-thread block walked the 8B shape's
// 2,560 q and k pairs in 20 dependent rounds). Each pair is computed alone, so the block's size changes no bit.
int rope_threads(int pairs) { return std::min(1024, std::max(32, (pairs + 31) / 32 * 32)); }

}  // namespace

void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps, cudaStream_t s) {
  if (rows <= 0) return;
  // Without the add norm_k reads x alone (h unused) and writes y alone.
  launch_norm<false>(x, const_cast<float*>(x), w, y, rows, dim, eps, nullptr, WType::BF16, s);
}
void rope(float* v, int rows, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          cudaStream_t s, int rotary_dim, float scale) {
  const int half = (rotary_dim > 0 ? rotary_dim : head_dim) / 2;
  rope_k<<<rows, rope_threads(n_heads * half), 0, s>>>(v, n_heads, head_dim, half, positions, inv_freq, scale);
  CUDA_CHECK(cudaGetLastError());
}
void add_rmsnorm(const float* h, float* x, const float* w, float* y, int rows, int dim, float eps, cudaStream_t s,
                 void* y16, WType t16) {
  if (rows <= 0) return;
  launch_norm<true>(h, x, w, y, rows, dim, eps, y16, t16, s);
}
void rope_qk(float* q, float* k, int rows, int nh, int nkv, int head_dim, const int32_t* positions,
             const float* inv_freq, cudaStream_t s, int rotary_dim, float scale) {
  const int half = (rotary_dim > 0 ? rotary_dim : head_dim) / 2;
  rope_qk_k<<<rows, rope_threads((nh + nkv) * half), 0, s>>>(q, k, nh, nkv, head_dim, half, positions, inv_freq,
                                                              scale);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
