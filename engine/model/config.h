#pragma once
// The architecture hyper-parameters of a Llama-family decoder, read from a Hugging Face config.json.
#include <optional>
#include <string>
#include <vector>

#include "engine/util/dtype.h"

namespace specscope {

struct RopeScaling {
  std::string type = "none";  // none | linear | llama3 | dynamic (dynamic: refused unless factor 1)
  float factor = 1.f;
  float low_freq_factor = 1.f;
  float high_freq_factor = 4.f;
  int original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // LlamaForCausalLM | MistralForCausalLM | Qwen2ForCausalLM | Qwen3ForCausalLM
  std::string model_type;    // llama | mistral | qwen2 | qwen3
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;
  int max_position_embeddings = 2048;
  float rms_norm_eps = 1e-6f;
  float rope_theta = 10000.f;
  RopeScaling rope_scaling;
  // GGUF files carry llama3-style scaling as per-frequency divisors (the rope_freqs.weight tensor, head_dim/2
  // values) instead of parameters; when not empty, rope_inv_freq divides by them instead of applying rope_scaling.
  std::vector<float> rope_freq_factors;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (Qwen2 always; Llama when attention_bias=true)
  bool mlp_bias = false;
  // Qwen3: each head's query and key go through an RMSNorm over head_dim (weights q_norm, k_norm) before RoPE.
  bool qk_norm = false;
  std::optional<int> sliding_window;  // Mistral; applied when shorter than the context
  std::string hidden_act = "silu";
  DType torch_dtype = DType::F32;
  std::optional<int> bos_token_id;
  std::vector<int> eos_token_ids;

  // Parses and validates; throws InputError naming `path` for anything missing, inconsistent or unsupported.
  static ModelConfig from_json_text(const std::string& text, const std::string& path);
  static ModelConfig from_file(const std::string& path);
  std::string summary() const;
};

// RoPE inverse frequencies (head_dim/2 of them) with the configured scaling applied.
std::vector<float> rope_inv_freq(const ModelConfig& c);

}  // namespace specscope
