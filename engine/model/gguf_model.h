#pragma once
// Loading a Llama-family model from one GGUF file (llama.cpp's format): architecture "llama" (Llama, Mistral,
// TinyLlama, ... as llama.cpp converts them; Mixtral with expert_count), "qwen2", "qwen2moe", "qwen3", "qwen3moe",
// "gemma2", "gemma3", "granite" and "phi3".
//
// What differs from the Hugging Face layout, and how it is undone:
//  * The config is metadata (<arch>.embedding_length, .block_count, ...); see config_from_gguf.
//  * llama.cpp's converter permutes the rows of the Q and K projections of "llama" models, head by head, so that
//    ggml's interleaved RoPE (pairs 2i, 2i+1) computes what HF's rotate-half RoPE (pairs i, i + head_dim/2)
//    computes. The engine runs rotate-half everywhere (draft heads included), so the loader puts those rows back
//    in HF order: Q and K are the only matrices copied (into owned buffers, rows reordered, type unchanged); every
//    other F32/F16/BF16 tensor is a zero-copy view into the mapping. ("granite" is permuted too; "qwen2" and
//    "qwen3" are not: llama.cpp runs them with NEOX RoPE, which is rotate-half.)
//  * "qwen3" adds blk.N.attn_q_norm.weight / attn_k_norm.weight (head_dim each) and has no q/k/v biases.
//  * Mixtures of experts keep each layer's experts stacked, one [experts, out, in] tensor per matrix
//    (blk.N.ffn_gate_exps / ffn_up_exps / ffn_down_exps), the router as blk.N.ffn_gate_inp; Mixtral files written
//    before April 2024 hold one tensor per expert instead (blk.N.ffn_gate.E.weight ...); "qwen2moe" adds its shared
//    expert (ffn_gate_shexp / ffn_up_shexp / ffn_down_shexp) and that expert's gate (ffn_gate_inp_shexp, [1, H] or
//    a vector of H).
//  * "gemma3" has those too, and blk.N.post_attention_norm / post_ffw_norm (the sublayer outputs' norms; ffn_norm is
//    its pre_feedforward_layernorm); its norms are stored as 1 + w, which is what the engine computes with.
//  * "gemma2" is gemma3's layout without the q/k norms, with gemma2.attn_logit_softcapping and
//    .final_logit_softcapping (config_from_gguf).
//  * "granite" is llama's layout with four scalars: granite.embedding_scale, .residual_scale, .attention.scale and
//    .logit_scale (ModelConfig's embed_scale, residual_scale, attn_scale, logit_scale).
//  * "phi3" (Phi-3, 3.5 and 4-mini) keeps q, k and v in one blk.N.attn_qkv.weight and gate and up in one
//    blk.N.ffn_up.weight (gate rows first), bound as row views of them (nothing permuted: NEOX RoPE); RoPE turns
//    phi3.rope.dimension_count dimensions of each head (Phi-4-mini: 96 of 128); LongRoPE comes as the tensors
//    rope_factors_long.weight / rope_factors_short.weight with phi3.rope.scaling.original_context_length and
//    .attn_factor.
//  * llama3 RoPE scaling comes as rope_freqs.weight (per-frequency divisors); linear scaling as
//    <arch>.rope.scaling.type / .factor.
//  * No output.weight means the output projection is tied to token_embd.weight.
//  * Quantized matrices (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) stay in their blocks (DType Q8_0 ...,
//    zero-copy views like the float ones); cpu::linear computes with them row by row (engine/cpu/matmul_quant.h).
// The tokenizer and chat template come from tokenizer.ggml.* / tokenizer.chat_template (gguf_tokenizer.h).
// Identity: path, "gguf:<arch>", sha256 of the metadata (every key, type and value, in file order) and of the
// tensor index (name, ggml type, shape, sorted by name).
#include <memory>
#include <string>

#include "engine/model/config.h"
#include "engine/model/gguf_config.h"
#include "engine/model/model.h"

namespace specscope {

class GgufFile;

std::shared_ptr<const Model> load_gguf_model(const std::string& path, const LoadOptions& opts);

// Why load_gguf_model would refuse this file, judged from its metadata (config, tokenizer) and its tensor table
// (every tensor the loader binds: name, shape, type) without reading any weight; empty when it loads.
std::string gguf_load_problem(const GgufFile& g);

// The language model's parameters in the file, as Model::parameter_count reports them: every tensor but
// RoPE's per-frequency divisors (rope_freqs, rope_factors_long, rope_factors_short) and a vision tower's (llama.cpp's "v." and "mm." tensors, which
// Ollama's Gemma 3 files carry beside the text model).
uint64_t gguf_parameter_count(const GgufFile& g);

}  // namespace specscope
