#pragma once
// What a model file or folder is, read from its headers and configs only: GGUF metadata and tensor table,
// config.json, safetensors headers (or a PyTorch zip's pickle index for heads published as .bin/.pt). The weights
// stay on disk (mapped, never read), so probing a 70B model costs what probing a 1M one does. Discovery probes
// every candidate it finds; `models` lists the result; the memory check sizes a run from it.
#include <cstdint>
#include <string>

namespace specscope::discovery {

enum class ModelKind { Model, Eagle1Head, Eagle3Head, MedusaHead, LoraAdapter };
// "model", "eagle1-head", "eagle3-head", "medusa-head", "lora-adapter"
const char* kind_name(ModelKind k);

struct ModelFacts {
  std::string path;          // the file or folder probed
  std::string format;        // "gguf" | "safetensors" | "pytorch"
  ModelKind kind = ModelKind::Model;
  std::string architecture;  // config.json's architectures[0], or GGUF's general.architecture
  // What drafters are matched by: "llama" (Mistral included: the same network), "qwen2", or the raw model type.
  std::string family;
  int hidden_size = 0, vocab_size = 0, num_layers = 0, kv_dim = 0;  // 0: not known
  int kv_value_dim = 0;  // what a token's values take of the cache (ModelConfig::cache_value_dim); 0: kv_dim
  int max_context = 0;         // max_position_embeddings / <arch>.context_length
  uint64_t parameters = 0;     // as Model::parameter_count() counts them
  std::string dtype;           // as Model::weights_dtype() names it ("bf16", "q8_0", ...)
  uint64_t size_bytes = 0;     // the weight files on disk
  // weight bytes the loader copies out of the mapping (GGUF llama: Q and K rows; GPT-OSS's fused HF experts)
  uint64_t copied_bytes = 0;
  std::string problem;         // why Model::load (or the head loader) would refuse it; empty: it loads
  std::string tokenizer_fingerprint;  // GGUF: the token list's hash; HF: filled on demand (tokenizer_fingerprint.h)
  std::string tokenizer_file;         // HF: tokenizer.json
  // Heads
  std::string base_model;      // the config's base_model_name_or_path (or base_model), as written
  int target_hidden = 0;       // the target hidden size the head reads (EAGLE-3: target_hidden_size)
  int draft_vocab = 0;         // EAGLE-3: the draft vocabulary its lm_head predicts
  int medusa_heads = 0;

  bool loads() const { return problem.empty(); }
  bool is_head() const {
    return kind == ModelKind::Eagle1Head || kind == ModelKind::Eagle3Head || kind == ModelKind::MedusaHead;
  }
};

// Probes a .gguf file (or any file starting with the GGUF magic, as Ollama's blobs do) or a folder (a Hugging Face
// model, an EAGLE or Medusa head, a LoRA adapter). Throws InputError naming the file when it cannot be read as one
// at all (missing, truncated, not the format): the caller reports a broken store entry. Anything it can read but
// SpecScope cannot run is returned with `problem` set.
ModelFacts probe_model(const std::string& path);

// Whether `path` is a regular file that starts with "GGUF".
bool looks_like_gguf(const std::string& path);

}  // namespace specscope::discovery
