// CPU references of kernels/dequant.cu (kernel_refs.h): the engine's own dequantizer and widening
// (cpu::dequantize_rows, cpu::embedding_row) and its f16/bf16 rounding (engine/util/dtype.h).
#include <algorithm>
#include <cstring>

#include "engine/cpu/matmul.h"
#include "engine/cpu/matmul_quant.h"
#include "engine/util/dtype.h"
#include "engine/util/tensor.h"
#include "kernels/kernel_refs.h"

namespace specscope::cuda::ref {

namespace {

DType dtype_of(WType t) {
  switch (t) {
    case WType::F32: return DType::F32;
    case WType::F16: return DType::F16;
    case WType::BF16: return DType::BF16;
    case WType::Q8_0: return DType::Q8_0;
    case WType::Q4_0: return DType::Q4_0;
    case WType::Q4_1: return DType::Q4_1;
    case WType::Q5_0: return DType::Q5_0;
    case WType::Q5_1: return DType::Q5_1;
    case WType::Q4_K: return DType::Q4_K;
    case WType::Q5_K: return DType::Q5_K;
    case WType::Q6_K: return DType::Q6_K;
  }
  return DType::F32;
}

// A [rows, cols] view of host memory the caller owns (the launchers' contracts carry no row count, so the
// references pass the rows they read).
TensorView view(const void* data, WType t, int64_t rows, int cols) {
  TensorView v;
  v.name = "kernel reference";
  v.dtype = dtype_of(t);
  v.shape = {rows, cols};
  v.data = data;
  return v;
}

}  // namespace

void dequant_rows(const void* W, WType t, int cols, int row0, int nrows, float* out) {
  if (nrows <= 0) return;
  cpu::dequantize_rows(view(W, t, int64_t(row0) + nrows, cols), row0, nrows, out);
}

void embed_gather(const void* table, WType t, const int32_t* tokens, int n, int H, float* out) {
  if (n <= 0) return;
  const TensorView E = view(table, t, int64_t(*std::max_element(tokens, tokens + n)) + 1, H);
  for (int i = 0; i < n; ++i) cpu::embedding_row(E, tokens[i], out + int64_t(i) * H);
}

void to_half(const float* x, void* out, WType t, int64_t n) {
  auto* o = static_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = t == WType::F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
}

}  // namespace specscope::cuda::ref
