#pragma once
// The tensors of a Llama-family decoder. Matrices are views into the memory-mapped safetensors files, kept
// in their stored type; the small vectors (norm weights, biases) are copied to f32 once at load time.
#include <vector>

#include "engine/util/tensor.h"

namespace specscope {

// One expert of a mixture-of-experts layer: a SwiGLU MLP of its own (ModelConfig::expert_ffn wide).
struct ExpertWeights {
  TensorView gate, up;  // [expert_ffn, H]
  TensorView down;      // [H, expert_ffn]
  std::vector<float> b_gate, b_up, b_down;  // GPT-OSS's biases (ModelConfig::expert_bias), else empty
};

struct LayerWeights {
  std::vector<float> input_norm, post_attn_norm;  // [H]
  TensorView wq, wk, wv, wo;                      // [out, in], PyTorch Linear layout
  std::vector<float> bq, bk, bv, bo;              // empty when the layer has no bias
  std::vector<float> q_norm, k_norm;              // [head_dim]; Qwen3's and Gemma 3's per-head norms, else empty
  std::vector<float> sinks;                       // [heads]; GPT-OSS's sink logits (ModelConfig::attention_sinks)
  // DeepSeek's multi-head latent attention (ModelConfig::mla) has these in place of wk and wv, and wq_a beside wq
  // (then q_b: [heads * head_dim, q_lora_rank]) when it has q_lora_rank:
  TensorView wq_a;                   // [q_lora_rank, H]
  std::vector<float> q_a_norm;       // [q_lora_rank]
  TensorView wkv_a;                  // [kv_lora_rank + rotary, H]: the latent, then the shared rotary key
  std::vector<float> kv_a_norm;      // [kv_lora_rank]
  // Per head: k_b [kv_lora_rank, nope] takes a head's query's nope part to the latent's space (the transpose of its
  // rows of transformers' kv_b_proj; llama.cpp's attn_k_b), v_b [v_head_dim, kv_lora_rank] takes the attention's
  // weighted latent to the head's value (attn_v_b).
  std::vector<TensorView> k_b, v_b;
  // Gemma 3's norms of the attention output and of the MLP output, before their residual adds (else empty);
  // post_attn_norm is then its pre_feedforward_layernorm, the norm before the MLP in every architecture.
  std::vector<float> attn_out_norm, ffn_out_norm;  // [H]
  TensorView w_gate, w_up, w_down;
  std::vector<float> b_gate, b_up, b_down;
  // A mixture-of-experts layer (ModelConfig::moe_layer) has these in place of w_gate, w_up and w_down: the router
  // [num_experts, H] and the experts.
  TensorView router;
  std::vector<float> router_bias;  // [num_experts]; GPT-OSS's, else empty
  // [num_experts]; DeepSeek-V3's e_score_correction_bias, added to the scores experts are chosen by (not to their
  // weights), else empty.
  std::vector<float> expert_choice_bias;
  std::vector<ExpertWeights> experts;
  // Qwen2-MoE's shared expert (ModelConfig::shared_expert_ffn wide) and its gate, one row of H widened to f32 at load
  // (a dot product per token: as a matrix of its own type it would keep a decode step's expert products from sharing
  // one fork whenever its type differs from theirs, as llama-quantize leaves it); empty when there is none.
  // DeepSeek's shared experts have no gate (ModelConfig::shared_expert_gated false): shared_expert_gate stays empty.
  ExpertWeights shared_expert;
  std::vector<float> shared_expert_gate;
  bool has_shared_expert() const { return shared_expert.down.data != nullptr; }
};

struct ModelWeights {
  TensorView embed;  // [V, H]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;  // [H]
  TensorView lm_head;             // [V, H]; the embedding itself when tied
};

// Calls f on every matrix a forward multiplies by (each layer's attention four, or MLA's, then its MLP's three, or its router
// and each expert's three and the shared expert's three, then the LM head), for the passes over all of them: kernel
// copies, requantized copies, byte counts. `W` is ModelWeights or const ModelWeights.
template <class W, class F>
void for_each_linear(W& w, F&& f) {
  for (auto& L : w.layers) {
    if (L.wkv_a.data) {  // MLA
      if (L.wq_a.data) f(L.wq_a);
      for (auto* t : {&L.wq, &L.wkv_a}) f(*t);
      for (auto& t : L.k_b) f(t);
      for (auto& t : L.v_b) f(t);
      f(L.wo);
    } else {
      for (auto* t : {&L.wq, &L.wk, &L.wv, &L.wo}) f(*t);
    }
    if (L.experts.empty()) {
      for (auto* t : {&L.w_gate, &L.w_up, &L.w_down}) f(*t);
      continue;
    }
    f(L.router);
    for (auto& e : L.experts)
      for (auto* t : {&e.gate, &e.up, &e.down}) f(*t);
    if (L.has_shared_expert())
      for (auto* t : {&L.shared_expert.gate, &L.shared_expert.up, &L.shared_expert.down}) f(*t);
  }
  f(w.lm_head);
}

inline const float* bias_or_null(const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); }

// Phi-3's fused matrices (ModelConfig::fused_projections) bound as views of their rows, in their stored order: q, k,
// v of qkv ([q_rows + 2 kv_rows, H]) and gate, up of gate_up ([2 ffn, H]); a LoRA update over a fused module
// (lora_adapter.cpp) spans the parts in the same order.
inline void bind_fused_qkv(LayerWeights& L, const TensorView& qkv, int64_t q_rows, int64_t kv_rows) {
  L.wq = qkv.rows_view(0, q_rows, "[q]");
  L.wk = qkv.rows_view(q_rows, kv_rows, "[k]");
  L.wv = qkv.rows_view(q_rows + kv_rows, kv_rows, "[v]");
}
inline void bind_fused_gate_up(LayerWeights& L, const TensorView& gate_up, int64_t ffn) {
  L.w_gate = gate_up.rows_view(0, ffn, "[gate]");
  L.w_up = gate_up.rows_view(ffn, ffn, "[up]");
}

}  // namespace specscope
