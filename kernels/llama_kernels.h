#pragma once
// The CUDA kernels of the Llama forward, one launcher each. Each lives in the file named in its section, beside
// its CPU reference (kernel_refs.h: the same contract, computed by the engine's CPU ops where it has them).
// tests/cuda/cuda_kernels_test.cpp compares every launcher with its reference; tests/cuda/cuda_parity_test.cpp
// compares the whole backend with the CPU backend.
// Activations are f32; weights stay in their stored type (WType). All launches go to `stream`.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/sampling/logit_summary.h"
#include "kernels/expert_groups.h"
#include "kernels/processed_row.h"
#include "kernels/wtype.h"

namespace specscope::cuda {

// --- kernels/dequant.cu: weight types ---------------------------------------------------------------------

// Rows [row0, row0 + nrows) of a block-quantized matrix with `cols` columns, dequantized exactly (as ggml's
// reference does) into out [nrows, cols] f32.
void dequant_rows(const void* W, WType t, int cols, int row0, int nrows, float* out, cudaStream_t stream);
// out[i, :] = table[tokens[i], :] widened (or dequantized) to f32.
void embed_gather(const void* table, WType t, const int32_t* tokens, int n, int H, float* out, cudaStream_t stream);
// f32 -> f16 / bf16 (round to nearest even), for the GEMM inputs of 16-bit weights.
void to_half(const float* x, void* out, WType t, int64_t n, cudaStream_t stream);

// --- kernels/norm_rope.cu: RMSNorm and RoPE --------------------------------------------------------------

// y = x / sqrt(mean(x^2) + eps) * w, per row (y may alias x).
void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps, cudaStream_t stream);
// Rotate-half RoPE of every head of every row at positions[row] (arbitrary position ids: trees). `rotary_dim`: the
// head's first dimensions that turn (0: all; Phi's partial rotary), the rest untouched; `scale`: what every cosine
// and sine is multiplied by (LongRoPE's attention factor; 1 elsewhere).
void rope(float* v, int rows, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          cudaStream_t stream, int rotary_dim = 0, float scale = 1.f);
// Fused launches of the two above, bit for bit what the separate launches give (fewer launches a layer: a decode
// step of the 8B shape is ~800 launches, and each small one costs the GPU a few microseconds):
// x += h, then y = rmsnorm(x) per row (the residual add and the next norm; y may alias h or x); y16 (not null): y
// also in the 16-bit type t16, the bits to_half(y) gives, for the products that read it.
void add_rmsnorm(const float* h, float* x, const float* w, float* y, int rows, int dim, float eps,
                 cudaStream_t stream, void* y16 = nullptr, WType t16 = WType::BF16);
// rope() of the queries q [rows, nh*head_dim] and of the keys k [rows, nkv*head_dim] in one launch.
void rope_qk(float* q, float* k, int rows, int nh, int nkv, int head_dim, const int32_t* positions,
             const float* inv_freq, cudaStream_t stream, int rotary_dim = 0, float scale = 1.f);

// --- kernels/elementwise.cu: element-wise and row copies -------------------------------------------------

// out = silu(gate) * up, element-wise; out16 (not null): out also in the 16-bit type t16, the bits to_half(out)
// gives (the down product's input, made in the same launch).
void silu_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream, void* out16 = nullptr,
              WType t16 = WType::BF16);
// out = gelu_tanh(gate) * up, element-wise (Gemma's MLP).
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);
// y *= factor, element-wise (Gemma's embedding scale, and its attention scale folded into the queries).
void scale(float* y, float factor, int64_t n, cudaStream_t stream);
// y = cap * tanh(y / cap), element-wise (Gemma 2's final logits).
void soft_cap(float* y, float cap, int64_t n, cudaStream_t stream);
// y += x, element-wise.
void add(const float* x, float* y, int64_t n, cudaStream_t stream);
// y[r, c] += bias[r % bias_rows, c]: one bias row for every row, or bias_rows of them in turn (Speculative
// Streaming's stream embeddings, one per stream, over rows ordered source by source, stream by stream).
void add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t stream, int bias_rows = 1);
// out[r, :] = x[rows[r], :].
void gather_rows(const float* x, const int32_t* rows, int nr, int dim, float* out, cudaStream_t stream);
// Rows [q | k | v] of one q/k/v product (rows x (q_dim + 2 kv_dim)) copied apart into q [rows, q_dim], k and v
// [rows, kv_dim] (k and v may be KV-cache slots).
void split_qkv(const float* qkv, int rows, int q_dim, int kv_dim, float* q, float* k, float* v, cudaStream_t stream);

