#include "engine/cpu/matmul_quant.h"

#include <omp.h>

#include <climits>
#include <vector>

#include "engine/formats/gguf_quant.h"
#include "engine/util/error.h"

namespace specscope::cpu {

namespace {

GgmlType ggml_of(DType t) {
  switch (t) {
    case DType::Q8_0: return GgmlType::Q8_0;
    case DType::Q4_0: return GgmlType::Q4_0;
    case DType::Q4_K: return GgmlType::Q4_K;
    case DType::Q5_K: return GgmlType::Q5_K;
    case DType::Q6_K: return GgmlType::Q6_K;
    default: throw std::invalid_argument("not a block-quantized dtype: " + std::string(dtype_name(t)));
  }
}

}  // namespace

int block_weight_dims(const TensorView& W, const char* what, int* k) {
  SPEC_INPUT_CHECK(dtype_is_block(W.dtype), W.name, std::string(what) + ": not a block-quantized weight");
  SPEC_INPUT_CHECK(W.shape.size() == 2, W.name, std::string(what) + ": weight must be 2-D, got " + W.shape_str());
  SPEC_INPUT_CHECK(W.shape[0] >= 0 && W.shape[1] >= 0 && W.shape[0] <= INT_MAX && W.shape[1] <= INT_MAX, W.name,
                   std::string(what) + ": bad weight shape " + W.shape_str());
  SPEC_INPUT_CHECK(W.shape[1] % dtype_block_elems(W.dtype) == 0, W.name,
                   std::string(what) + ": row length " + std::to_string(W.shape[1]) + " is not a multiple of the " +
                       std::string(dtype_name(W.dtype)) + " block");
  SPEC_INPUT_CHECK(W.data != nullptr || W.numel() == 0, W.name, std::string(what) + ": weight has no data");
  *k = int(W.shape[1]);
  return int(W.shape[0]);
}

namespace {

// Compiled for AVX-512, AVX2 and baseline, picked at load time (as attend_one in cpu_context.cpp).
#if defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2,fma", "default")))
#endif
float dot(const float* a, const float* b, int k) {
  float acc = 0.f;
#pragma omp simd reduction(+ : acc)
  for (int i = 0; i < k; ++i) acc += a[i] * b[i];
  return acc;
}

// Below this many multiply-adds a fork costs more than it saves.
constexpr size_t kMinParallelMacs = size_t(1) << 18;

}  // namespace

void linear_quant(const float* X, int n, const TensorView& W, const float* bias, float* Y) {
  int k = 0;
  const int m = block_weight_dims(W, "linear", &k);
  if (n <= 0 || m == 0) return;
  const GgmlType gt = ggml_of(W.dtype);
  const size_t rb = dtype_row_bytes(W.dtype, k);
  const auto* base = static_cast<const uint8_t*>(W.data);
  const size_t macs = size_t(m) * size_t(k) * size_t(n);
#pragma omp parallel if (macs >= kMinParallelMacs && !omp_in_parallel())
  {
    std::vector<float> row(static_cast<size_t>(k));
#pragma omp for schedule(static)
    for (int r = 0; r < m; ++r) {
      if (k > 0) dequantize_row(gt, base + size_t(r) * rb, row.data(), k);
      const float b = bias ? bias[r] : 0.f;
      for (int t = 0; t < n; ++t) Y[size_t(t) * m + r] = dot(row.data(), X + size_t(t) * k, k) + b;
    }
  }
}

void embedding_row_quant(const TensorView& E, int row, float* out) {
  int h = 0;
  const int v = block_weight_dims(E, "embedding", &h);
  SPEC_INPUT_CHECK(row >= 0 && row < v, E.name,
                   "token id " + std::to_string(row) + " out of range [0, " + std::to_string(v) + ")");
  dequantize_row(ggml_of(E.dtype), static_cast<const uint8_t*>(E.data) + size_t(row) * dtype_row_bytes(E.dtype, h),
                 out, h);
}

void dequantize_rows(const TensorView& W, int64_t first, int64_t count, float* dst) {
  int k = 0;
  const int m = block_weight_dims(W, "dequantize", &k);
  if (first < 0 || count < 0 || first > m || count > m - first) throw std::out_of_range("dequantize_rows: rows");
  const size_t rb = dtype_row_bytes(W.dtype, k);
  for (int64_t r = 0; r < count; ++r)
    dequantize_row(ggml_of(W.dtype), static_cast<const uint8_t*>(W.data) + size_t(first + r) * rb,
                   dst + size_t(r) * size_t(k), k);
}

}  // namespace specscope::cpu
