#pragma once
// The linear layer and embedding lookup for block-quantized weights (DType Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K: GGUF weights kept in their stored blocks). cpu::linear and cpu::embedding_row hand such weights here.
//
// How: the matrix is never expanded; each thread takes a range of output rows and dequantizes each weight row
// once per call (ggml's reference values, exact: see gguf_quant.h; Q8_0 and the 32-element nibble formats Q4_0,
// Q4_1, Q5_0, Q5_1 by vectorized loops).
//  * 1-2 tokens (decode): four rows at a time into a 4 x k scratch, each dotted with the tokens in f32.
//  * 3+ tokens (verification, prefill): panels of 16 rows into an f32 scratch panel, computed for all tokens by
//    matmul.cpp's register-tiled f32 kernel for the active instruction set (detail::rows_*).
// The results equal linear_reference on the dequantized matrix up to f32 summation order. Measured on this
// (shared, 2-core, AVX-512) machine, one thread, 4096 x 4096, ms per product:
//   tokens    f16     Q8_0    Q4_0
//   1         1.9     3.6     3.9
//   8         4.4     7.7     7.9
//   64        20      24      24
// Tried and dropped: a fused per-block dot (d * sum q*x, no scratch row) was slower for one token (4.9 ms), and
// the panel path for one token too (5.2 ms).
// All of the above is the exact path. By default Q8_0, Q4_0, Q4_K, Q5_K and Q6_K go through integer dot products
// with activations quantized to 8 bits instead (quant_int8.h; set_quant_exact() in matmul.h switches). Measured on
// the same (shared) machine, one thread, 2048 x 8192, AVX512-VNNI kernels, ms per product, integer / exact path:
//   tokens    Q8_0         Q4_0         Q4_K         Q6_K
//   1         0.57 / 1.24  0.57 / 1.17  0.51 / 1.22  0.58 / 1.57
//   8         1.9 / 6.3    2.0 / 5.9    2.1 / 6.1    2.0 / 6.6
//   64        14 / 24      13 / 25      14 / 23      13 / 29
// (Those integer figures predate issue 22's register tiles: from 4 tokens on the integer path is now ~2x faster
// again, see bench/results/quant_int8_tiles.txt.)
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
