#pragma once
// The CUDA kernels of the Llama forward, one launcher each, next to their CPU twins in engine/cpu/ops.cpp and
// engine/model/cpu_context.cpp (same semantics; tests/cuda_parity_test.cpp compares the two backends).
// Activations are f32; weights stay in their stored type (f32, f16 or bf16). All launches go to `stream`.
#include <cuda_runtime.h>

#include <cstdint>

namespace specscope::cuda {

// Weight storage types: f32/f16/bf16, or GGUF blocks (decoded by kernels/quant_decode.h, same order as its Block).
enum class WType : int { F32 = 0, F16 = 1, BF16 = 2, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };
#if defined(__CUDACC__)
__host__ __device__
#endif
inline bool is_block(WType t) { return int(t) >= int(WType::Q8_0); }

// Rows [row0, row0 + nrows) of a block-quantized matrix with `cols` columns, dequantized exactly (as ggml's
// reference does) into out [nrows, cols] f32.
void dequant_rows(const void* W, WType t, int cols, int row0, int nrows, float* out, cudaStream_t stream);

// out[i, :] = table[tokens[i], :] widened (or dequantized) to f32.
void embed_gather(const void* table, WType t, const int32_t* tokens, int n, int H, float* out, cudaStream_t stream);
// y = x / sqrt(mean(x^2) + eps) * w, per row (y may alias x).
void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps, cudaStream_t stream);
// Rotate-half RoPE of every head of every row at positions[row] (arbitrary position ids: trees).
void rope(float* v, int rows, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          cudaStream_t stream);
// out = silu(gate) * up, element-wise.
void silu_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);
// y += x, element-wise.
void add(const float* x, float* y, int64_t n, cudaStream_t stream);
// y[r, c] += bias[c].
void add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t stream);
// f32 -> f16 / bf16 (round to nearest even), for the GEMM inputs of 16-bit weights.
void to_half(const float* x, void* out, WType t, int64_t n, cudaStream_t stream);
// out[r, :] = x[rows[r], :].
void gather_rows(const float* x, const int32_t* rows, int nr, int dim, float* out, cudaStream_t stream);

// Attention of n new rows (queries q [n, nh*hd]) over a KV cache holding `base` earlier entries and the n new
// ones at slots base..base+n-1 (k/v cache [slots, nkv*hd]). New row i sees every earlier slot and new row j when
// mask[i*n + j] (nullptr: j <= i); with window > 0 only slots whose position (slot_pos) is within it.
// out [n, nh*hd].
void attention(const float* q, const float* k_cache, const float* v_cache, const int32_t* slot_pos,
               const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window,
               float* out, cudaStream_t stream);

}  // namespace specscope::cuda
