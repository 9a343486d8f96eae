#include "engine/model/gguf_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "engine/formats/gguf.h"
#include "engine/util/error.h"

namespace specscope {

namespace {

// A size from the metadata: an integer in [lo, hi]. The bounds are far past any released model; a value outside
// them is a corrupt or hostile file, refused before anything is allocated from it.
// A missing key with a default takes the default, which is range-checked the same way (defaults are derived from
// other keys or from the token list, so they can be absurd too).
int size_key(const GgufFile& g, const std::string& key, int64_t lo, int64_t hi, std::optional<int64_t> dflt = {}) {
  const bool present = g.has(key);
  if (!present && !dflt) throw InputError(g.path(), "missing metadata key '" + key + "'");
  const int64_t v = present ? g.get_int(key) : *dflt;
  if (v < lo || v > hi)
    throw InputError(g.path(), "metadata key '" + key + "' is " + std::to_string(v) + (present ? "" : " (derived)") +
                                   " (expected " + std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return int(v);
}

double float_key(const GgufFile& g, const std::string& key, double lo, double hi, std::optional<double> dflt = {}) {
  if (!g.has(key)) {
    if (dflt) return *dflt;
    throw InputError(g.path(), "missing metadata key '" + key + "'");
  }
  const double v = g.get_float(key);
  if (!(v >= lo && v <= hi))
    throw InputError(g.path(), "metadata key '" + key + "' is " + std::to_string(v) + " (expected " +
                                   std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return v;
}

// Which layers slide (attention.sliding_window_pattern: one bool per layer, or N for every layer but each N-th;
// `every` when absent), as llama.cpp's load_swa_pattern reads it.
void sliding_layers_from_gguf(const GgufFile& g, ModelConfig& c, const std::string& p, int every_default) {
  const std::string key = p + "attention.sliding_window_pattern";
  c.layer_sliding.assign(size_t(c.num_layers), 0);
  const GgufValue* v = g.find(key);
  if (v && v->type == GgufValueType::ARRAY) {
    const std::vector<bool> pattern = g.get_bool_array(key);
    if (int(pattern.size()) != c.num_layers)
      throw InputError(g.path(), "metadata key '" + key + "' has " + std::to_string(pattern.size()) + " entries for " +
                                     std::to_string(c.num_layers) + " layers");
    for (int l = 0; l < c.num_layers; ++l) c.layer_sliding[size_t(l)] = pattern[size_t(l)];
  } else {
    const int every = size_key(g, key, 1, 1 << 20, every_default);
    for (int l = 0; l < c.num_layers; ++l) c.layer_sliding[size_t(l)] = (l + 1) % every != 0;
  }
}

// What llama.cpp's gemma2 and gemma3 readers take from the file or assume (src/models/gemma2.cpp, gemma3.cpp): which
// layers slide (attention.sliding_window_pattern: one bool per layer, or N for every layer but each N-th; default 2
// for gemma2, 6 for gemma3; gemma2's window is 4096 when the file names none) and their RoPE theta
// (rope.freq_base_swa; gemma3's default 10000, gemma2's the other layers' theta); embeddings times sqrt(hidden);
// attention scaled by 1/sqrt(head_dim), or 1/sqrt(hidden / heads) for the 27B models (46 layers in Gemma 2, 62 in
// Gemma 3: their query_pre_attn_scalar); the soft caps (gemma2: scores 50 and logits 30 unless the file says
// otherwise; gemma3: the logits only, and only when set).
void gemma_from_gguf(const GgufFile& g, ModelConfig& c, bool gemma2) {
  const std::string p = gemma2 ? "gemma2." : "gemma3.";
  if (gemma2 && !c.sliding_window) c.sliding_window = 4096;
  c.layer_sliding.assign(size_t(c.num_layers), 0);
  if (c.sliding_window) {
    sliding_layers_from_gguf(g, c, p, gemma2 ? 2 : 6);
    const double local_theta = float_key(g, p + "rope.freq_base_swa", 1.0, 1e12, gemma2 ? 0.0 : 10000.0);
    if (local_theta > 0.0) c.rope_local_theta = float(local_theta);
  }
  c.embed_scale = std::sqrt(float(c.hidden_size));
  const bool is_27b = c.num_layers == (gemma2 ? 46 : 62);
  c.attn_scale = 1.f / std::sqrt(float(is_27b ? c.hidden_size / c.num_heads : c.head_dim));
  // llama.cpp's gemma2 graph divides by both caps unconditionally: a zero one is a broken file there; gemma3's 0 is
  // none.
  c.final_soft_cap = float(float_key(g, p + "final_logit_softcapping", gemma2 ? 1e-6 : 0.0, 1e6, gemma2 ? 30.0 : 0.0));
  if (gemma2) c.attn_soft_cap = float(float_key(g, p + "attn_logit_softcapping", 1e-6, 1e6, 50.0));
}

// What llama.cpp's granite reader takes (src/models/granite.cpp): logit_scale is required; the other three may be
// missing, and a missing or zero one leaves that part unscaled (attention: 1/sqrt(head_dim)), as llama.cpp's graph
// skips a zero scale.
void granite_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = "granite.";
  auto optional_scale = [&](const std::string& key) { return float(float_key(g, p + key, 0.0, 1e6, 0.0)); };
  c.logit_scale = float(float_key(g, p + "logit_scale", 1e-6, 1e6));
  const float embedding = optional_scale("embedding_scale"), residual = optional_scale("residual_scale");
  c.embed_scale = embedding > 0.f ? embedding : 1.f;
  c.residual_scale = residual > 0.f ? residual : 1.f;
  c.attn_scale = optional_scale("attention.scale");  // 0: 1/sqrt(head_dim)
}

// What LongRoPE needs besides its two factor lists (tensors, bound with the weights: gguf_model.cpp): the pretrained
// context that picks between them, and the factor on every cosine and sine (llama.cpp's converter writes
// sqrt(1 + ln(s) / ln(original)) for s = context_length / original; 1 when the key is absent, as llama.cpp reads it).
void phi3_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = "phi3.";
  c.rope_scaling.original_max_position_embeddings =
      size_key(g, p + "rope.scaling.original_context_length", 2, 1 << 24, c.max_position_embeddings);
  c.rope_scaling.attention_factor = float(float_key(g, p + "rope.scaling.attn_factor", 1e-3, 1e3, 1.0));
}

// A mixture of experts, as llama.cpp reads one (src/models/llama.cpp for Mixtral, qwen2moe.cpp, qwen3moe.cpp):
// expert_count experts in every layer, expert_used_count of them per token, chosen by a softmax; renormalized but in
// qwen2moe (its graph passes norm_w false, as Qwen2-MoE's norm_topk_prob is); an expert is
// expert_feed_forward_length wide in qwen2moe and qwen3moe (else feed_forward_length / expert_used_count, as llama.cpp
// falls back) and in gpt-oss (else feed_forward_length, its experts' width), feed_forward_length in llama's. qwen2moe's
// shared expert is expert_shared_feed_forward_length wide (else feed_forward_length). qwen2moe, qwen3moe and gpt-oss
// must have experts; llama may (Mixtral); the others may not.
void experts_from_gguf(const GgufFile& g, ModelConfig& c, const std::string& arch) {
  const std::string p = arch + ".";
  const bool gpt_oss = arch == "gpt-oss", required = arch == "qwen3moe" || arch == "qwen2moe" || gpt_oss;
  if (!required && g.get_int(p + "expert_count", 0) == 0) return;
  if (arch != "llama" && !required)
    throw InputError(g.path(), "mixture-of-experts " + arch + " models (" + p + "expert_count > 0) are not supported");
  c.num_experts = size_key(g, p + "expert_count", 1, kMaxExperts);
  c.experts_per_token = size_key(g, p + "expert_used_count", 1, c.num_experts);
  c.expert_ffn = required ? size_key(g, p + "expert_feed_forward_length", 1, 1 << 20,
                                     gpt_oss ? c.intermediate_size : c.intermediate_size / c.experts_per_token)
                          : c.intermediate_size;
  c.norm_topk_prob = arch != "qwen2moe";
  if (arch == "qwen2moe")
    c.shared_expert_ffn = size_key(g, p + "expert_shared_feed_forward_length", 1, 1 << 20, c.intermediate_size);
  c.moe_layers.assign(size_t(c.num_layers), 1);
  if (arch == "llama") {
    c.architecture = "MixtralForCausalLM";
    c.model_type = "mixtral";
  }
}

// What llama.cpp's deepseek2 reader takes (src/models/deepseek2.cpp; DeepSeek-V2/V3, Moonlight, Kimi, GLM-4.7-Flash):
// MLA's ranks and each head's widths (attention.key_length_mla / value_length_mla: a head's query-key and value width;
// files from before 2025 have none, and key_length / value_length are those widths), the rotary part
// (rope.dimension_count), the experts (expert_feed_forward_length wide; expert_shared_count of them shared, ungated;
// leading_dense_block_count dense layers first; scores by expert_gating_func, 1 softmax (the default, but GLM-4.7-Flash's
// 47/48 layers of a 154,880 vocabulary: sigmoid) or 2 sigmoid; expert_weights_norm; expert_weights_scale, 1 when
// absent; expert_group_count groups ranked by their two best scores, as llama.cpp's build_moe_ffn does for every
// architecture), and YaRN's mscale_all_dim (rope.scaling.yarn_log_multiplier, written as 0.1 of it): llama.cpp's
// graph scales the scores by (1 + 0.1 mscale_all_dim ln factor)^2 / sqrt(head width) and cancels its usual factor on
// the cosines and sines, leaving rope.scaling.attn_factor (1 when absent).
void deepseek2_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = "deepseek2.";
  // A multi-token-prediction block kept after the layers (GLM-4.7-Flash's files) is counted in block_count; llama.cpp
  // runs the layers before it, and so does SpecScope.
  c.num_layers -= size_key(g, p + "nextn_predict_layers", 0, c.num_layers - 1, 0);
  const bool mla_keys = g.has(p + "attention.key_length_mla");
  c.kv_lora_rank = size_key(g, p + "attention.kv_lora_rank", 1, 1 << 16);
  c.q_lora_rank = size_key(g, p + "attention.q_lora_rank", 0, 1 << 16, 0);
  c.head_dim = size_key(g, p + (mla_keys ? "attention.key_length_mla" : "attention.key_length"), 2, 4096);
  c.v_head_dim = size_key(g, p + (mla_keys ? "attention.value_length_mla" : "attention.value_length"), 1, 4096);
  c.rotary_dim = size_key(g, p + "rope.dimension_count", 2, c.head_dim - 1);
  if (c.rotary_dim % 2) throw InputError(g.path(), p + "rope.dimension_count must be even");
  if (mla_keys && (size_key(g, p + "attention.key_length", 1, 1 << 20) != c.kv_lora_rank + c.rotary_dim ||
                   size_key(g, p + "attention.value_length", 1, 1 << 20) != c.kv_lora_rank))
    throw InputError(g.path(), p + "attention.key_length / value_length are not the latent's widths (kv_lora_rank + "
                                   "rope.dimension_count and kv_lora_rank)");
  c.num_kv_heads = c.num_heads;  // the file says 1: the latent, shared by every head
  c.num_experts = size_key(g, p + "expert_count", 1, kMaxExperts);
  c.experts_per_token = size_key(g, p + "expert_used_count", 1, c.num_experts);
  c.expert_ffn = size_key(g, p + "expert_feed_forward_length", 1, 1 << 20);
  c.shared_expert_ffn = size_key(g, p + "expert_shared_count", 0, 64) * c.expert_ffn;
  c.shared_expert_gated = false;
  const int lead = size_key(g, p + "leading_dense_block_count", 0, c.num_layers, 0);
  c.moe_layers.assign(size_t(c.num_layers), 1);
  for (int l = 0; l < lead; ++l) c.moe_layers[size_t(l)] = 0;
  const int64_t vocab = g.has("tokenizer.ggml.tokens") ? int64_t(g.array_size("tokenizer.ggml.tokens")) : 0;
  const bool glm_lite = (c.num_layers == 47 || c.num_layers == 48) && vocab == 154880;
  const int gating = size_key(g, p + "expert_gating_func", 1, 2, glm_lite ? 2 : 1);
  c.expert_sigmoid = gating == 2;
  c.norm_topk_prob = g.has(p + "expert_weights_norm") && g.get_bool(p + "expert_weights_norm");
  c.routed_scaling = float(float_key(g, p + "expert_weights_scale", 1e-6, 1e6, 1.0));
  const int groups = size_key(g, p + "expert_group_count", 0, c.num_experts, 0);
  if (groups > 1) {
    if (c.num_experts % groups || c.num_experts / groups < 2)
      throw InputError(g.path(), p + "expert_group_count does not split the experts into groups of two or more");
    c.expert_groups = groups;
    c.expert_groups_used = size_key(g, p + "expert_group_used_count", 1, groups);
    c.groups_by_top_two = true;
    if (c.experts_per_token > c.expert_groups_used * (c.num_experts / groups))
      throw InputError(g.path(), p + "expert_used_count is more than the used groups hold");
  }
  c.architecture = c.expert_sigmoid ? "DeepseekV3ForCausalLM" : "DeepseekV2ForCausalLM";
  c.model_type = c.expert_sigmoid ? "deepseek_v3" : "deepseek_v2";
  auto& r = c.rope_scaling;
  if (r.type == "yarn") {
    const double key = float_key(g, p + "rope.scaling.attn_factor", 1e-6, 1e6, 1.0);
    const double log_mul = float_key(g, p + "rope.scaling.yarn_log_multiplier", 0.0, 1e3, 0.0);  // 0.1 mscale_all_dim
    r.attention_factor = float(key);
    r.mscale_all_dim = float(log_mul / 0.1);
    const double m = key * (1.0 + log_mul * std::log(double(r.factor)));
    c.attn_scale = float(m * m / std::sqrt(double(c.head_dim)));
  }
}

// What llama.cpp's gpt-oss reader takes beyond its experts (experts_from_gguf; src/models/openai-moe.cpp,
// convert_hf_to_gguf's GptOssModel): biases on q/k/v/o, the router and the experts; a sink per head; sliding layers
// alternating from layer 0 (sliding_window_pattern, default 2). Its clamped SwiGLU's constants are llama.cpp's fixed 7
// and 1.702.
void gpt_oss_from_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = "gpt-oss.";
  c.expert_bias = true;
  c.swiglu_limit = 7.f;
  c.swiglu_alpha = 1.702f;
  c.attention_sinks = true;
  c.attention_bias = true;
  if (!c.sliding_window) throw InputError(g.path(), "missing metadata key '" + p + "attention.sliding_window'");
  sliding_layers_from_gguf(g, c, p, 2);
}