// --- kernels/gemv.cu: matrix products of a few rows ---------------------------------------------------------

// The most rows gemv takes: past it a GEMM's tiles reuse each weight over enough rows to beat one pass per row.
inline constexpr int kGemvMaxRows = 8;
// Whether gemv takes this product: 1..kGemvMaxRows rows of f32/f16/bf16 weights, k a whole number of 16-byte
// vectors, W and X 16-byte aligned.
bool gemv_fits(WType t, int n, int k, const void* W, const void* X);
// Y [n, m] = X [n, k] W [m, k]^T in f32, each product exact and summed in f32 in an order that does not depend on
// n. X is in W's type: f32 for f32 weights, else the f16/bf16 bits to_half makes (as the GEMM path takes them).
void gemv(const void* W, WType t, const void* X, int n, int m, int k, float* Y, cudaStream_t stream);
// Whether block_gemv takes this product: 1..kGemvMaxRows rows of GGUF block weights, X 16-byte aligned.
bool block_gemv_fits(WType t, int n, int k, const float* X);
// Y [n, m] = X [n, k] W [m, k]^T for GGUF block weights W and f32 X, each weight decoded exactly (quant_decode.h) and
// each output summed in f32 in an order that does not depend on n.
void block_gemv(const void* W, WType t, const float* X, int n, int m, int k, float* Y, cudaStream_t stream);

// --- kernels/experts.cu: mixture-of-experts layers ---------------------------------------------------------

// Per row of router logits [rows, experts] (overwritten with their softmax): the k most probable experts (ties to
// the lower index) into ids [rows, k] and their probabilities into weights [rows, k], renormalized to sum to 1 when
// `normalize`, each row's picks in increasing expert order (engine/model/expert_routing.h's routing).
void route_experts(float* logits, int rows, int experts, int k, bool normalize, int32_t* ids, float* weights,
                   cudaStream_t stream);
// A batch's picks grouped by expert (kernels/expert_groups.h). One block; its shared memory holds 4 ints an expert
// (std::invalid_argument past kMaxGroupedExperts).
void group_expert_picks(const int32_t* ids, int picks, int experts, int32_t* order, ExpertGroup* groups,
                        cudaStream_t stream);
// For each row r and pick j (product p = r * k + j): Y[p, :] = W_e x_p, with W_e expert ids[p]'s [m, cols] matrix of
// the experts stacked at W (m rows of wtype.h's row_bytes(t, cols) apart) in any weight type, and x_p = X + r * x_row_stride + j *
// x_pick_stride (f32; a pick stride of 0 gives every pick the row's input). Each output one warp's f32 sum in a fixed
// order: the same bits whatever the batch, and with or without `grouping` (group_expert_picks of these ids), which
// only changes how often an expert's weights are read: once a pick without it, once a group with it.
void expert_products(const void* W, WType t, int m, int cols, const int32_t* ids, int rows, int k, const float* X,
                     int64_t x_row_stride, int64_t x_pick_stride, float* Y, cudaStream_t stream,
                     const ExpertGrouping* grouping = nullptr);
// scales[r] = sigmoid(gate . h[r, :]) (Qwen2-MoE's shared-expert gate, one row of dim).
void shared_expert_scales(const float* gate, const float* h, int rows, int dim, float* scales, cudaStream_t stream);
// y[r, :] = sum over j in order of weights[r, j] * outs[r * k + j, :], then + shared_scales[r] * shared[r, :] when
// shared is not null (transformers' Qwen2MoeSparseMoeBlock adds the shared expert after the routed ones).
void sum_expert_outputs(const float* outs, const float* weights, int rows, int k, int dim, const float* shared,
                        const float* shared_scales, float* y, cudaStream_t stream);

// --- kernels/attention.cu: attention over the KV cache ----------------------------------------------------

