#pragma once
// LoRA adapters in the format the `peft` library saves (adapter_config.json + adapter_model.safetensors), the
// way Hugging Face users publish fine-tunes of a base model. SpecScope merges an adapter into the base's
// weights at load time (W' = W + scale * B A, stored in W's dtype), so a merged model runs exactly as fast as
// its base; Speculative Streaming models ship this way (docs/streaming-format.md).
//
// Supported: LoRA on the seven projections of Llama/Mistral/Qwen2 decoder layers (q/k/v/o, gate/up/down), r and
// lora_alpha with rank_pattern / alpha_pattern (keyed by module names; peft's regular-expression keys are
// refused), use_rslora, layers_to_transform (implied by the saved keys).
// Anything else peft can save (DoRA, LoRA biases, modules_to_save, embedding LoRA, ...) is an InputError
// naming the file and the key, never silently ignored.
#include <string>
#include <vector>

#include "engine/util/tensor.h"

namespace specscope {

struct ModelConfig;
struct ModelWeights;

struct LoraUpdate {
  std::string module;  // e.g. "model.layers.4.self_attn.q_proj"
  TensorView A;        // [r, in]
  TensorView B;        // [out, r]
  float scale = 0.f;   // lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora
};

struct LoraAdapter {
  std::string dir;          // the adapter directory
  std::string config_path;  // its adapter_config.json
  std::string base_path;    // the base model, resolved (see open)
  std::string config_text;  // adapter_config.json's bytes (for the model identity)
  std::vector<LoraUpdate> updates;

  // Whether `dir` is a peft adapter directory (adapter_config.json and no config.json of its own).
  static bool is_adapter_dir(const std::string& dir);
  // Reads and checks an adapter. base_model_name_or_path is looked up relative to the adapter directory
  // first, then as given (relative to the working directory, as peft does). Throws InputError.
  static LoraAdapter open(const std::string& dir);
};

// Merges every update into `w` (whose matrices must be f32/f16/bf16 views): each adapted matrix becomes an
// owned buffer of the same dtype holding round(W + scale * B A). Shapes are checked against `c`.
// Throws InputError naming the adapter file.
void merge_lora(const LoraAdapter& a, const ModelConfig& c, ModelWeights& w);

}  // namespace specscope