// What llama.cpp's olmo2 reader takes (src/models/olmo2.cpp; OLMo 2 and OLMo 3 share it): with a sliding window, an
// OLMo 3 whose layers slide but each fourth (attention.sliding_window_pattern: one bool per layer, or N) with
// unscaled RoPE at rope.freq_base_swa (default: the other layers' theta); without one, OLMo 2.
void olmo2_from_gguf(const GgufFile& g, ModelConfig& c) {
  if (!c.sliding_window) return;
  const std::string p = "olmo2.";
  c.architecture = "Olmo3ForCausalLM";
  c.model_type = "olmo3";
  sliding_layers_from_gguf(g, c, p, 4);
  c.rope_local_theta = float(float_key(g, p + "rope.freq_base_swa", 1.0, 1e12, double(c.rope_theta)));
}

// YaRN as llama.cpp reads it: rope.scaling.factor over rope.scaling.original_context_length, the ramp's betas
// (yarn_beta_fast / yarn_beta_slow, default 32 and 1), its ends floored and ceiled (but GPT-OSS's), and every cosine and
// sine times rope.scaling.attn_factor (default 1) * (1 + 0.1 ln factor): llama_context sets yarn_attn_factor to
// get_mscale(factor) / (1 + 0.1 ln factor) times that key, and ggml's rope_yarn multiplies by 1 + 0.1 ln factor.
void yarn_from_gguf(const GgufFile& g, ModelConfig& c, const std::string& p) {
  auto& r = c.rope_scaling;
  r.type = "yarn";
  r.factor = float(float_key(g, p + "rope.scaling.factor", 1e-3, 1e6));
  r.original_max_position_embeddings =
      size_key(g, p + "rope.scaling.original_context_length", 1, 1 << 24, c.max_position_embeddings);
  r.beta_fast = float(float_key(g, p + "rope.scaling.yarn_beta_fast", 1e-6, 1e6, 32.0));
  r.beta_slow = float(float_key(g, p + "rope.scaling.yarn_beta_slow", 1e-6, 1e6, 1.0));
  // GPT-OSS's own config says truncate false (transformers and OpenAI's reference code leave the ramp's ends as they
  // are); llama.cpp floors and ceils them for every model, which this follows for the others (transformers' default).
  r.truncate = p != "gpt-oss.";
  const double mscale = r.factor > 1.f ? 1.0 + 0.1 * std::log(double(r.factor)) : 1.0;
  r.attention_factor = float(float_key(g, p + "rope.scaling.attn_factor", 1e-6, 1e6, 1.0) * mscale);
}

}  // namespace

