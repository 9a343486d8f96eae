// libFuzzer target: Hugging Face config.json (ModelConfig::from_json_text) on arbitrary bytes. A config is the first
// file of a model folder anyone could have written, and what it says sizes every allocation of the load, so beyond
// "InputError or a config, never a crash", an accepted config must describe a model the forward can size: positive
// sizes, an even head_dim, whole groups of query heads per KV head, a sliding pattern of one entry per layer, a
// layer count that cannot make the parse allocate without bound, and a wrapper's text model a supported one.
// Seeds: fuzz/corpus/hf_config (the fixtures' Llama, Qwen2, Mistral, Qwen3, Gemma, Granite, Phi-3, Qwen3-MoE and
// Mixtral configs, both of Gemma 3's vision-language layouts, and published configs: Gemma 3 4B-it, Gemma 2 2B-it,
// Qwen3-30B-A3B).
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <string>

#include "engine/model/config.h"
#include "engine/util/error.h"

using namespace specscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ModelConfig c;
  try {
    c = ModelConfig::from_json_text(text, "fuzz");
  } catch (const InputError&) {
    return 0;
  }
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.num_kv_heads <= 0 || c.vocab_size <= 0 || c.max_position_embeddings <= 0)
    std::abort();
  if (c.head_dim <= 0 || c.head_dim % 2 || c.num_heads % c.num_kv_heads) std::abort();
  if (c.num_layers > kMaxConfigLayers) std::abort();
  if (!c.layer_sliding.empty() && c.layer_sliding.size() != size_t(c.num_layers)) std::abort();
  for (int l = 0; l < c.num_layers; ++l)
    if (c.window_of(l) < 0) std::abort();
  if (!c.wrapper_architecture.empty() && c.architecture != "Gemma3ForCausalLM") std::abort();
  // Granite's multipliers: positive and finite, or the forward divides by zero or turns the stream to NaN.
  for (float m : {c.embed_scale, c.residual_scale, c.logit_scale})
    if (!(m > 0.f) || !std::isfinite(m)) std::abort();
  if (c.attn_scale < 0.f || !std::isfinite(c.attn_scale)) std::abort();
  // Gemma 2's soft caps: none (0) or positive and finite (a cap divides the scores and logits).
  for (float cap : {c.attn_soft_cap, c.final_soft_cap})
    if (cap < 0.f || !std::isfinite(cap)) std::abort();
  // Experts: none, or 1..kMaxExperts of them with 1..num_experts per token and a positive width, and a flag for each
  // layer (the forward indexes moe_layers by layer and the routing picks experts_per_token of num_experts).
  if (c.num_experts < 0 || c.num_experts > kMaxExperts) std::abort();
  if (c.moe() && (c.experts_per_token < 1 || c.experts_per_token > c.num_experts || c.expert_ffn < 1 ||
                  c.moe_layers.size() != size_t(c.num_layers)))
    std::abort();
  if (!c.moe() && !c.moe_layers.empty()) std::abort();
  // A shared expert (Qwen2-MoE) only beside routed ones, and of a positive width.
  if (c.shared_expert_ffn < 0 || (c.shared_expert_ffn > 0 && !c.moe())) std::abort();
  (void)c.summary();
  (void)c.extended_forward();
  (void)c.attention_scale();
  return 0;
}
