#pragma once
// The architecture hyper-parameters of a Llama-family decoder, read from a Hugging Face config.json.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "engine/util/dtype.h"

namespace specscope {

struct RopeScaling {
  std::string type = "none";  // none | linear | llama3 | longrope | yarn | dynamic (dynamic: refused unless factor 1)
  float factor = 1.f;
  float low_freq_factor = 1.f;
  float high_freq_factor = 4.f;
  int original_max_position_embeddings = 8192;
  // LongRoPE (Phi-3.5, Phi-4-mini): a divisor per rotary frequency for contexts up to
  // original_max_position_embeddings (short_factor) and one for longer ones (long_factor), and a factor on every
  // cosine and sine (transformers' attention_factor, llama.cpp's rope.scaling.attn_factor).
  std::vector<float> short_factor, long_factor;
  float attention_factor = 1.f;
  // YaRN (GPT-OSS): each frequency is divided by `factor` below a linear ramp between the dimensions that turn
  // beta_fast and beta_slow times over original_max_position_embeddings, and kept above it; attention_factor (above)
  // multiplies every cosine and sine. truncate: the ramp's ends are floored and ceiled (transformers' default, and
  // llama.cpp always; GPT-OSS's configs say false).
  float beta_fast = 32.f, beta_slow = 1.f;
  bool truncate = true;
  // DeepSeek's mscale_all_dim (0: none): with YaRN, every attention score is further multiplied by
  // (0.1 * mscale_all_dim * ln(factor) + 1)^2 (transformers' yarn_apply_mscale; llama.cpp's rope.scaling.yarn_log_multiplier).
  float mscale_all_dim = 0.f;
};

// The most layers a config may declare: above any published model (Llama 3.1 405B has 126), and low enough that
// what a hostile config.json sizes from it stays small.
constexpr int kMaxConfigLayers = 1024;
// The most experts a mixture-of-experts layer may have: above any published model (Qwen3-Next has 512).
constexpr int kMaxExperts = 4096;

struct ModelConfig {
  // LlamaForCausalLM | MistralForCausalLM | MixtralForCausalLM | Qwen2ForCausalLM | Qwen2MoeForCausalLM |
  // Qwen3ForCausalLM | Qwen3MoeForCausalLM | Gemma2ForCausalLM | Gemma3ForCausalLM | GraniteForCausalLM | Phi3ForCausalLM |
  // GptOssForCausalLM | DeepseekV2ForCausalLM | DeepseekV3ForCausalLM | Olmo2ForCausalLM | Olmo3ForCausalLM |
  // SmolLM3ForCausalLM
  std::string architecture;
  // llama | mistral | mixtral | qwen2 | qwen2_moe | qwen3 | qwen3_moe | gemma2 | gemma3_text | granite | phi3 | gpt_oss |
  // deepseek_v2 | deepseek_v3 | olmo2 | olmo3 | smollm3
  std::string model_type;
  // The checkpoint's own architecture when it wraps the language model described here in a larger one: a
  // vision-language Gemma3ForConditionalGeneration (4B-27B), whose text model SpecScope runs; empty otherwise.
  std::string wrapper_architecture;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  // How many of each head's first dimensions RoPE rotates (the rest pass through): head_dim, or less with Phi's
  // partial_rotary_factor (Phi-4-mini: 96 of 128; llama.cpp's rope.dimension_count). Even; 0: head_dim.
  int rotary_dim = 0;
  int vocab_size = 0;
  int max_position_embeddings = 2048;
  float rms_norm_eps = 1e-6f;
  float rope_theta = 10000.f;
  RopeScaling rope_scaling;
  // GGUF files carry llama3-style scaling as per-frequency divisors (the rope_freqs.weight tensor, head_dim/2
  // values) instead of parameters; when not empty, rope_inv_freq divides by them instead of applying rope_scaling.
  std::vector<float> rope_freq_factors;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (Qwen2 always; Llama and GPT-OSS when attention_bias=true, with o's)
  bool mlp_bias = false;
  // Phi-3: q, k and v are one stored matrix (qkv_proj; GGUF attn_qkv) and gate and up another (gate_up_proj; GGUF
  // ffn_up, gate rows first). The loader binds each part as a view of its rows.
  bool fused_projections = false;
  // Qwen3 and Gemma 3: each head's query and key go through an RMSNorm over head_dim (weights q_norm, k_norm)
  // before RoPE. OLMo 2 and 3 (qk_norm_whole): one RMSNorm over the whole query projection (num_heads * head_dim
  // values, one mean over every head) and one over the whole key projection (num_kv_heads * head_dim).
  bool qk_norm = false;
  bool qk_norm_whole = false;
  // OLMo 2 and 3 have no norm before attention or before the MLP (pre_norms false: LayerWeights::input_norm and
  // post_attn_norm stay empty); each sublayer's output is normed before its residual add instead (sandwich_norms'
  // attn_out_norm and ffn_out_norm).
  bool pre_norms = true;
  // Gemma 3. The token embeddings are multiplied by embed_scale (sqrt(hidden_size)); attention scores by attn_scale
  // (query_pre_attn_scalar^-0.5) instead of 1/sqrt(head_dim); the attention's and the MLP's outputs each go through
  // an RMSNorm before their residual add (sandwich_norms; LayerWeights::attn_out_norm, ffn_out_norm); only the
  // layers marked in layer_sliding slide, and they use RoPE with rope_local_theta (unscaled).
  // Granite uses embed_scale and attn_scale too (its embedding_multiplier and attention_multiplier), and two scalars
  // of its own: each sublayer's output is multiplied by residual_scale before its residual add, and the logits are
  // divided by logit_scale (residual_multiplier and logits_scaling; llama.cpp's granite.residual_scale and
  // granite.logit_scale).
  float embed_scale = 1.f;
  float attn_scale = 0.f;  // 0: 1/sqrt(head_dim)
  float residual_scale = 1.f;
  float logit_scale = 1.f;
  // Gemma 2 (its sandwich norms, GELU, scaled embeddings and queries and alternating sliding layers as Gemma 3's
  // above, with no q/k norms and one RoPE): every attention score and every final logit is soft-capped,
  // cap * tanh(x / cap) (attn_logit_softcapping, final_logit_softcapping; llama.cpp's gemma2.*_logit_softcapping).
  // 0: not capped.
  float attn_soft_cap = 0.f;
  float final_soft_cap = 0.f;
  bool sandwich_norms = false;
  // Added to every RMSNorm weight at load. Gemma's norms scale by (1 + w) and its Hugging Face checkpoints store w
  // (1 here), while llama.cpp's converter stores 1 + w in GGUF files (0 there); either way every norm then computes
  // as Llama's.
  float norm_weight_offset = 0.f;
  std::vector<uint8_t> layer_sliding;  // per layer, 1 = sliding; empty: sliding_window (if set) slides every layer
  // SmolLM3: layers whose attention has no positional encoding at all (NoPE: no_rope_layers[l] == 0, every fourth
  // layer in the published 3B and always so in llama.cpp's smollm3 reader). Per layer, 1 = no RoPE; empty: RoPE in
  // every layer.
  std::vector<uint8_t> layer_no_rope;
  float rope_local_theta = 0.f;        // > 0: the sliding layers' RoPE theta
  std::optional<int> sliding_window;  // Mistral; applied when shorter than the context
  std::string hidden_act = "silu";  // silu | gelu_pytorch_tanh (Gemma)
  // Mixture of experts (Mixtral, Qwen2-MoE, Qwen3-MoE; llama.cpp's expert_count files): in the layers marked in moe_layers, a
  // token's MLP is the sum of experts_per_token of num_experts SwiGLU experts (each expert_ffn wide), those with the
  // highest probabilities in a softmax of the router's logits, each weighted by its probability (renormalized over
  // the chosen ones when norm_topk_prob: always in Mixtral and llama.cpp). The other layers have the dense MLP
  // (intermediate_size wide): Qwen3-MoE's mlp_only_layers and decoder_sparse_step. num_experts 0: a dense model.
  int num_experts = 0;
  int experts_per_token = 0;
  int expert_ffn = 0;
  bool norm_topk_prob = true;
  // Qwen2-MoE's shared expert: in every expert layer one more SwiGLU MLP (shared_expert_ffn wide) runs on every token,
  // its output times sigmoid(shared_expert_gate . x) added after the routed experts'. 0: none (Mixtral, Qwen3-MoE).
  // DeepSeek's shared experts (n_shared_experts of moe_intermediate_size, one MLP as wide as all of them) have no gate:
  // their output is added as it is.
  int shared_expert_ffn = 0;
  bool shared_expert_gated = true;
  std::vector<uint8_t> moe_layers;  // per layer, 1 = experts; empty when num_experts is 0
  // GPT-OSS's experts: the router and each expert's gate, up and down products have biases (LayerWeights::router_bias,
  // ExpertWeights::b_*), and the activation is its clamped SwiGLU when swiglu_limit > 0: g = min(gate, limit),
  // u = clamp(up, -limit, limit), out = (u + 1) * g * sigmoid(swiglu_alpha * g) (transformers' GptOssExperts,
  // llama.cpp's swiglu_oai).
  bool expert_bias = false;
  float swiglu_limit = 0.f, swiglu_alpha = 1.702f;
  // GPT-OSS: every attention head has a learned sink logit (LayerWeights::sinks), one more term in its softmax's
  // denominator that takes weight from the keys and adds no value (transformers' eager_attention_forward s_aux,
  // llama.cpp's attn_sinks).
  bool attention_sinks = false;
  // DeepSeek-V2/V3's multi-head latent attention (MLA; DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, llama.cpp's
  // deepseek2): each token's keys and values are one latent of kv_lora_rank values (kv_a_proj, then an RMSNorm) plus
  // one rotary key of rotary_dim values shared by every head; a head's key is kv_b's expansion of the latent (its
  // first head_dim - rotary_dim values, "nope") followed by the shared rotary key, its value kv_b's other v_head_dim
  // values. Queries come from q_proj, or with q_lora_rank > 0 from q_b(norm(q_a(x))). RoPE turns each head's last
  // rotary_dim values in interleaved pairs (2i, 2i + 1). The CPU caches the latent and the rotary key and folds kv_b
  // into the query and the output instead (cpu_mla.cpp), as llama.cpp does. kv_lora_rank 0: not MLA.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int v_head_dim = 0;
  // DeepSeek's experts (parse_moe): the router's scores are a softmax (V2) or sigmoids (V3: expert_sigmoid); the
  // experts are chosen among the expert_groups_used best of expert_groups groups (V2's group_limited_greedy ranks a
  // group by its best score, V3 by its two best biased ones: groups_by_top_two); V3 adds a per-expert bias
  // (LayerWeights::expert_choice_bias) to the scores it chooses by, not to the weights; the chosen weights are
  // multiplied by routed_scaling. 0 groups: no groups.
  bool expert_sigmoid = false;
  int expert_groups = 0, expert_groups_used = 0;
  bool groups_by_top_two = false;
  float routed_scaling = 1.f;
  DType torch_dtype = DType::F32;
  std::optional<int> bos_token_id;
  std::vector<int> eos_token_ids;

  // Parses and validates; throws InputError naming `path` for anything missing, inconsistent or unsupported.
  static ModelConfig from_json_text(const std::string& text, const std::string& path);
  static ModelConfig from_file(const std::string& path);
  std::string summary() const;

  int rotary_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  bool mla() const { return kv_lora_rank > 0; }
  int nope_dim() const { return head_dim - rotary_dims(); }  // MLA: each head's key values without RoPE
  int value_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
  // What a CPU context caches of each token and layer, in floats: its keys (every KV head's, or with MLA the latent
  // and the rotary key) and its values (as many, or with MLA the latent alone).
  int cache_key_dim() const { return mla() ? kv_lora_rank + rotary_dims() : num_kv_heads * head_dim; }
  int cache_value_dim() const { return mla() ? kv_lora_rank : num_kv_heads * head_dim; }
  int window_of(int layer) const;  // the layer's sliding window; 0: it attends to the whole context
  bool rope_in(int layer) const { return layer_no_rope.empty() || !layer_no_rope[size_t(layer)]; }
  bool local_rope(int layer) const { return rope_local_theta > 0.f && window_of(layer) > 0; }
  float attention_scale() const;  // what scores are multiplied by
  bool gelu() const { return hidden_act == "gelu_pytorch_tanh"; }
  bool moe() const { return num_experts > 0; }
  bool moe_layer(int layer) const { return !moe_layers.empty() && moe_layers[size_t(layer)] != 0; }
  int expert_layers() const { return int(std::count(moe_layers.begin(), moe_layers.end(), uint8_t(1))); }
  int qk_norm_width(bool keys) const { return qk_norm_whole ? (keys ? num_kv_heads : num_heads) * head_dim : head_dim; }
  // Whether the forward uses any of Gemma 2's, Gemma 3's, Granite's, OLMo's or SmolLM3's parts above, beyond a
  // Llama's (model cards and tests; the CUDA backend gates Gemma 3's own parts separately, kernels/cuda_backend.cpp).
  bool extended_forward() const;
};

// RoPE inverse frequencies (rotary_dim/2 of them) with the configured scaling applied; `local`: the sliding layers'
// (rope_local_theta, unscaled). LongRoPE's divisors depend on the context's size, n_ctx: its long factors when
// n_ctx exceeds original_max_position_embeddings, else its short ones. That is llama.cpp's choice (by the context
// it was given); transformers switches to the long factors once a sequence passes that length, which agrees
// for every sequence that fits a context of that size.
std::vector<float> rope_inv_freq(const ModelConfig& c, bool local = false, int n_ctx = 0);
// Whether a context of n_ctx positions takes LongRoPE's long factors (rope_inv_freq's choice, above).
bool takes_long_rope_factors(const ModelConfig& c, int n_ctx);
// What every RoPE cosine and sine is multiplied by: LongRoPE's or YaRN's attention factor, else 1.
float rope_attention_factor(const ModelConfig& c, bool local = false);

}  // namespace specscope
