#include "engine/model/config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "engine/util/error.h"
#include "engine/util/mapped_file.h"

namespace specscope {
using nlohmann::json;

namespace {

int get_int(const json& j, const char* key, const std::string& path, std::optional<int> def = std::nullopt) {
  if (!j.contains(key) || j[key].is_null()) {
    if (def) return *def;
    throw InputError(path, std::string("missing required field '") + key + "'");
  }
  if (!j[key].is_number_integer()) throw InputError(path, std::string("field '") + key + "' must be an integer");
  int64_t v = j[key].get<int64_t>();
  if (v < 0 || v > (int64_t(1) << 30)) throw InputError(path, std::string("field '") + key + "' is out of range");
  return int(v);
}

float get_float(const json& j, const char* key, const std::string& path, float def) {
  if (!j.contains(key) || j[key].is_null()) return def;
  if (!j[key].is_number()) throw InputError(path, std::string("field '") + key + "' must be a number");
  return j[key].get<float>();
}

// A scale only a positive, finite number makes sense of (a zero one divides by zero, a negative one has no root).
float get_positive_float(const json& j, const char* key, const std::string& path, float def) {
  const float v = get_float(j, key, path, def);
  if (!(v > 0.f) || !std::isfinite(v)) throw InputError(path, std::string("field '") + key + "' must be a positive number");
  return v;
}

// A switch: absent or null, def; otherwise it must be a boolean.
bool get_bool(const json& j, const char* key, const std::string& path, bool def) {
  if (!j.contains(key) || j[key].is_null()) return def;
  if (!j[key].is_boolean()) throw InputError(path, std::string("field '") + key + "' must be true or false");
  return j[key].get<bool>();
}

// YaRN's magnitude term for a scale of `factor`: 0.1 m ln(factor) + 1, or 1 when the context is not stretched
// (transformers' get_mscale / yarn_get_mscale).
double yarn_mscale(float factor, double m) { return factor <= 1.f ? 1.0 : 0.1 * m * std::log(double(factor)) + 1.0; }

DType parse_torch_dtype(const json& j) {
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (j.contains(key) && j[key].is_string()) {
      auto s = j[key].get<std::string>();
      if (s == "bfloat16") return DType::BF16;
      if (s == "float16") return DType::F16;
      return DType::F32;
    }
  }
  return DType::F32;
}

// One LongRoPE factor list: a divisor per rotary frequency, each positive and finite.
std::vector<float> longrope_factors(const json& rs, const char* key, int count, const std::string& path) {
  if (!rs.contains(key) || !rs[key].is_array())
    throw InputError(path, std::string("longrope scaling without a '") + key + "' list");
  const json& a = rs[key];
  if (int(a.size()) != count)
    throw InputError(path, std::string("'") + key + "' has " + std::to_string(a.size()) + " values, the rotary " +
                               "dimensions imply " + std::to_string(count));
  std::vector<float> f;
  for (const json& x : a) {
    if (!x.is_number() || !(x.get<float>() > 0.f) || !std::isfinite(x.get<float>()))
      throw InputError(path, std::string("'") + key + "' holds a value that is not a positive number");
    f.push_back(x.get<float>());
  }
  return f;
}

// LongRoPE as transformers' _compute_longrope_parameters reads it: the two factor lists, the pretrained context
// (the scaling's own key, else the config's top-level one, as Phi-3's), and the attention factor, when not given,
// sqrt(1 + ln(s) / ln(original)) for s = factor, or max_position_embeddings / original without one (1 when s <= 1).
void parse_longrope(const json& j, const json& rs, ModelConfig& c, const std::string& path) {
  auto& r = c.rope_scaling;
  r.type = "longrope";
  const int count = c.rotary_dims() / 2;
  r.short_factor = longrope_factors(rs, "short_factor", count, path);
  r.long_factor = longrope_factors(rs, "long_factor", count, path);
  r.original_max_position_embeddings = get_int(
      rs, "original_max_position_embeddings", path, get_int(j, "original_max_position_embeddings", path, c.max_position_embeddings));
  if (r.original_max_position_embeddings < 2)
    throw InputError(path, "field 'original_max_position_embeddings' must be at least 2");
  const double s = rs.contains("factor") && !rs["factor"].is_null()
                       ? double(get_positive_float(rs, "factor", path, 1.f))
                       : double(c.max_position_embeddings) / r.original_max_position_embeddings;
  r.factor = float(s);
  r.attention_factor = s <= 1.0 ? 1.f : float(std::sqrt(1.0 + std::log(s) / std::log(double(r.original_max_position_embeddings))));
  if (rs.contains("attention_factor") && !rs["attention_factor"].is_null())
    r.attention_factor = get_positive_float(rs, "attention_factor", path, 1.f);
}

// YaRN as transformers' _compute_yarn_parameters reads it (GPT-OSS: factor 32 over 4,096 positions, truncate false):
// factor (absent: max_position_embeddings / original_max_position_embeddings), beta_fast and beta_slow (absent or 0:
// 32 and 1), truncate (absent: true), and the attention factor: given, else 0.1 * ln(factor) + 1 (DeepSeek's
// mscale and mscale_all_dim, when both are set, make it the ratio of two such terms).
void parse_yarn(const json& rs, ModelConfig& c, const std::string& path) {
  auto& r = c.rope_scaling;
  r.original_max_position_embeddings = get_int(rs, "original_max_position_embeddings", path);
  if (r.original_max_position_embeddings < 1) throw InputError(path, "yarn original_max_position_embeddings must be positive");
  r.factor = get_positive_float(rs, "factor", path,
                                float(c.max_position_embeddings) / float(r.original_max_position_embeddings));
  auto or_default = [&](const char* key, float def) {
    const float v = get_float(rs, key, path, def);
    if (!std::isfinite(v) || v < 0.f) throw InputError(path, std::string("yarn field '") + key + "' must be a positive number");
    return v > 0.f ? v : def;  // Python's `get(key) or default`
  };
  r.beta_fast = or_default("beta_fast", 32.f);
  r.beta_slow = or_default("beta_slow", 1.f);
  if (rs.contains("truncate") && !rs["truncate"].is_null()) {
    if (!rs["truncate"].is_boolean()) throw InputError(path, "yarn field 'truncate' must be true or false");
    r.truncate = rs["truncate"].get<bool>();
  }
  const float mscale = get_float(rs, "mscale", path, 0.f), mscale_all = get_float(rs, "mscale_all_dim", path, 0.f);
  r.attention_factor = mscale != 0.f && mscale_all != 0.f
                           ? float(yarn_mscale(r.factor, mscale) / yarn_mscale(r.factor, mscale_all))
                           : float(yarn_mscale(r.factor, 1.0));
  r.mscale_all_dim = mscale_all;
  if (rs.contains("attention_factor") && !rs["attention_factor"].is_null())
    r.attention_factor = get_positive_float(rs, "attention_factor", path, 1.f);
}

// Phi-3's partial_rotary_factor (Phi-4-mini: 0.75): RoPE turns the first int(head_dim * factor) dimensions of each
// head. transformers 5 keeps it in rope_parameters, earlier versions at the top level.
void parse_partial_rotary(const json& j, ModelConfig& c, const std::string& path) {
  const json* rp = j.contains("rope_parameters") && j["rope_parameters"].is_object() ? &j["rope_parameters"] : nullptr;
  const json& holder = rp && rp->contains("partial_rotary_factor") ? *rp : j;
  const float f = get_float(holder, "partial_rotary_factor", path, 1.f);
  const int dims = int(double(c.head_dim) * f);  // Python's int(): truncation
  if (!(f > 0.f) || f > 1.f || dims < 2 || dims % 2)
    throw InputError(path, "partial_rotary_factor " + std::to_string(f) + " gives " + std::to_string(dims) +
                               " rotary dimensions of head_dim " + std::to_string(c.head_dim) +
                               " (an even count from 2 to head_dim is needed)");
  c.rotary_dim = dims;
}

// Transformers < 5 writes rope_theta + rope_scaling; 5.x writes rope_parameters {rope_type, rope_theta, ...}.
void parse_rope(const json& j, ModelConfig& c, const std::string& path) {
  c.rope_theta = get_float(j, "rope_theta", path, 10000.f);
  const json* rs = nullptr;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) rs = &j["rope_parameters"];
  else if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) rs = &j["rope_scaling"];
  if (!rs) return;
  c.rope_theta = get_float(*rs, "rope_theta", path, c.rope_theta);
  std::string type = "default";
  if (rs->contains("rope_type") && (*rs)["rope_type"].is_string()) type = (*rs)["rope_type"].get<std::string>();
  else if (rs->contains("type") && (*rs)["type"].is_string()) type = (*rs)["type"].get<std::string>();
  if (type == "default") return;
  c.rope_scaling.type = type;
  c.rope_scaling.factor = get_float(*rs, "factor", path, 1.f);
  if (type == "linear") {
    if (c.rope_scaling.factor <= 0) throw InputError(path, "rope scaling factor must be positive");
  } else if (type == "llama3") {
    c.rope_scaling.low_freq_factor = get_float(*rs, "low_freq_factor", path, 1.f);
    c.rope_scaling.high_freq_factor = get_float(*rs, "high_freq_factor", path, 4.f);
    c.rope_scaling.original_max_position_embeddings =
        get_int(*rs, "original_max_position_embeddings", path, 8192);
    if (c.rope_scaling.factor <= 0 || c.rope_scaling.high_freq_factor <= c.rope_scaling.low_freq_factor)
      throw InputError(path, "invalid llama3 rope scaling parameters");
  } else if (type == "longrope" || type == "su") {  // "su": LongRoPE's name in the first Phi-3-128k configs
    parse_longrope(j, *rs, c, path);
  } else if (type == "yarn") {
    parse_yarn(*rs, c, path);
  } else if (type == "dynamic" && c.rope_scaling.factor == 1.f) {
    c.rope_scaling.type = "none";
  } else {
    throw InputError(path, "unsupported rope scaling type '" + type + "' (supported: default, linear, llama3, longrope, yarn)");
  }
}

