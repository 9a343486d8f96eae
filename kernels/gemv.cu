// Matrix products of a few rows on the GPU (llama_kernels.h, "kernels/gemv.cu"): Y [n, m] = X [n, k] W^T for
// n <= kGemvMaxRows, the decode step and small trees. At these sizes the product is bound by reading W once, and
// cuBLAS's GEMM kernels (tiles sized for many rows) reached 28% of the H200's copy bandwidth on Llama-3.1-8B's
// shape (bench/results/gpu_h200_2026-11-28a). Here one warp owns one output column j: its lanes stream W's row j in
// 16-byte vectors (four in flight per lane, past L1, since each weight is read once) and multiply each by the same
// slice of every X row (read through L1, where every warp of the block finds them). Each lane sums its slices in a
// fixed order, then the warp adds the 32 partial sums in a fixed tree.
//
// A token's sum does not depend on the other tokens of the batch, so a row's result is bit-identical alone or
// among up to kGemvMaxRows rows (cuda_kernels_test checks this). The CPU reference is gemv_ref.cpp.
//
// GGUF block weights (block_gemv) take the same shape of work: one warp per output column, each lane decoding whole
// runs of 32 weights of W's row (quant_decode.h's decode_run: the scale once per run) and multiplying each run by the
// same 32 activations of every X row (f32). The panel path it replaces for a few rows dequantizes W to f32 in memory
// and has cuBLAS read it back: about 9 bytes moved per weight where the blocks hold 0.56-1.06.
#include <cuda_fp16.h>

#include <cstdint>
#include <stdexcept>

#include "kernels/cuda_check.h"
#include "kernels/llama_kernels.h"
#include "kernels/quant_decode.h"

namespace specscope::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kInFlight = 4;  // 16-byte weight vectors each lane loads before it uses them

// A weight vector read once: not kept in L1, where the activations are.
__device__ __forceinline__ int4 load_weights(const int4* p) {
  int4 v;
  asm("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// A 16-bit weight or activation (bf16 or f16 bits) widened to f32, exactly.
template <WType T>
__device__ __forceinline__ float widen16(uint32_t bits) {
  if constexpr (T == WType::BF16) return __uint_as_float(bits << 16);
  else return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}

// The elements of a 16-byte vector widened to f32, in memory order: 8 f16/bf16 values, or 4 f32.
template <WType T>
struct Vec {
  static constexpr int kElems = 8;
  __device__ static void widen(const int4& v, float* f) {
    const uint32_t u[4] = {uint32_t(v.x), uint32_t(v.y), uint32_t(v.z), uint32_t(v.w)};
#pragma unroll
    for (int i = 0; i < 4; ++i) f[2 * i] = widen16<T>(u[i] & 0xffffu), f[2 * i + 1] = widen16<T>(u[i] >> 16);
  }
};
template <>
struct Vec<WType::F32> {
  static constexpr int kElems = 4;
  __device__ static void widen(const int4& v, float* f) {
    f[0] = __int_as_float(v.x), f[1] = __int_as_float(v.y), f[2] = __int_as_float(v.z), f[3] = __int_as_float(v.w);
  }
};

// acc[t] += sum over the vector's elements of w * x[t], element by element in memory order.
template <WType T, int N>
__device__ __forceinline__ void accumulate(const int4& wv, const int4* const* xrows, int v, float* acc) {
  constexpr int E = Vec<T>::kElems;
  float w[E];
  Vec<T>::widen(wv, w);
#pragma unroll
  for (int t = 0; t < N; ++t) {
    float x[E];
    Vec<T>::widen(__ldg(xrows[t] + v), x);
#pragma unroll
    for (int e = 0; e < E; ++e) acc[t] = fmaf(w[e], x[e], acc[t]);
  }
}

// One warp per output column j (W's row j); X [N, k] in T's type (f32 for f32 weights, else 16-bit bits).
template <WType T, int N>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_k(const void* __restrict__ W, const void* __restrict__ X, int m, int k, float* __restrict__ Y) {
  const int j = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (j >= m) return;
  const int vectors = k / Vec<T>::kElems;
  const int4* wrow = static_cast<const int4*>(W) + int64_t(j) * vectors;
  const int4* xrows[N];
#pragma unroll
  for (int t = 0; t < N; ++t) xrows[t] = static_cast<const int4*>(X) + int64_t(t) * vectors;
  float acc[N];
#pragma unroll
  for (int t = 0; t < N; ++t) acc[t] = 0.f;
  int v = lane;
  for (; v + (kInFlight - 1) * 32 < vectors; v += kInFlight * 32) {
    int4 wv[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) wv[u] = load_weights(wrow + v + u * 32);
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) accumulate<T, N>(wv[u], xrows, v + u * 32, acc);
  }
  for (; v < vectors; v += 32) accumulate<T, N>(load_weights(wrow + v), xrows, v, acc);
#pragma unroll
  for (int t = 0; t < N; ++t) {
    float s = acc[t];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) Y[int64_t(t) * m + j] = s;
  }
}