ModelConfig config_from_gguf(const GgufFile& g, bool tied) {
  const std::string& file = g.path();
  const std::string arch = g.get_string("general.architecture");
  ModelConfig c;
  if (arch == "llama") {
    c.architecture = "LlamaForCausalLM";
    c.model_type = "llama";
  } else if (arch == "qwen2") {
    c.architecture = "Qwen2ForCausalLM";
    c.model_type = "qwen2";
    c.attention_bias = true;
  } else if (arch == "qwen3") {
    c.architecture = "Qwen3ForCausalLM";
    c.model_type = "qwen3";
    c.qk_norm = true;
  } else if (arch == "qwen2moe") {
    c.architecture = "Qwen2MoeForCausalLM";
    c.model_type = "qwen2_moe";
    c.attention_bias = true;
  } else if (arch == "qwen3moe") {
    c.architecture = "Qwen3MoeForCausalLM";
    c.model_type = "qwen3_moe";
    c.qk_norm = true;
  } else if (arch == "gemma2") {
    c.architecture = "Gemma2ForCausalLM";
    c.model_type = "gemma2";
    c.sandwich_norms = true;
    c.hidden_act = "gelu_pytorch_tanh";
  } else if (arch == "gemma3") {
    c.architecture = "Gemma3ForCausalLM";
    c.model_type = "gemma3_text";
    c.qk_norm = true;
    c.sandwich_norms = true;
    c.hidden_act = "gelu_pytorch_tanh";
  } else if (arch == "granite") {
    c.architecture = "GraniteForCausalLM";
    c.model_type = "granite";
  } else if (arch == "phi3") {
    c.architecture = "Phi3ForCausalLM";
    c.model_type = "phi3";
    c.fused_projections = true;
  } else if (arch == "gpt-oss") {
    c.architecture = "GptOssForCausalLM";
    c.model_type = "gpt_oss";
  } else if (arch == "deepseek2") {
    c.architecture = "DeepseekV2ForCausalLM";  // or V3, by its expert scores (deepseek2_from_gguf)
    c.model_type = "deepseek_v2";
  } else if (arch == "smollm3") {
    c.architecture = "SmolLM3ForCausalLM";
    c.model_type = "smollm3";
  } else if (arch == "olmo2") {
    c.architecture = "Olmo2ForCausalLM";  // or OLMo 3, by its sliding window (olmo2_from_gguf)
    c.model_type = "olmo2";
    c.qk_norm = c.qk_norm_whole = true;
    c.pre_norms = false;
    c.sandwich_norms = true;
  } else {
    throw InputError(file, "unsupported architecture '" + arch + "' (supported: llama, qwen2, qwen2moe, qwen3, qwen3moe, gemma2, gemma3, granite, phi3, gpt-oss, deepseek2, olmo2, smollm3)");
  }
  const bool deepseek2 = arch == "deepseek2";
  const std::string p = arch + ".";
  c.hidden_size = size_key(g, p + "embedding_length", 1, 1 << 16);
  c.num_layers = size_key(g, p + "block_count", 1, kMaxConfigLayers);
  c.intermediate_size = size_key(g, p + "feed_forward_length", 1, 1 << 20);
  c.num_heads = size_key(g, p + "attention.head_count", 1, 1024);
  c.num_kv_heads = size_key(g, p + "attention.head_count_kv", 1, 1024, c.num_heads);
  c.max_position_embeddings = size_key(g, p + "context_length", 1, 1 << 24);
  if (c.num_heads % c.num_kv_heads)
    throw InputError(file, p + "attention.head_count is not a multiple of " + p + "attention.head_count_kv");
  if (!deepseek2 && !g.has(p + "attention.key_length") && c.hidden_size % c.num_heads)
    throw InputError(file, p + "embedding_length is not a multiple of " + p + "attention.head_count");
  c.head_dim = deepseek2 ? 0 : size_key(g, p + "attention.key_length", 2, 4096, c.hidden_size / c.num_heads);
  if (c.head_dim % 2) throw InputError(file, p + "attention.key_length must be even");
  if (!deepseek2 && size_key(g, p + "attention.value_length", 1, 4096, c.head_dim) != c.head_dim)
    throw InputError(file, p + "attention.value_length differs from key_length (not supported)");
  if (deepseek2) {
    // its widths, with the experts and YaRN's scale, once the common keys below are read (deepseek2_from_gguf)
  } else if (const int rotary = size_key(g, p + "rope.dimension_count", 1, 4096, c.head_dim); rotary != c.head_dim) {
    if (arch != "phi3") throw InputError(file, "partial RoPE (" + p + "rope.dimension_count != head size) is not supported");
    if (rotary % 2 || rotary > c.head_dim)
      throw InputError(file, p + "rope.dimension_count is " + std::to_string(rotary) + " (an even count up to the head size " +
                                 std::to_string(c.head_dim) + " is needed)");
    c.rotary_dim = rotary;  // Phi-4-mini's partial rotary
  }
  // The vocabulary: the explicit key, else the token list's length (older converters write no vocab_size).
  const int64_t n_tokens = g.has("tokenizer.ggml.tokens") ? int64_t(g.array_size("tokenizer.ggml.tokens")) : 0;
  c.vocab_size = size_key(g, p + "vocab_size", 1, 1 << 22, n_tokens > 0 ? std::optional<int64_t>(n_tokens) : std::nullopt);
  c.rms_norm_eps = float(float_key(g, p + "attention.layer_norm_rms_epsilon", 1e-12, 1e-1));
  c.rope_theta = float(float_key(g, p + "rope.freq_base", 1.0, 1e12, 10000.0));
  const std::string scaling = g.get_string(p + "rope.scaling.type", "none");
  if (scaling == "linear") {
    c.rope_scaling.type = "linear";
    c.rope_scaling.factor = float(float_key(g, p + "rope.scaling.factor", 1e-3, 1e6));
  } else if (scaling == "longrope" && arch == "phi3") {
    // Its factor lists are tensors (bound with the weights); the type key itself adds nothing.
  } else if (scaling == "yarn") {
    yarn_from_gguf(g, c, p);
  } else if (scaling != "none") {
    throw InputError(file, "unsupported " + p + "rope.scaling.type '" + scaling + "' (supported: none, linear, yarn)");
  } else if (g.has(p + "rope.scale_linear")) {  // the older key
    const double f = float_key(g, p + "rope.scale_linear", 1e-3, 1e6);
    if (f != 1.0) {
      c.rope_scaling.type = "linear";
      c.rope_scaling.factor = float(f);
    }
  }
  // llama.cpp's converter writes 0 for a Phi model without a window (Phi-4's); for the other architectures a window
  // of no keys is a broken file.
  if (g.has(p + "attention.sliding_window"))
    if (const int w = size_key(g, p + "attention.sliding_window", arch == "phi3" ? 0 : 1, 1 << 24); w > 0) c.sliding_window = w;
  if (deepseek2) deepseek2_from_gguf(g, c);
  else experts_from_gguf(g, c, arch);
  if (arch == "phi3") phi3_from_gguf(g, c);
  if (arch == "gemma2" || arch == "gemma3") gemma_from_gguf(g, c, arch == "gemma2");
  if (arch == "granite") granite_from_gguf(g, c);
  if (arch == "gpt-oss") gpt_oss_from_gguf(g, c);
  if (arch == "olmo2") olmo2_from_gguf(g, c);
  if (arch == "smollm3") {  // llama.cpp's smollm3 reader: every fourth layer without RoPE, whatever the file says
    c.layer_no_rope.assign(size_t(c.num_layers), 0);
    for (int l = 0; l < c.num_layers; ++l) c.layer_no_rope[size_t(l)] = (l + 1) % 4 == 0;
  }
  c.tie_word_embeddings = tied;
  c.torch_dtype = DType::F32;
  auto token_key = [&](const char* key) -> std::optional<int> {
    if (!g.has(key)) return std::nullopt;
    const int64_t v = g.get_int(key);
    if (v < 0) return std::nullopt;
    if (v >= c.vocab_size) throw InputError(file, std::string(key) + " is outside the vocabulary");
    return int(v);
  };
  c.bos_token_id = token_key("tokenizer.ggml.bos_token_id");
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (auto id = token_key(key); id && std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), *id) == c.eos_token_ids.end())
      c.eos_token_ids.push_back(*id);
  return c;
}

}  // namespace specscope
