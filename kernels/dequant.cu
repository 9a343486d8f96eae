// Weight types on the GPU (llama_kernels.h, "kernels/dequant.cu"): GGUF block rows dequantized for cuBLAS, the
// embedding gather in any stored type, and f32 activations rounded to f16/bf16 for 16-bit GEMMs. The element
// decoding is kernels/quant_decode.h, shared with the CPU tests; the CPU references are in dequant_ref.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda_check.h"
#include "kernels/device_common.cuh"
#include "kernels/llama_kernels.h"
#include "kernels/quant_decode.h"

namespace specscope::cuda {

namespace {

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

__global__ void to_half_k(const float* x, void* out, WType t, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store_half(out, i, x[i], t);
}

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
void to_half(const float* x, void* out, WType t, int64_t n, cudaStream_t s) {
  to_half_k<<<grid_for(n, 256), 256, 0, s>>>(x, out, t, n);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace specscope::cuda
