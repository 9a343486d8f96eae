#pragma once
// Fused dequantize-and-dot kernels for GGUF block weights with few tokens (decoding, small verification
// batches): internal to engine/cpu (matmul_quant.cpp dispatches to them after a run-time CPU check).
#include <cstddef>
#include <cstdint>

namespace specscope::cpu::detail {

enum class QuantDotType { Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };

// Tokens per register tile; more tokens are processed in several passes over the weights.
constexpr int kQuantDotMaxTokens = 8;

// Y[t, r] = sum_c X[t, c] * w_r[c] (+ bias[r]) for weight rows r in [r0, r1) and all n tokens. W: m rows of
// row_bytes bytes (k elements, k a multiple of the block size); X: [n, k]; Y: [n, m]. AVX-512F/BW/VL/DQ only.
void quant_dot_rows_avx512(QuantDotType type, const uint8_t* W, size_t row_bytes, int k, const float* X, int n,
                           const float* bias, float* Y, int m, int r0, int r1);

}  // namespace specscope::cpu::detail
