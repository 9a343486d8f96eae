// CUDA kernels of the Llama forward (see llama_kernels.h). Written for clarity first: one block per row for the
// reductions, one block per (row, head) for attention with the scores in shared memory. The CPU twins are in
// engine/cpu/ops.cpp and engine/model/cpu_context.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>

#include "kernels/cuda_check.h"
#include "kernels/llama_kernels.h"
#include "kernels/quant_decode.h"

namespace specscope::cuda {

// WType's block types and quant_decode::Block must list the formats in the same order (block_of subtracts).
static_assert(int(WType::Q6_K) - int(WType::Q8_0) == int(quant_decode::Block::Q6_K));
static_assert(int(WType::Q4_K) - int(WType::Q8_0) == int(quant_decode::Block::Q4_K));

namespace {

__device__ __forceinline__ quant_decode::Block block_of(WType t) {
  return quant_decode::Block(int(t) - int(WType::Q8_0));
}

__device__ __forceinline__ float load_w(const void* p, WType t, int64_t i) {
  switch (t) {
    case WType::F16: return __half2float(static_cast<const __half*>(p)[i]);
    case WType::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

// Sum (or max) over a block of blockDim.x threads (a multiple of 32, at most 1024).
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

__global__ void embed_gather_k(const void* table, WType t, const int32_t* tokens, int H, float* out) {
  const int row = blockIdx.x;
  if (is_block(t)) {
    const quant_decode::Block b = block_of(t);
    const uint8_t* src = static_cast<const uint8_t*>(table) + size_t(tokens[row]) * quant_decode::row_bytes(b, H);
    for (int i = threadIdx.x; i < H; i += blockDim.x) out[int64_t(row) * H + i] = quant_decode::element(src, b, i);
    return;
  }
  const int64_t src = int64_t(tokens[row]) * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x) out[int64_t(row) * H + i] = load_w(table, t, src + i);
}

// One block of threads per row; every thread decodes its own elements (the scales are re-read per element, from
// L1: simple, and the panel it writes is then multiplied by cuBLAS).
__global__ void dequant_rows_k(const uint8_t* W, WType t, int cols, int row0, float* out) {
  const quant_decode::Block b = block_of(t);
  const size_t rb = quant_decode::row_bytes(b, cols);
  const uint8_t* row = W + size_t(row0 + blockIdx.x) * rb;
  float* o = out + int64_t(blockIdx.x) * cols;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) o[i] = quant_decode::element(row, b, i);
}

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

__global__ void silu_mul_k(const float* g, const float* u, float* o, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    o[i] = g[i] / (1.f + __expf(-g[i])) * u[i];
}

__global__ void add_k(const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

__global__ void add_bias_k(float* y, const float* b, int rows, int cols) {
  const int64_t n = int64_t(rows) * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += b[i % cols];
}

__global__ void to_half_k(const float* x, void* out, WType t, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (t == WType::F16)
      static_cast<__half*>(out)[i] = __float2half_rn(x[i]);
    else
      static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(x[i]);
  }
}

__global__ void gather_rows_k(const float* x, const int32_t* rows, int dim, float* out) {
  const int r = blockIdx.x;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) out[int64_t(r) * dim + i] = x[int64_t(rows[r]) * dim + i];
}

// One block per (new row, query head). Scores live in shared memory (total floats).
__global__ void attention_k(const float* q, const float* kc, const float* vc, const int32_t* slot_pos,
                            const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd,
                            int window, float* out) {
  extern __shared__ float sc[];
  const int i = blockIdx.x, h = blockIdx.y, kvh = h / (nh / nkv);
  const int total = base + n, kv_dim = nkv * hd;
  const float* qi = q + (int64_t(i) * nh + h) * hd;
  const float scale = rsqrtf(float(hd));
  float local_max = -FLT_MAX;
  for (int j = threadIdx.x; j < total; j += blockDim.x) {
    bool visible = j < base || (mask ? mask[int64_t(i) * n + (j - base)] != 0 : (j - base) <= i);
    if (visible && window > 0 && positions[i] - slot_pos[j] >= window) visible = false;
    float s = -FLT_MAX;
    if (visible) {
      const float* kj = kc + int64_t(j) * kv_dim + int64_t(kvh) * hd;
      float acc = 0.f;
      for (int d = 0; d < hd; ++d) acc += qi[d] * kj[d];
      s = acc * scale;
    }
    sc[j] = s;
    local_max = fmaxf(local_max, s);
  }
  const float mx = block_reduce<true>(local_max);
  float local_sum = 0.f;
  for (int j = threadIdx.x; j < total; j += blockDim.x) {
    const float e = sc[j] == -FLT_MAX ? 0.f : __expf(sc[j] - mx);
    sc[j] = e;
    local_sum += e;
  }
  const float inv = 1.f / block_reduce<false>(local_sum);
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j < total; ++j)
      if (sc[j] != 0.f) acc += sc[j] * vc[int64_t(j) * kv_dim + int64_t(kvh) * hd + d];
    out[(int64_t(i) * nh + h) * hd + d] = acc * inv;
  }
}