// A count (of experts, of groups, SmolLM3's layer interval): an integer in [lo, hi] (absent or null: def).
int get_int_in(const json& j, const char* key, const std::string& path, int def, int lo, int hi) {
  const int v = get_int(j, key, path, def);
  if (v < lo || v > hi)
    throw InputError(path, std::string("field '") + key + "' is " + std::to_string(v) + " (expected " +
                               std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return v;
}

// DeepSeek-V2's and V3's experts, with DeepseekV2Config's / DeepseekV3Config's defaults for absent keys:
// n_routed_experts of moe_intermediate_size, num_experts_per_tok a token, in every moe_layer_freq-th layer from
// first_k_dense_replace on; n_shared_experts run on every token as one ungated MLP; the scores a softmax (V2,
// scoring_func "softmax") or sigmoids (V3) chosen within topk_group of n_group groups (V2's topk_method
// "group_limited_greedy"; V3 always), renormalized when norm_topk_prob, times routed_scaling_factor.
void parse_deepseek_moe(const json& j, ModelConfig& c, const std::string& path) {
  const bool v3 = c.architecture == "DeepseekV3ForCausalLM";
  c.num_experts = get_int_in(j, "n_routed_experts", path, v3 ? 256 : 64, 1, kMaxExperts);
  c.experts_per_token = get_int_in(j, "num_experts_per_tok", path, 8, 1, c.num_experts);
  c.expert_ffn = get_int_in(j, "moe_intermediate_size", path, v3 ? 2048 : 1407, 1, 1 << 20);
  const int shared = get_int_in(j, "n_shared_experts", path, v3 ? 1 : 2, 0, 64);
  c.shared_expert_ffn = shared * c.expert_ffn;
  c.shared_expert_gated = false;
  std::string scoring = v3 ? "sigmoid" : "softmax";
  if (j.contains("scoring_func") && j["scoring_func"].is_string()) scoring = j["scoring_func"].get<std::string>();
  if (scoring != "softmax" && scoring != "sigmoid")
    throw InputError(path, "unsupported scoring_func '" + scoring + "' (supported: softmax, sigmoid)");
  c.expert_sigmoid = scoring == "sigmoid";
  std::string method = v3 ? "noaux_tc" : "greedy";
  if (j.contains("topk_method") && j["topk_method"].is_string()) method = j["topk_method"].get<std::string>();
  if (method != "greedy" && method != "group_limited_greedy" && method != "noaux_tc")
    throw InputError(path, "unsupported topk_method '" + method + "' (supported: greedy, group_limited_greedy, noaux_tc)");
  if (method != "greedy") {
    c.expert_groups = get_int_in(j, "n_group", path, v3 ? 8 : 1, 1, c.num_experts);
    c.expert_groups_used = get_int_in(j, "topk_group", path, v3 ? 4 : 1, 1, c.expert_groups);
    if (c.num_experts % c.expert_groups)
      throw InputError(path, "n_routed_experts " + std::to_string(c.num_experts) + " is not a multiple of n_group " +
                                 std::to_string(c.expert_groups));
    c.groups_by_top_two = method == "noaux_tc";
    if (c.groups_by_top_two && c.num_experts / c.expert_groups < 2)
      throw InputError(path, "noaux_tc needs at least two experts a group");
    if (c.experts_per_token > c.expert_groups_used * (c.num_experts / c.expert_groups))
      throw InputError(path, "num_experts_per_tok is more than topk_group groups hold");
  }
  c.norm_topk_prob = get_bool(j, "norm_topk_prob", path, v3);
  c.routed_scaling = get_positive_float(j, "routed_scaling_factor", path, v3 ? 2.5f : 1.f);
  const int first_dense = get_int(j, "first_k_dense_replace", path, v3 ? 3 : 0);
  const int freq = get_int_in(j, "moe_layer_freq", path, 1, 1, 1 << 20);
  c.moe_layers.assign(size_t(c.num_layers), 0);
  for (int l = first_dense; l < c.num_layers; ++l) c.moe_layers[size_t(l)] = l % freq == 0;
}

// DeepSeek's multi-head latent attention (ModelConfig::kv_lora_rank): the latent's and the query's ranks and each
// head's parts. head_dim is the query's and key's width (qk_nope_head_dim + qk_rope_head_dim), the rotary part its
// last qk_rope_head_dim values; every head has its own key and value (num_key_value_heads is the heads' count).
// The scores' scale is 1/sqrt(head_dim), times YaRN's mscale_all_dim term squared.
void parse_mla(const json& j, ModelConfig& c, const std::string& path) {
  c.kv_lora_rank = get_int_in(j, "kv_lora_rank", path, 512, 1, 1 << 16);
  // null: none (V2-Lite, Moonlight); absent: DeepseekV2Config's and V3Config's 1536
  const bool no_q_lora = j.contains("q_lora_rank") && j["q_lora_rank"].is_null();
  c.q_lora_rank = no_q_lora ? 0 : get_int_in(j, "q_lora_rank", path, 1536, 1, 1 << 16);
  const int nope = get_int_in(j, "qk_nope_head_dim", path, 128, 1, 4096);
  const int rope = get_int_in(j, "qk_rope_head_dim", path, 64, 2, 4096);
  c.v_head_dim = get_int_in(j, "v_head_dim", path, 128, 1, 4096);
  // RoPE turns pairs; an odd nope part (found by fuzz_hf_config) would leave an odd head_dim, which no published
  // model has and every reader of head_dim assumes even.
  if (rope % 2) throw InputError(path, "field 'qk_rope_head_dim' must be even");
  if (nope % 2) throw InputError(path, "field 'qk_nope_head_dim' must be even");
  c.head_dim = nope + rope;
  c.rotary_dim = rope;
  c.num_kv_heads = c.num_heads;
  if (j.contains("rope_interleave") && j["rope_interleave"].is_boolean() && !j["rope_interleave"].get<bool>())
    throw InputError(path, "rope_interleave false is not supported (every published DeepSeek checkpoint interleaves)");
}

// Mixtral's, Qwen2-MoE's and Qwen3-MoE's experts (ModelConfig::num_experts). Mixtral: num_local_experts experts as
// wide as intermediate_size in every layer, their weights always renormalized. Qwen2-MoE and Qwen3-MoE: num_experts
// (transformers 5 writes num_local_experts) of moe_intermediate_size, in each decoder_sparse_step-th layer that
// mlp_only_layers does not list; renormalized when norm_topk_prob. Qwen2-MoE adds a shared expert
// (shared_expert_intermediate_size). Missing keys take transformers' defaults (Qwen2MoeConfig's are those of
// Qwen1.5-MoE-A2.7B).
void parse_moe(const json& j, ModelConfig& c, const std::string& path) {
  if (c.mla()) return parse_deepseek_moe(j, c, path);
  const bool mixtral = c.architecture == "MixtralForCausalLM", qwen2 = c.architecture == "Qwen2MoeForCausalLM";
  // GPT-OSS's experts are Mixtral's shape: num_local_experts as wide as intermediate_size in every layer, their
  // weights the softmax of the chosen logits (the same as renormalized); GptOssConfig's defaults 128 and 4.
  const bool gpt_oss = c.architecture == "GptOssForCausalLM", whole_width = mixtral || gpt_oss;
  const char* count_key = !whole_width && j.contains("num_experts") ? "num_experts" : "num_local_experts";
  c.num_experts = get_int_in(j, count_key, path, mixtral ? 8 : qwen2 ? 60 : 128, 1, kMaxExperts);
  c.experts_per_token = get_int(j, "num_experts_per_tok", path, mixtral ? 2 : qwen2 || gpt_oss ? 4 : 8);
  c.expert_ffn = whole_width ? c.intermediate_size : get_int(j, "moe_intermediate_size", path, qwen2 ? 1408 : 768);
  if (c.experts_per_token < 1 || c.experts_per_token > c.num_experts)
    throw InputError(path, "field 'num_experts_per_tok' is " + std::to_string(c.experts_per_token) + " (expected 1.." +
                               std::to_string(c.num_experts) + ", the number of experts)");
  if (c.expert_ffn < 1) throw InputError(path, "field 'moe_intermediate_size' must be positive");
  if (qwen2) {
    c.shared_expert_ffn = get_int(j, "shared_expert_intermediate_size", path, 5632);
    if (c.shared_expert_ffn < 1) throw InputError(path, "field 'shared_expert_intermediate_size' must be positive");
  }
  c.moe_layers.assign(size_t(c.num_layers), 1);
  if (whole_width) return;
  // Qwen2MoeConfig's and Qwen3MoeConfig's default false (Qwen3's checkpoints all say true)
  c.norm_topk_prob = get_bool(j, "norm_topk_prob", path, false);
  const int step = get_int(j, "decoder_sparse_step", path, 1);
  if (step < 1) throw InputError(path, "field 'decoder_sparse_step' must be positive");
  for (int l = 0; l < c.num_layers; ++l) c.moe_layers[size_t(l)] = (l + 1) % step == 0;
  if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
    const json& dense = j["mlp_only_layers"];
    if (!dense.is_array()) throw InputError(path, "field 'mlp_only_layers' must be a list of layer indices");
    for (const json& l : dense) {
      if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() >= c.num_layers)
        throw InputError(path, "field 'mlp_only_layers' holds " + l.dump() + ", not a layer index below " +
                                   std::to_string(c.num_layers));
      c.moe_layers[size_t(l.get<int64_t>())] = 0;
    }
  }
}

