#pragma once
// The per-head parts of DeepSeek's kv_b (LayerWeights::k_b, v_b) as the CPU's multi-head latent attention multiplies
// by them (cpu_mla.cpp), from a whole kv_b: transformers' kv_b_proj, or a GGUF file's attn_kv_b from before llama.cpp's
// converter split it into attn_k_b (transposed) and attn_v_b, which gguf_model.cpp binds head by head as they are.
#include <string>

#include "engine/model/config.h"
#include "engine/model/weights.h"

namespace specscope {

// kv_b [heads * (nope + v_head_dim), kv_lora_rank] (f32, f16 or bf16), each head's nope rows then its value rows:
// v_b[h] is a view of head h's value rows; k_b[h] [kv_lora_rank, nope] a transposed copy of its nope rows, in
// kv_b's dtype. `file` names the checkpoint in errors.
void bind_kv_b(const TensorView& kv_b, const ModelConfig& c, LayerWeights& L, const std::string& file);

}  // namespace specscope
