#pragma once
// CPU references of the CUDA kernels, as llm.c keeps one beside each kernel: the contract of every launcher in
// llama_kernels.h (same name, same arguments less the stream, host pointers), computed on the CPU. Where the
// engine has the CPU twin (engine/cpu/ops.h, attention.h, matmul.h, matmul_quant.h, util/dtype.h) the reference
// calls it, so each piece of logic has one CPU copy; the references add only the launcher's contract around it
// (per-row positions, the visibility rule, the KV layout). tests/cuda/cuda_kernels_test.cpp compares each launcher
// with its reference on a GPU; tests/cuda/kernel_refs_test.cpp checks the references on the CPU, GPU or not.
// Plain C++ with no CUDA headers.
#include <cstdint>

#include "engine/sampling/logit_summary.h"
#include "kernels/expert_groups.h"
#include "kernels/processed_row.h"
#include "kernels/wtype.h"

namespace specscope::cuda::ref {

// dequant_ref.cpp (kernels/dequant.cu)
void dequant_rows(const void* W, WType t, int cols, int row0, int nrows, float* out);
void embed_gather(const void* table, WType t, const int32_t* tokens, int n, int H, float* out);
void to_half(const float* x, void* out, WType t, int64_t n);  // out: n uint16_t, f16 or bf16 bits

// norm_rope_ref.cpp (kernels/norm_rope.cu)
void rmsnorm(const float* x, const float* w, float* y, int rows, int dim, float eps);
void rope(float* v, int rows, int n_heads, int head_dim, const int32_t* positions, const float* inv_freq,
          int rotary_dim = 0, float scale = 1.f);

// elementwise_ref.cpp (kernels/elementwise.cu)
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n);
void scale(float* y, float factor, int64_t n);
void soft_cap(float* y, float cap, int64_t n);
void add(const float* x, float* y, int64_t n);
void add_bias(float* y, const float* bias, int rows, int cols, int bias_rows = 1);
void gather_rows(const float* x, const int32_t* rows, int nr, int dim, float* out);
void split_qkv(const float* qkv, int rows, int q_dim, int kv_dim, float* q, float* k, float* v);

// gemv_ref.cpp (kernels/gemv.cu): X in W's type (f32, or f16/bf16 bits)
void gemv(const void* W, WType t, const void* X, int n, int m, int k, float* Y);
void block_gemv(const void* W, WType t, const float* X, int n, int m, int k, float* Y);  // GGUF blocks, f32 X

// experts_ref.cpp (kernels/experts.cu)
void route_experts(float* logits, int rows, int experts, int k, bool normalize, int32_t* ids, float* weights);
// The definition of group_expert_picks, with each expert's picks in increasing order.
void group_expert_picks(const int32_t* ids, int picks, int experts, int32_t* order, ExpertGroup* groups);
void expert_products(const void* W, WType t, int m, int cols, const int32_t* ids, int rows, int k, const float* X,
                     int64_t x_row_stride, int64_t x_pick_stride, float* Y);
void shared_expert_scales(const float* gate, const float* h, int rows, int dim, float* scales);
void sum_expert_outputs(const float* outs, const float* weights, int rows, int k, int dim, const float* shared,
                        const float* shared_scales, float* y);

// attention_ref.cpp (kernels/attention.cu, both paths: single block and attention_split.cu)
void attention(const float* q, const float* k_cache, const float* v_cache, const int32_t* slot_pos,
               const uint8_t* mask, const int32_t* positions, int n, int base, int nh, int nkv, int hd, int window,
               float soft_cap, float* out);

// sampling_ref.cpp (kernels/sampling.cu)
void logit_summaries(const float* logits, int rows, int vocab, const int32_t* probe_start, const int32_t* probe_tokens,
                     LogitSummary* out, float* probe_probs);

// processed_rows_ref.cpp (kernels/processed_rows.cu): process_logits, with the launcher's output; count -1 when more
// than kProcessedRowCap tokens are kept (the kernel may also decline a row whose candidates it cannot bound).
void process_row(const float* logits, int vocab, float temperature, int top_k, float top_p, float min_p,
                 ProcessedRow* out);

}  // namespace specscope::cuda::ref