// Which layers slide: layer_types ("sliding_attention" or "full_attention" per layer), else every layer but each
// pattern-th (Gemma 3's sliding_window_pattern; Gemma 2 and GPT-OSS alternate from layer 0, pattern 2).
void parse_layer_types(const json& j, ModelConfig& c, const std::string& path, int pattern) {
  c.layer_sliding.assign(size_t(c.num_layers), 1);
  if (j.contains("layer_types") && j["layer_types"].is_array()) {
    const json& types = j["layer_types"];
    if (int(types.size()) != c.num_layers)
      throw InputError(path, "layer_types has " + std::to_string(types.size()) + " entries for " +
                                 std::to_string(c.num_layers) + " layers");
    for (int l = 0; l < c.num_layers; ++l) {
      const std::string t = types[size_t(l)].is_string() ? types[size_t(l)].get<std::string>() : "";
      if (t != "sliding_attention" && t != "full_attention")
        throw InputError(path, "layer_types[" + std::to_string(l) + "] is '" + t + "'");
      c.layer_sliding[size_t(l)] = t == "sliding_attention";
    }
  } else {
    for (int l = 0; l < c.num_layers; ++l) c.layer_sliding[size_t(l)] = pattern <= 0 || (l + 1) % pattern != 0;
  }
}

