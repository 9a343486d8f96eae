#pragma once
// The linear layer and embedding lookup for block-quantized weights (DType Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: GGUF
// weights kept in their stored blocks). cpu::linear and cpu::embedding_row hand such weights here.
//
// How: each thread takes a range of output rows, four at a time; the four weight rows are dequantized once
// (ggml's reference values, exact: see gguf_quant.h; Q8_0/Q4_0 by a vectorized loop) into a 4 x k scratch and
// dotted with each of the n tokens in f32, each token row read once per four weight rows. The
// matrix is never expanded, and the weights are streamed once per call as in the f32/f16 path; the cost over an
// f16 matrix is the dequantization, once per row and call. The results equal linear_reference on the dequantized
// matrix up to f32 summation order. Measured on this (shared, 2-core) machine, one thread, 4096 x 4096:
//   tokens    f16      Q8_0     Q4_0
//   1         1.9 ms   3.7-3.9  4.0
//   8         4.5 ms   8.9-9.5  12.6
//   64        21 ms    82       82     (no register tiling over tokens, no BLAS: prefill is ~4x f16)
// A fused per-block dot (d * sum q*x, no scratch row) was slower for one token (4.9 ms): the per-block
// horizontal sums cost more than writing the scratch. Next steps, not done: tiles over tokens (or the f32
// kernels of matmul.cpp on a dequantized panel) for prefill, quantized activations with integer dots as ggml.
#include "engine/util/tensor.h"

namespace specscope::cpu {

// Y[n, m] = X[n, k] * dequant(W)^T (+ bias). W: 2-D block-quantized, k a multiple of the block size (InputError
// otherwise).
void linear_quant(const float* X, int n, const TensorView& W, const float* bias, float* Y);
// Row `row` of a block-quantized embedding table, dequantized into out[cols] (the values of gguf_quant's
// dequantize_row, bit for bit).
void embedding_row_quant(const TensorView& E, int row, float* out);
// Checks a block-quantized weight (2-D, rows a whole number of blocks, data present; InputError otherwise);
// returns its rows and sets *k to its columns.
int block_weight_dims(const TensorView& W, const char* what, int* k);
// Rows [first, first + count) of a block-quantized matrix, dequantized into dst (count x cols floats).
void dequantize_rows(const TensorView& W, int64_t first, int64_t count, float* dst);

}  // namespace specscope::cpu
