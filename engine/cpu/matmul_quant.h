#pragma once
// The linear layer and embedding lookup for block-quantized weights (DType Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: GGUF
// weights kept in their stored blocks). cpu::linear and cpu::embedding_row hand such weights here.
//
// How: each thread takes a range of output rows; each weight row is dequantized once (ggml's reference
// dequantization, exact: see gguf_quant.h) into a k-float scratch row and dotted with all n tokens in f32. The
// matrix is never expanded, and the weights are streamed once per call as in the f32/f16 path; the cost over an
// f16 matrix is the dequantization, once per row and call. The results equal linear_reference on the dequantized
// matrix up to f32 summation order.
#include "engine/util/tensor.h"

namespace specscope::cpu {

// Y[n, m] = X[n, k] * dequant(W)^T (+ bias). W: 2-D block-quantized, k a multiple of the block size (InputError
// otherwise).
void linear_quant(const float* X, int n, const TensorView& W, const float* bias, float* Y);
// Row `row` of a block-quantized embedding table, dequantized into out[cols].
void embedding_row_quant(const TensorView& E, int row, float* out);
// Checks a block-quantized weight (2-D, rows a whole number of blocks, data present; InputError otherwise);
// returns its rows and sets *k to its columns.
int block_weight_dims(const TensorView& W, const char* what, int* k);
// Rows [first, first + count) of a block-quantized matrix, dequantized into dst (count x cols floats).
void dequantize_rows(const TensorView& W, int64_t first, int64_t count, float* dst);

}  // namespace specscope::cpu