// GPT-OSS's parts beyond its experts (parse_moe; transformers' GptOssConfig defaults for absent keys): biases on the
// router, the experts and q/k/v/o (attention_bias); the clamped SwiGLU (swiglu_limit, swiglu_alpha); a sink logit per
// head; sliding and full layers alternating (layer_types; sliding_window 128). Its YaRN RoPE is parse_rope's.
void parse_gpt_oss(const json& j, ModelConfig& c, const std::string& path) {
  c.expert_bias = true;
  c.swiglu_limit = get_positive_float(j, "swiglu_limit", path, 7.f);
  c.swiglu_alpha = get_positive_float(j, "swiglu_alpha", path, 1.702f);
  c.attention_sinks = true;
  parse_layer_types(j, c, path, 2);
  if (!j.contains("sliding_window")) c.sliding_window = 128;
}

// RoPE per kind of layer, Gemma 3's and OLMo 3's: transformers 5 keys rope_parameters by layer type (the
// full-attention layers' possibly scaled, the sliding layers' plain: rope_local_theta); configs saved before name the
// full-attention layers' RoPE at the top (rope_theta, rope_scaling) and the sliding layers' theta under
// `local_theta_key` (Gemma 3's rope_local_base_freq, default 1e4), or none (OLMo 3: rope_theta, unscaled).
void parse_rope_by_layer_type(const json& j, ModelConfig& c, const std::string& path, const char* local_theta_key) {
  const json* rp = j.contains("rope_parameters") && j["rope_parameters"].is_object() ? &j["rope_parameters"] : nullptr;
  if (rp && rp->contains("full_attention")) {
    json global = j;
    global["rope_parameters"] = (*rp)["full_attention"];
    parse_rope(global, c, path);
    const json& local = rp->contains("sliding_attention") ? (*rp)["sliding_attention"] : (*rp)["full_attention"];
    if (local.contains("rope_type") && local["rope_type"] != "default")
      throw InputError(path, "rope scaling on the sliding layers is not supported");
    c.rope_local_theta = get_float(local, "rope_theta", path, 10000.f);
  } else {
    parse_rope(j, c, path);
    c.rope_local_theta = local_theta_key ? get_float(j, local_theta_key, path, 10000.f) : c.rope_theta;
  }
}

// OLMo 2 and OLMo 3 (transformers' Olmo2Config, Olmo3Config): no norms before the sublayers, a norm on each
// sublayer's output, q and k normed over their whole projections. OLMo 3 slides every layer but each fourth
// (layer_types; sliding_window 4096 when absent) with plain RoPE there (parse_rope_by_layer_type); OLMo 2 has one
// RoPE for every layer and no window.
void parse_olmo(const json& j, ModelConfig& c, const std::string& path) {
  c.qk_norm = true;
  c.qk_norm_whole = true;
  c.pre_norms = false;
  c.sandwich_norms = true;
  if (c.architecture == "Olmo2ForCausalLM") {
    parse_rope(j, c, path);
    return;
  }
  parse_rope_by_layer_type(j, c, path, nullptr);
  parse_layer_types(j, c, path, 4);
  if (!j.contains("sliding_window")) c.sliding_window = 4096;
}

