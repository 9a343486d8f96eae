#pragma once
// Where a Hugging Face checkpoint keeps its language model's tensors. A *ForCausalLM has them at "model." +
// embed_tokens / layers.N. / norm, and its LM head at "lm_head.weight". A vision-language checkpoint
// (ModelConfig::wrapper_architecture: Gemma3ForConditionalGeneration) holds the same text model beside a vision
// tower, under the key layout of the transformers version that saved it: "model.language_model." with the head at
// "lm_head.weight" (transformers >= 4.52), or "language_model.model." with the head at
// "language_model.lm_head.weight" (earlier, as Google's published Gemma 3 files are).
#include <cstdint>
#include <string>

#include "engine/model/config.h"

namespace specscope {

class TensorStore;

struct HfTextNames {
  std::string model = "model.";           // prefix of embed_tokens.weight, layers.N., norm.weight
  std::string lm_head = "lm_head.weight";  // the untied LM head
  // Whether a tensor belongs to the language model (what the loader binds, scans and counts): everything but a
  // wrapper's vision tower and projector.
  bool owns(const std::string& name) const;
  // The language model's parameters in `store` (what Model::parameter_count reports): the tensors it owns.
  uint64_t parameters(const TensorStore& store) const;
  bool wrapped = false;
};

// The names `store` uses for `config`'s model. A wrapper whose files hold the embeddings under neither layout is an
// InputError naming the file and both names looked for.
HfTextNames hf_text_names(const ModelConfig& config, const TensorStore& store);

}  // namespace specscope
