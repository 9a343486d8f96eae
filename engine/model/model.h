#pragma once
// A loaded Llama-family model: config, memory-mapped weights, tokenizer, chat template, generation defaults.
// Immutable once loaded and shared by every Context (lane) that runs it.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/cpu/weight_form.h"
#include "engine/model/config.h"
#include "engine/model/forward.h"
#include "engine/model/weights.h"

namespace specscope {

class Tokenizer;
class ChatTemplate;

struct GenerationDefaults {  // generation_config.json
  std::optional<float> temperature, top_p;
  std::optional<int> top_k;
  std::vector<int> eos_token_ids;
};

struct LoadOptions {
  bool check_finite = true;  // scan weights for NaN/Inf (fast; catches corrupt files)
  // Called on the loading thread as the weights are bound and checked (the part of a load that reads every byte of
  // a multi-gigabyte file): bytes of tensors done so far of the total, from (0, total) to (total, total).
  std::function<void(uint64_t done, uint64_t total)> progress;
};

class TensorStore;

// What names a model in a recorded session: where it was, what it is, and hashes of config.json's bytes and of
// the weight index (every tensor's name, dtype and shape, in name order), so a replay can tell whether the model
// on disk is still the one that was recorded without reading the weights.
struct ModelIdentity {
  std::string path, architecture, config_sha256, weights_index_sha256;
};

class Model : public std::enable_shared_from_this<Model> {
 public:
  // `path` is a Hugging Face model directory (config.json, *.safetensors, tokenizer.json, ...), a peft LoRA
  // adapter directory (adapter_config.json + adapter_model.safetensors: its base is loaded and the adapter merged
  // in, see lora_adapter.h) or a .gguf file (see gguf_model.h).
  // Throws InputError naming the file and the problem.
  static std::shared_ptr<const Model> load(const std::string& path, const LoadOptions& opts = {});

  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ChatTemplate& chat_template() const { return *chat_template_; }
  const GenerationDefaults& generation_defaults() const { return gen_; }
  // Every id that ends generation (config, generation_config and tokenizer EOS, deduplicated).
  const std::vector<int>& eos_ids() const { return eos_ids_; }
  std::string weights_dtype() const;  // the stored dtype of the matrices, e.g. "bf16"
  uint64_t parameter_count() const;
  const ModelIdentity& identity() const { return identity_; }

  // A new sequence on the CPU backend.
  // form: see CpuContext (engine/model/cpu_context.h).
  std::unique_ptr<Context> new_cpu_context(int n_ctx = 0, cpu::WeightForm form = cpu::WeightForm::AsLoaded) const;
  // The weights with every linear layer requantized to `form` (engine/cpu/weight_form.h), made on the first call for
  // that form and shared by every context that asks after it: a drafter gets a context per prompt, and packing a copy
  // for each put the packing and a cold copy of the weights before every prompt's first draft. Null for AsLoaded and
  // where the CPU has no kernel for the form.
  std::shared_ptr<const ModelWeights> requantized_weights(cpu::WeightForm form) const;
  // The weights with the matrices the CPU kernels read in place copied into huge pages (resident_weights.h), made on
  // the first call (the first CPU context) and shared after; null where the weight-memory setting, or the memory
  // available, says to read the file's mapping. GPU backends never ask, so they never pay for the copy.
  // `progress` (bytes copied of the total) is called only by the call that makes the copy.
  std::shared_ptr<const ModelWeights> resident_weights(
      const std::function<void(uint64_t done, uint64_t total)>& progress = {}) const;

 private:
  // A Hugging Face directory; tokenizer*.json and generation_config.json are taken from `files_dir` where it has
  // them (a LoRA adapter's own), else from `path`.
  static std::shared_ptr<Model> load_directory(const std::string& path, const LoadOptions& opts,
                                               const std::string& files_dir);

  std::string path_;
  ModelConfig config_;
  ModelWeights weights_;
  std::shared_ptr<Tokenizer> tokenizer_;
  std::shared_ptr<ChatTemplate> chat_template_;
  GenerationDefaults gen_;
  std::vector<int> eos_ids_;
  ModelIdentity identity_;
  std::shared_ptr<const TensorStore> store_;  // owns the mappings the weight views point into (not for GGUF)
  // The language model's parameters, counted at load (a vision-language checkpoint's vision tower left out).
  uint64_t n_params_ = 0;
  std::string stored_dtype_;  // e.g. "q8_0" for a mostly-Q8_0 file; empty: the embedding's dtype
  mutable std::once_flag requant_once_[3];                           // per cpu::WeightForm
  mutable std::shared_ptr<const ModelWeights> requantized_[3];        // requantized_weights(form), once made
  mutable std::once_flag resident_once_;
  mutable std::shared_ptr<const ModelWeights> resident_;              // resident_weights(), once made

  friend std::shared_ptr<const Model> load_gguf_model(const std::string& path, const LoadOptions& opts);
};

}  // namespace specscope