// SmolLM3 (transformers' SmolLM3Config): which layers go without RoPE (no_rope_layers, 1 = RoPE, or a NoPE layer every
// no_rope_layer_interval-th, default 4); with use_sliding_window, which layers slide (layer_types, or the NoPE ones).
void parse_smollm3(const json& j, ModelConfig& c, const std::string& path) {
  c.layer_no_rope.assign(size_t(c.num_layers), 0);
  if (j.contains("no_rope_layers") && !j["no_rope_layers"].is_null()) {
    const json& flags = j["no_rope_layers"];
    if (!flags.is_array() || int(flags.size()) != c.num_layers)
      throw InputError(path, "no_rope_layers must list one 0 or 1 for each of the " + std::to_string(c.num_layers) +
                                 " layers");
    for (int l = 0; l < c.num_layers; ++l) {
      const json& f = flags[size_t(l)];
      if (!f.is_number_integer() || (f.get<int64_t>() != 0 && f.get<int64_t>() != 1))
        throw InputError(path, "no_rope_layers[" + std::to_string(l) + "] is " + f.dump() + " (0 or 1)");
      c.layer_no_rope[size_t(l)] = f.get<int64_t>() == 0;
    }
  } else {
    const int every = get_int_in(j, "no_rope_layer_interval", path, 4, 1, kMaxConfigLayers);
    for (int l = 0; l < c.num_layers; ++l) c.layer_no_rope[size_t(l)] = (l + 1) % every == 0;
  }
  if (!get_bool(j, "use_sliding_window", path, false)) return;
  if (j.contains("layer_types") && j["layer_types"].is_array()) parse_layer_types(j, c, path, 0);
  else c.layer_sliding = c.layer_no_rope;
}

// A soft cap (Gemma 2's attn_logit_softcapping, final_logit_softcapping): absent, transformers' default; null, none
// (0); else a positive, finite number (a zero one divides by zero).
float soft_cap(const json& j, const char* key, const std::string& path, float def) {
  if (!j.contains(key)) return def;
  if (j[key].is_null()) return 0.f;
  return get_positive_float(j, key, path, def);
}

// Gemma 2's and Gemma 3's text models: which layers slide (layer_types, or every layer but each N-th: Gemma 3's
// sliding_window_pattern, default 6; Gemma 2 alternates, from layer 0), and the constants of their forward. Gemma 3:
// RoPE per kind of layer (transformers 5: rope_parameters keyed by layer type; before: rope_theta + rope_scaling for
// the full-attention layers, rope_local_base_freq for the sliding ones). Gemma 2: one RoPE for every layer. Both
// soft-cap scores and logits where the config says so (Gemma 2 by default, Gemma 3 only when set).
void parse_gemma(const json& j, ModelConfig& c, const std::string& path) {
  const bool gemma2 = c.architecture == "Gemma2ForCausalLM";
  c.attn_soft_cap = soft_cap(j, "attn_logit_softcapping", path, gemma2 ? 50.f : 0.f);
  c.final_soft_cap = soft_cap(j, "final_logit_softcapping", path, gemma2 ? 30.f : 0.f);
  if (j.contains("use_bidirectional_attention") && j["use_bidirectional_attention"].is_boolean() &&
      j["use_bidirectional_attention"].get<bool>())
    throw InputError(path, "use_bidirectional_attention is set: only causal language models are supported");
  if (gemma2) parse_rope(j, c, path);
  else parse_rope_by_layer_type(j, c, path, "rope_local_base_freq");
  parse_layer_types(j, c, path, gemma2 ? 2 : get_int(j, "sliding_window_pattern", path, 6));
  c.embed_scale = std::sqrt(float(c.hidden_size));
  c.attn_scale = 1.f / std::sqrt(get_positive_float(j, "query_pre_attn_scalar", path, float(c.head_dim)));
  c.sandwich_norms = true;
  c.norm_weight_offset = 1.f;
  c.hidden_act = "gelu_pytorch_tanh";  // the config's own key, when present, is read after
}

// What transformers' Gemma2Config / Gemma3TextConfig assume for a key the file leaves out. Configs saved by
// transformers may hold only the values that differ from these (Gemma 3 4B's text_config names 6 keys; 1B's leaves
// out tie_word_embeddings), so reading them with Llama's defaults would compute another model. (Gemma 2's soft caps
// are read by parse_gemma: there an explicit null means none.)
void fill_gemma_defaults(json& j, bool gemma2) {
  static const json kGemma3 = {
      {"vocab_size", 262208},        {"hidden_size", 2304},           {"intermediate_size", 9216},
      {"num_hidden_layers", 26},     {"num_attention_heads", 8},      {"num_key_value_heads", 4},
      {"head_dim", 256},             {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6},
      {"bos_token_id", 2},           {"eos_token_id", 1},             {"tie_word_embeddings", true},
      {"rope_theta", 1000000.0},     {"rope_local_base_freq", 10000.0}, {"query_pre_attn_scalar", 256},
      {"sliding_window", 4096},      {"sliding_window_pattern", 6}};
  static const json kGemma2 = {
      {"vocab_size", 256000},        {"hidden_size", 2304},           {"intermediate_size", 9216},
      {"num_hidden_layers", 26},     {"num_attention_heads", 8},      {"num_key_value_heads", 4},
      {"head_dim", 256},             {"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-6},
      {"bos_token_id", 2},           {"eos_token_id", 1},             {"tie_word_embeddings", true},
      {"rope_theta", 10000.0},       {"query_pre_attn_scalar", 256},  {"sliding_window", 4096}};
  for (const auto& [key, value] : (gemma2 ? kGemma2 : kGemma3).items())
    if (!j.contains(key) || j[key].is_null()) j[key] = value;
}

// Gemma 3 4B-27B are vision-language checkpoints (Gemma3ForConditionalGeneration, model_type gemma3): the language
// model SpecScope runs is its text_config, with the dtype and generation ids the top level holds. Its tensors sit
// under a prefix of their own (hf_text_names.h).
json text_config_of_gemma3(const json& j, const std::string& path) {
  if (!j.contains("text_config") || !j["text_config"].is_object())
    throw InputError(path, "Gemma3ForConditionalGeneration without a text_config object");
  json text = j["text_config"];
  for (const char* key : {"torch_dtype", "dtype", "bos_token_id", "eos_token_id", "tie_word_embeddings"})
    if ((!text.contains(key) || text[key].is_null()) && j.contains(key)) text[key] = j[key];
  text["architectures"] = json::array({"Gemma3ForCausalLM"});
  text["model_type"] = "gemma3_text";
  return text;
}

// Granite's four multipliers (transformers' GraniteConfig defaults each to 1). Each must be a positive, finite
// number: a zero or negative one computes no model anyone published, and a zero logits_scaling divides by zero.
void parse_granite(const json& j, ModelConfig& c, const std::string& path) {
  c.embed_scale = get_positive_float(j, "embedding_multiplier", path, 1.f);
  c.attn_scale = get_positive_float(j, "attention_multiplier", path, 1.f);
  c.residual_scale = get_positive_float(j, "residual_multiplier", path, 1.f);
  c.logit_scale = get_positive_float(j, "logits_scaling", path, 1.f);
}

}  // namespace