// Attention of n new rows (queries q [n, nh*hd]) over a KV cache holding `base` earlier entries and the n new
// ones at slots base..base+n-1 (k/v cache [slots, nkv*hd]; query head h reads KV head h / (nh / nkv)). New row i
// sees every earlier slot and new row j when mask[i*n + j] (nullptr: j <= i); with window > 0 only slots whose
// position (slot_pos) is within it (positions[i] - slot_pos[j] < window). Softmax of the scaled scores
// (1/sqrt(hd)), each capped to soft_cap * tanh(score / soft_cap) when soft_cap > 0 (Gemma 2), over the visible
// slots; a row that sees no slot gets zeros. out [n, nh*hd].
// Up to 1024 slots, one row a block (kernels/attention.cu) below 4 rows and tiles of rows that share each key and
// value row loaded from 4 (attention_rows.cu); past 1024 slots the row tiles for every batch, each row's context
// summed in chunks fixed by its own visible slots, so that a tree row gets the bits its own decode gets
// (attention_paths.h, canonical_chunks). row_tiles = false (SPECSCOPE_CUDA_ROW_TILES=0 in CudaContext) turns them
// off: then one row a block, and past 1024 slots chunks combined afterwards (attention_split.cu), which a tree row
// and its decode cut differently. Chunks keep their partials in `scratch` (at least attention_scratch_floats(nh, hd,
// base + n) floats), or, when it is empty, in memory from the stream-ordered allocator. A call captured into a CUDA
// graph must be given scratch: an allocation captured in a graph becomes a node with an address of its own per
// capture, which an update of an instantiated graph from a later capture cannot follow. Heads wider than 128 (up to
// 256: Gemma 2 and 3) take one row a block at every context (attention_paths.h, kMaxWideHeadDim), up to
// attention_paths::single_block_max_slots() slots.
struct AttentionScratch {
  float* data = nullptr;
  size_t floats = 0;
};
void attention(const float* q, const float* k_cache, const float* v_cache, const int32_t* slot_pos,
               const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window,
               float soft_cap, float* out, cudaStream_t stream, AttentionScratch scratch = {}, bool row_tiles = true);
// Scratch for every call over at most `slots` slots: the split path's largest, or eight rows' partials in the row
// tiles' chunks at that length (calls of more rows go in batches of what fits).
size_t attention_scratch_floats(int nh, int hd, int slots);

// --- kernels/sampling.cu: verification's reads of the logits -------------------------------------------------

// Per row of logits [rows, vocab]: out[row] as engine/sampling/logit_summary.h's summarize_logits makes it (the
// argmax, its softmax probability, the softmax's top kSummaryTopK with p > 0), and the softmax probability of each
// probe token of the row, probe_tokens[probe_start[row], probe_start[row + 1]), into probe_probs at the same index
// (probe_start null: none). Probabilities are computed with expf in another order than the CPU's vector softmax:
// equal within f32 rounding, and bars whose probabilities round equal may order differently.
void logit_summaries(const float* logits, int rows, int vocab, const int32_t* probe_start, const int32_t* probe_tokens,
                     LogitSummary* out, float* probe_probs, cudaStream_t stream);
// The same in two launches for long rows: each row cut into chunks of kSummaryChunk logits, one block per (row,
// chunk) finding the chunk's first kSummaryTopK in the order and its sum of exp(x - its max), then one block per row
// merging them (the normalizer as sum_c S_c exp(m_c - max): equal to the one-block sum within f32 rounding). Needs
// summary_scratch_bytes(rows, vocab) bytes of device scratch. CudaContext's default for vocabularies of two chunks
// or more (SPECSCOPE_CUDA_SUMMARY_CHUNKS=0 turns it off): 14% faster 8B decode on the H200.
inline constexpr int kSummaryChunk = 2048;
size_t summary_scratch_bytes(int rows, int vocab);
void logit_summaries_chunked(const float* logits, int rows, int vocab, const int32_t* probe_start,
                             const int32_t* probe_tokens, LogitSummary* out, float* probe_probs, void* scratch,
                             cudaStream_t stream);

// --- kernels/processed_rows.cu: sampled verification's read of a row -----------------------------------------

// One row of logits [vocab] processed as engine/sampling/sampler.h's process_logits does at T = temperature > 0
// (top_k 0: off, top_p 1: off, min_p 0: off), into *out. The order and the kept set are process_logits's; the
// probabilities come from the same double-precision arithmetic in the same order over the kept tokens, with CUDA's
// exp against the host's libm (each within an ulp) and the mass of the tokens outside the candidates added as one sum:
// equal to the host's within a few double ulps before the final rounding to float.
void process_row(const float* logits, int vocab, float temperature, int top_k, float top_p, float min_p,
                 ProcessedRow* out, cudaStream_t stream);

}  // namespace specscope::cuda