int grid_for(int64_t n, int block) { return int(std::min<int64_t>((n + block - 1) / block, 65535)); }

}  // namespace

void embed_gather(const void* table, WType t, const int32_t* tokens, int n, int H, float* out, cudaStream_t s) {
  embed_gather_k<<<n, 256, 0, s>>>(table, t, tokens, H, out);
  CUDA_CHECK(cudaGetLastError());
}
void dequant_rows(const void* W, WType t, int cols, int row0, int nrows, float* out, cudaStream_t s) {
  if (nrows <= 0) return;
  dequant_rows_k<<<nrows, 256, 0, s>>>(static_cast<const uint8_t*>(W), t, cols, row0, out);
  CUDA_CHECK(cudaGetLastError());
}
void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps, cudaStream_t s) {
  rmsnorm_k<<<rows, 256, 0, s>>>(x, w, y, dim, eps);
  CUDA_CHECK(cudaGetLastError());
}
void rope(float* v, int rows, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          cudaStream_t s) {
  rope_k<<<rows, 128, 0, s>>>(v, n_heads, head_dim, positions, inv_freq);
  CUDA_CHECK(cudaGetLastError());
}
void silu_mul(const float* g, const float* u, float* o, int64_t n, cudaStream_t s) {
  silu_mul_k<<<grid_for(n, 256), 256, 0, s>>>(g, u, o, n);
  CUDA_CHECK(cudaGetLastError());
}
void add(const float* x, float* y, int64_t n, cudaStream_t s) {
  add_k<<<grid_for(n, 256), 256, 0, s>>>(x, y, n);
  CUDA_CHECK(cudaGetLastError());
}
void add_bias(float* y, const float* b, int rows, int cols, cudaStream_t s) {
  add_bias_k<<<grid_for(int64_t(rows) * cols, 256), 256, 0, s>>>(y, b, rows, cols);
  CUDA_CHECK(cudaGetLastError());
}
void to_half(const float* x, void* out, WType t, int64_t n, cudaStream_t s) {
  to_half_k<<<grid_for(n, 256), 256, 0, s>>>(x, out, t, n);
  CUDA_CHECK(cudaGetLastError());
}
void gather_rows(const float* x, const int32_t* rows, int nr, int dim, float* out, cudaStream_t s) {
  gather_rows_k<<<nr, 256, 0, s>>>(x, rows, dim, out);
  CUDA_CHECK(cudaGetLastError());
}
void attention(const float* q, const float* kc, const float* vc, const int32_t* slot_pos, const uint8_t* mask,
               const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window, float* out,
               cudaStream_t s) {
  const size_t shmem = sizeof(float) * size_t(base + n);
  if (shmem > 48 * 1024)  // above the default dynamic shared-memory limit a launch needs the opt-in
    CUDA_CHECK(cudaFuncSetAttribute(attention_k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shmem)));
  attention_k<<<dim3(n, nh), 128, shmem, s>>>(q, kc, vc, slot_pos, mask, positions, n, base, nh, nkv, hd, window, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