ModelConfig ModelConfig::from_json_text(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(path, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(path, "expected a JSON object");
  ModelConfig c;
  const bool names_vlm = j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
                         j["architectures"][0] == "Gemma3ForConditionalGeneration";
  if (names_vlm || (!j.contains("architectures") && j.value("model_type", json()) == "gemma3")) {
    j = text_config_of_gemma3(j, path);
    c.wrapper_architecture = "Gemma3ForConditionalGeneration";
  }
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    c.architecture = j["architectures"][0].get<std::string>();
  if (j.contains("model_type") && j["model_type"].is_string()) c.model_type = j["model_type"].get<std::string>();
  if (c.architecture.empty()) {
    if (c.model_type == "llama") c.architecture = "LlamaForCausalLM";
    else if (c.model_type == "mistral") c.architecture = "MistralForCausalLM";
    else if (c.model_type == "mixtral") c.architecture = "MixtralForCausalLM";
    else if (c.model_type == "qwen2") c.architecture = "Qwen2ForCausalLM";
    else if (c.model_type == "qwen2_moe") c.architecture = "Qwen2MoeForCausalLM";
    else if (c.model_type == "qwen3") c.architecture = "Qwen3ForCausalLM";
    else if (c.model_type == "qwen3_moe") c.architecture = "Qwen3MoeForCausalLM";
    else if (c.model_type == "gemma2") c.architecture = "Gemma2ForCausalLM";
    else if (c.model_type == "gemma3_text") c.architecture = "Gemma3ForCausalLM";
    else if (c.model_type == "granite") c.architecture = "GraniteForCausalLM";
    else if (c.model_type == "phi3") c.architecture = "Phi3ForCausalLM";
    else if (c.model_type == "gpt_oss") c.architecture = "GptOssForCausalLM";
    else if (c.model_type == "deepseek_v2") c.architecture = "DeepseekV2ForCausalLM";
    else if (c.model_type == "deepseek_v3") c.architecture = "DeepseekV3ForCausalLM";
    else if (c.model_type == "olmo2") c.architecture = "Olmo2ForCausalLM";
    else if (c.model_type == "olmo3") c.architecture = "Olmo3ForCausalLM";
    else if (c.model_type == "smollm3") c.architecture = "SmolLM3ForCausalLM";
  }
  // architectures[0] and the model_type each name, as transformers' auto classes map them.
  static const std::pair<const char*, const char*> kSupported[] = {{"LlamaForCausalLM", "llama"},
                                                                   {"MistralForCausalLM", "mistral"},
                                                                   {"MixtralForCausalLM", "mixtral"},
                                                                   {"Qwen2ForCausalLM", "qwen2"},
                                                                   {"Qwen2MoeForCausalLM", "qwen2_moe"},
                                                                   {"Qwen3ForCausalLM", "qwen3"},
                                                                   {"Qwen3MoeForCausalLM", "qwen3_moe"},
                                                                   {"Gemma2ForCausalLM", "gemma2"},
                                                                   {"Gemma3ForCausalLM", "gemma3_text"},
                                                                   {"GraniteForCausalLM", "granite"},
                                                                   {"Phi3ForCausalLM", "phi3"},
                                                                   {"GptOssForCausalLM", "gpt_oss"},
                                                                   {"DeepseekV2ForCausalLM", "deepseek_v2"},
                                                                   {"DeepseekV3ForCausalLM", "deepseek_v3"},
                                                                   {"Olmo2ForCausalLM", "olmo2"},
                                                                   {"Olmo3ForCausalLM", "olmo3"},
                                                                   {"SmolLM3ForCausalLM", "smollm3"}};
  const auto* known = std::find_if(std::begin(kSupported), std::end(kSupported),
                                   [&](const auto& s) { return c.architecture == s.first; });
  if (known == std::end(kSupported))
    throw InputError(path, "unsupported architecture '" + (c.architecture.empty() ? c.model_type : c.architecture) +
                               "' (supported: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, "
                               "Qwen2ForCausalLM, Qwen2MoeForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, "
                               "Gemma2ForCausalLM, "
                               "Gemma3ForCausalLM, "
                               "Gemma3ForConditionalGeneration, GraniteForCausalLM, Phi3ForCausalLM, "
                               "GptOssForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, Olmo2ForCausalLM, "
                               "Olmo3ForCausalLM, SmolLM3ForCausalLM)");
  if (c.model_type.empty()) c.model_type = known->second;
  c.qk_norm = c.architecture == "Qwen3ForCausalLM" || c.architecture == "Qwen3MoeForCausalLM" ||
              c.architecture == "Gemma3ForCausalLM";
  c.fused_projections = c.architecture == "Phi3ForCausalLM";
  const bool gemma = c.architecture == "Gemma2ForCausalLM" || c.architecture == "Gemma3ForCausalLM";
  if (gemma) fill_gemma_defaults(j, c.architecture == "Gemma2ForCausalLM");

  c.hidden_size = get_int(j, "hidden_size", path);
  c.intermediate_size = get_int(j, "intermediate_size", path);
  c.num_layers = get_int(j, "num_hidden_layers", path);
  c.num_heads = get_int(j, "num_attention_heads", path);
  c.num_kv_heads = get_int(j, "num_key_value_heads", path, c.num_heads);
  c.vocab_size = get_int(j, "vocab_size", path);
  c.max_position_embeddings = get_int(j, "max_position_embeddings", path, 2048);
  if (c.num_layers > kMaxConfigLayers)
    throw InputError(path, "num_hidden_layers is " + std::to_string(c.num_layers) + " (at most " +
                               std::to_string(kMaxConfigLayers) + ")");
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.vocab_size <= 0 || c.max_position_embeddings <= 0)
    throw InputError(path, "sizes must be positive");
  const bool deepseek = c.architecture == "DeepseekV2ForCausalLM" || c.architecture == "DeepseekV3ForCausalLM";
  if (deepseek) {
    parse_mla(j, c, path);  // head_dim from its parts (transformers writes the rotary part's width as head_dim)
  } else {
    c.head_dim = get_int(j, "head_dim", path, c.hidden_size / c.num_heads);
    if (c.head_dim <= 0 || c.head_dim % 2) throw InputError(path, "head_dim must be positive and even");
    if (!j.contains("head_dim") && c.hidden_size % c.num_heads)
      throw InputError(path, "hidden_size is not a multiple of num_attention_heads");
  }
  if (c.num_heads % c.num_kv_heads)
    throw InputError(path, "num_attention_heads is not a multiple of num_key_value_heads");
  const bool olmo = c.architecture == "Olmo2ForCausalLM" || c.architecture == "Olmo3ForCausalLM";
  c.rms_norm_eps = get_float(j, "rms_norm_eps", path, olmo ? 1e-5f : 1e-6f);  // Olmo2Config's and Olmo3Config's default
  if (c.architecture == "Phi3ForCausalLM") parse_partial_rotary(j, c, path);
  if (gemma) parse_gemma(j, c, path);
  else if (olmo) parse_olmo(j, c, path);
  else parse_rope(j, c, path);
  if (c.architecture == "GraniteForCausalLM") parse_granite(j, c, path);
  if (c.architecture == "SmolLM3ForCausalLM") parse_smollm3(j, c, path);
  const bool gpt_oss = c.architecture == "GptOssForCausalLM";
  if (c.architecture == "MixtralForCausalLM" || c.architecture == "Qwen2MoeForCausalLM" ||
      c.architecture == "Qwen3MoeForCausalLM" || gpt_oss || deepseek)
    parse_moe(j, c, path);
  if (deepseek && c.rope_scaling.type == "yarn" && c.rope_scaling.mscale_all_dim != 0.f) {
    // transformers' yarn_apply_mscale: the scores' scale times the mscale_all_dim term squared
    const double m = yarn_mscale(c.rope_scaling.factor, c.rope_scaling.mscale_all_dim);
    c.attn_scale = float(1.0 / std::sqrt(double(c.head_dim)) * m * m);
  }
  if (gpt_oss) parse_gpt_oss(j, c, path);
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean())
    c.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  // Qwen2 always has q/k/v biases; Qwen2-MoE unless its qkv_bias (transformers 5) says not.
  const bool qkv_bias = !(j.contains("qkv_bias") && j["qkv_bias"].is_boolean() && !j["qkv_bias"].get<bool>());
  c.attention_bias = c.architecture == "Qwen2ForCausalLM" || (c.architecture == "Qwen2MoeForCausalLM" && qkv_bias) ||
                     (j.contains("attention_bias") && j["attention_bias"].is_boolean() && j["attention_bias"].get<bool>()) ||
                     (gpt_oss && !(j.contains("attention_bias") && j["attention_bias"].is_boolean()));  // its default
  c.mlp_bias = j.contains("mlp_bias") && j["mlp_bias"].is_boolean() && j["mlp_bias"].get<bool>();
  if (deepseek && (c.attention_bias || c.mlp_bias))  // no published DeepSeek checkpoint has either
    throw InputError(path, "attention_bias or mlp_bias set on a DeepSeek model: not supported");
  // Gemma's configs name it hidden_activation.
  for (const char* key : {"hidden_act", "hidden_activation"})
    if (j.contains(key) && j[key].is_string()) c.hidden_act = j[key].get<std::string>();
  if (c.hidden_act == "swish") c.hidden_act = "silu";
  if (gpt_oss) c.hidden_act = "silu";  // its config says silu; swiglu_limit selects the clamped form
  if (c.hidden_act != "silu" && c.hidden_act != "gelu_pytorch_tanh")
    throw InputError(path, "unsupported hidden_act '" + c.hidden_act + "' (supported: silu, gelu_pytorch_tanh)");
  // Mistral, Mixtral and Phi-3 always slide when sliding_window is set; Qwen2 and Qwen3 only with use_sliding_window.
  bool uses_window = c.architecture == "MistralForCausalLM" || c.architecture == "MixtralForCausalLM" ||
                     c.architecture == "Phi3ForCausalLM" ||
                     (j.contains("use_sliding_window") && j["use_sliding_window"].is_boolean() &&
                      j["use_sliding_window"].get<bool>());
  if ((uses_window || !c.layer_sliding.empty()) && j.contains("sliding_window") && j["sliding_window"].is_number_integer()) {
    // A window of no keys, or a negative one, is no model's (found by fuzz_hf_config: a negative window reached the
    // attention's visibility test).
    if (j["sliding_window"].get<int64_t>() < 1) throw InputError(path, "field 'sliding_window' must be positive");
    c.sliding_window = get_int(j, "sliding_window", path);
  }
  c.torch_dtype = parse_torch_dtype(j);
  if (j.contains("bos_token_id") && j["bos_token_id"].is_number_integer()) c.bos_token_id = j["bos_token_id"].get<int>();
  if (j.contains("eos_token_id")) {
    auto& e = j["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int>());
    else if (e.is_array())
      for (auto& x : e)
        if (x.is_number_integer()) c.eos_token_ids.push_back(x.get<int>());
  }
  return c;
}

