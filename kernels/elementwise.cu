// Element-wise kernels and row copies on the GPU (llama_kernels.h, "kernels/elementwise.cu"): grid-stride loops
// over flat arrays, one block per row for gathers. The CPU references are in elementwise_ref.cpp.
#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"
#include "kernels/llama_kernels.h"

namespace specscope::cuda {

namespace {

// o16 (not null): the result also in the 16-bit type t, as to_half() would make it for the down product.
__global__ void silu_mul_k(const float* g, const float* u, float* o, int64_t n, void* o16, WType t) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float r = g[i] / (1.f + __expf(-g[i])) * u[i];
    o[i] = r;
    if (o16) store_half(o16, i, r, t);
  }
}

// GELU (tanh approximation) of the gate times up, written as the CPU's cpu::gelu_tanh_mul writes it:
// 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
__global__ void gelu_tanh_mul_k(const float* g, const float* u, float* o, int64_t n) {
  constexpr float kTwoBeta = 2.f * 0.7978845608028654f, kKappa = 0.044715f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = g[i];
    o[i] = x / (1.f + __expf(-kTwoBeta * (x + kKappa * x * x * x))) * u[i];
  }
}

__global__ void scale_k(float* y, float s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] *= s;
}

__global__ void soft_cap_k(float* y, float cap, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = cap * tanhf(y[i] / cap);
}

__global__ void add_k(const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

__global__ void add_bias_k(float* y, const float* b, int rows, int cols, int bias_rows) {
  const int64_t n = int64_t(rows) * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += b[(i / cols) % bias_rows * cols + i % cols];
}

__global__ void gather_rows_k(const float* x, const int32_t* rows, int dim, float* out) {
  const int r = blockIdx.x;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) out[int64_t(r) * dim + i] = x[int64_t(rows[r]) * dim + i];
}

__global__ void split_qkv_k(const float* qkv, int rows, int q_dim, int kv_dim, float* q, float* k, float* v) {
  const int m = q_dim + 2 * kv_dim;
  const int64_t n = int64_t(rows) * m;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / m;
    const int c = int(i % m);
    if (c < q_dim)
      q[r * q_dim + c] = qkv[i];
    else if (c < q_dim + kv_dim)
      k[r * kv_dim + (c - q_dim)] = qkv[i];
    else
      v[r * kv_dim + (c - q_dim - kv_dim)] = qkv[i];
  }
}

}  // namespace

void silu_mul(const float* g, const float* u, float* o, int64_t n, cudaStream_t s, void* o16, WType t16) {
  silu_mul_k<<<grid_for(n, 256), 256, 0, s>>>(g, u, o, n, o16, t16);
  CUDA_CHECK(cudaGetLastError());
}
void gelu_tanh_mul(const float* g, const float* u, float* o, int64_t n, cudaStream_t s) {
  gelu_tanh_mul_k<<<grid_for(n, 256), 256, 0, s>>>(g, u, o, n);
  CUDA_CHECK(cudaGetLastError());
}
void scale(float* y, float factor, int64_t n, cudaStream_t s) {
  scale_k<<<grid_for(n, 256), 256, 0, s>>>(y, factor, n);
  CUDA_CHECK(cudaGetLastError());
}
void soft_cap(float* y, float cap, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  soft_cap_k<<<grid_for(n, 256), 256, 0, s>>>(y, cap, n);
  CUDA_CHECK(cudaGetLastError());
}
void add(const float* x, float* y, int64_t n, cudaStream_t s) {
  add_k<<<grid_for(n, 256), 256, 0, s>>>(x, y, n);
  CUDA_CHECK(cudaGetLastError());
}
void add_bias(float* y, const float* b, int rows, int cols, cudaStream_t s, int bias_rows) {
  add_bias_k<<<grid_for(int64_t(rows) * cols, 256), 256, 0, s>>>(y, b, rows, cols, bias_rows);
  CUDA_CHECK(cudaGetLastError());
}
void gather_rows(const float* x, const int32_t* rows, int nr, int dim, float* out, cudaStream_t s) {
  gather_rows_k<<<nr, 256, 0, s>>>(x, rows, dim, out);
  CUDA_CHECK(cudaGetLastError());
}
void split_qkv(const float* qkv, int rows, int q_dim, int kv_dim, float* q, float* k, float* v, cudaStream_t s) {
  const int64_t n = int64_t(rows) * (q_dim + 2 * kv_dim);
  if (n == 0) return;
  split_qkv_k<<<grid_for(n, 256), 256, 0, s>>>(qkv, rows, q_dim, kv_dim, q, k, v);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