template <WType T, int N>
void launch(const void* W, const void* X, int m, int k, float* Y, cudaStream_t s) {
  gemv_k<T, N><<<(m + kWarpsPerBlock - 1) / kWarpsPerBlock, kWarpsPerBlock * 32, 0, s>>>(W, X, m, k, Y);
  CUDA_CHECK(cudaGetLastError());
}

template <WType T>
void launch_rows(const void* W, const void* X, int n, int m, int k, float* Y, cudaStream_t s) {
  switch (n) {
    case 1: return launch<T, 1>(W, X, m, k, Y, s);
    case 2: return launch<T, 2>(W, X, m, k, Y, s);
    case 3: return launch<T, 3>(W, X, m, k, Y, s);
    case 4: return launch<T, 4>(W, X, m, k, Y, s);
    case 5: return launch<T, 5>(W, X, m, k, Y, s);
    case 6: return launch<T, 6>(W, X, m, k, Y, s);
    case 7: return launch<T, 7>(W, X, m, k, Y, s);
    default: return launch<T, 8>(W, X, m, k, Y, s);
  }
}

// One warp per output column j of GGUF block weights: lane l takes runs l, l + 32, ... of W's row j, in order.
template <int N>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    block_gemv_k(const uint8_t* __restrict__ W, WType t, const float* __restrict__ X, int m, int k,
                 float* __restrict__ Y) {
  const int j = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (j >= m) return;
  const quant_decode::Block b = block_of(t);
  const uint8_t* wrow = W + size_t(j) * row_bytes(t, k);
  float acc[N];
#pragma unroll
  for (int r = 0; r < N; ++r) acc[r] = 0.f;
  float w[32];
  for (int run = lane; run < k / 32; run += 32) {
    quant_decode::decode_run(wrow, b, run, w);
#pragma unroll
    for (int r = 0; r < N; ++r) {
      const float4* x = reinterpret_cast<const float4*>(X + int64_t(r) * k + 32 * run);
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        const float4 v = __ldg(x + q);
        acc[r] = fmaf(w[4 * q], v.x, acc[r]);
        acc[r] = fmaf(w[4 * q + 1], v.y, acc[r]);
        acc[r] = fmaf(w[4 * q + 2], v.z, acc[r]);
        acc[r] = fmaf(w[4 * q + 3], v.w, acc[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < N; ++r) {
    float s = acc[r];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) Y[int64_t(r) * m + j] = s;
  }
}

template <int N>
void launch_block(const void* W, WType t, const float* X, int m, int k, float* Y, cudaStream_t s) {
  block_gemv_k<N><<<(m + kWarpsPerBlock - 1) / kWarpsPerBlock, kWarpsPerBlock * 32, 0, s>>>(
      static_cast<const uint8_t*>(W), t, X, m, k, Y);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

bool block_gemv_fits(WType t, int n, int k, const float* X) {
  // Whole blocks a row (256 weights for the K-quants): row_bytes counts whole blocks, so a row of partial ones would
  // stride wrong. GGUF tensors are always whole blocks; this only refuses a caller's mistake.
  return n >= 1 && n <= kGemvMaxRows && is_block(t) && k % quant_decode::block_elems(block_of(t)) == 0 &&
         reinterpret_cast<uintptr_t>(X) % 16 == 0;
}

void block_gemv(const void* W, WType t, const float* X, int n, int m, int k, float* Y, cudaStream_t s) {
  if (!block_gemv_fits(t, n, k, X)) throw std::invalid_argument("block_gemv(): shape, type or alignment it does not take");
  switch (n) {
    case 1: return launch_block<1>(W, t, X, m, k, Y, s);
    case 2: return launch_block<2>(W, t, X, m, k, Y, s);
    case 3: return launch_block<3>(W, t, X, m, k, Y, s);
    case 4: return launch_block<4>(W, t, X, m, k, Y, s);
    case 5: return launch_block<5>(W, t, X, m, k, Y, s);
    case 6: return launch_block<6>(W, t, X, m, k, Y, s);
    case 7: return launch_block<7>(W, t, X, m, k, Y, s);
    default: return launch_block<8>(W, t, X, m, k, Y, s);
  }
}

bool gemv_fits(WType t, int n, int k, const void* W, const void* X) {
  if (n < 1 || n > kGemvMaxRows || is_block(t)) return false;
  const int elems = t == WType::F32 ? 4 : 8;  // per 16-byte vector
  return k % elems == 0 && reinterpret_cast<uintptr_t>(W) % 16 == 0 && reinterpret_cast<uintptr_t>(X) % 16 == 0;
}

void gemv(const void* W, WType t, const void* X, int n, int m, int k, float* Y, cudaStream_t s) {
  if (!gemv_fits(t, n, k, W, X)) throw std::invalid_argument("gemv(): shape, type or alignment it does not take");
  switch (t) {
    case WType::F32: return launch_rows<WType::F32>(W, X, n, m, k, Y, s);
    case WType::F16: return launch_rows<WType::F16>(W, X, n, m, k, Y, s);
    default: return launch_rows<WType::BF16>(W, X, n, m, k, Y, s);
  }
}

}  // namespace specscope::cuda