ModelConfig ModelConfig::from_file(const std::string& path) {
  if (!file_exists(path)) throw InputError(path, "missing (a Hugging Face model directory needs config.json)");
  return from_json_text(read_text_file(path), path);
}

std::string ModelConfig::summary() const {
  std::ostringstream s;
  if (!wrapper_architecture.empty()) s << "the text model of " << wrapper_architecture << ": ";
  s << architecture << " layers=" << num_layers << " hidden=" << hidden_size << " heads=" << num_heads
    << " kv_heads=" << num_kv_heads << " head_dim=" << head_dim << " ffn=" << intermediate_size
    << " vocab=" << vocab_size << " ctx=" << max_position_embeddings;
  if (moe()) s << " experts=" << experts_per_token << "/" << num_experts << " expert_ffn=" << expert_ffn;
  if (shared_expert_ffn > 0) s << " shared_expert_ffn=" << shared_expert_ffn;
  if (!pre_norms) s << " norms=after-sublayers qk_norm=whole-projection";
  if (!layer_no_rope.empty())
    s << " no_rope_layers=" << std::count(layer_no_rope.begin(), layer_no_rope.end(), uint8_t(1));
  if (mla()) s << " mla: kv_lora=" << kv_lora_rank << " q_lora=" << q_lora_rank << " rope=" << rotary_dims() << " v=" << v_head_dim;
  return s.str();
}

int ModelConfig::window_of(int layer) const {
  if (!sliding_window) return 0;
  return layer_sliding.empty() || layer_sliding[size_t(layer)] ? *sliding_window : 0;
}

float ModelConfig::attention_scale() const { return attn_scale > 0.f ? attn_scale : 1.0f / std::sqrt(float(head_dim)); }

bool ModelConfig::extended_forward() const {
  return sandwich_norms || !pre_norms || qk_norm_whole || !layer_no_rope.empty() || gelu() || embed_scale != 1.f ||
         rope_local_theta > 0.f || attn_scale > 0.f || residual_scale != 1.f || logit_scale != 1.f ||
         attn_soft_cap > 0.f || final_soft_cap > 0.f;
}

std::vector<float> rope_inv_freq(const ModelConfig& c, bool local, int n_ctx) {
  const int dims = c.rotary_dims();
  const int half = dims / 2;
  std::vector<float> inv(half);
  const float theta = local ? c.rope_local_theta : c.rope_theta;
  const auto& rs = c.rope_scaling;
  // LongRoPE divides each frequency's base**(2i/dim) before inverting it, as transformers does.
  const std::vector<float>* ext = nullptr;
  if (!local && rs.type == "longrope") ext = takes_long_rope_factors(c, n_ctx) ? &rs.long_factor : &rs.short_factor;
  for (int i = 0; i < half; ++i) {
    // As transformers computes it: in float32, base ** (2i / dim).
    float expo = float(2 * i) / float(dims);
    inv[i] = ext ? 1.0f / ((*ext)[size_t(i)] * std::pow(theta, expo)) : 1.0f / std::pow(theta, expo);
  }
  if (local || ext) return inv;  // the sliding layers' RoPE is never scaled; LongRoPE's is complete
  if (!c.rope_freq_factors.empty()) {  // validated to hold head_dim/2 positive values by the GGUF loader
    for (int i = 0; i < half; ++i) inv[i] /= c.rope_freq_factors[i];
    return inv;
  }
  if (rs.type == "linear") {
    for (auto& f : inv) f /= rs.factor;
  } else if (rs.type == "yarn") {
    // transformers' _compute_yarn_parameters (llama.cpp's rope_yarn mixes the angles alike): the dimension that turns
    // `rotations` times over the original context, the ramp between beta_fast's and beta_slow's, in double as
    // Python's math computes them, then the mix in f32.
    const double orig = rs.original_max_position_embeddings, base = theta;
    auto dim_of = [&](double rotations) { return dims * std::log(orig / (rotations * 2 * M_PI)) / (2 * std::log(base)); };
    double low = dim_of(rs.beta_fast), high = dim_of(rs.beta_slow);
    if (rs.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, double(dims - 1));
    if (low == high) high += 0.001;  // as transformers avoids the division by zero
    for (int i = 0; i < half; ++i) {
      const float pos = std::pow(theta, float(2 * i) / float(dims));
      const float ramp = std::clamp((float(i) - float(low)) / float(high - low), 0.f, 1.f);
      const float extrapolation = 1.f - ramp;  // the share of the unscaled frequency
      inv[i] = 1.f / (rs.factor * pos) * (1.f - extrapolation) + 1.f / pos * extrapolation;
    }
  } else if (rs.type == "llama3") {
    const float old_ctx = float(rs.original_max_position_embeddings);
    const float low_wavelen = old_ctx / rs.low_freq_factor;
    const float high_wavelen = old_ctx / rs.high_freq_factor;
    for (auto& f : inv) {
      const float wavelen = 2.f * float(M_PI) / f;
      if (wavelen < high_wavelen) continue;                       // high frequency: unchanged
      if (wavelen > low_wavelen) { f = f / rs.factor; continue; }  // low frequency: scaled
      const float smooth = (old_ctx / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
      f = (1.f - smooth) * f / rs.factor + smooth * f;
    }
  }
  return inv;
}

bool takes_long_rope_factors(const ModelConfig& c, int n_ctx) {
  return c.rope_scaling.type == "longrope" && n_ctx > c.rope_scaling.original_max_position_embeddings;
}

float rope_attention_factor(const ModelConfig& c, bool local) {
  const auto& t = c.rope_scaling.type;
  return !local && (t == "longrope" || t == "yarn") ? c.rope_scaling.attention_factor : 1.f;
}

}  // namespace specscope
