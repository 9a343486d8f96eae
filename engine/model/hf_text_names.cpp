#include "engine/model/hf_text_names.h"

#include "engine/formats/safetensors.h"
#include "engine/util/error.h"

namespace specscope {

bool HfTextNames::owns(const std::string& name) const {
  return !wrapped || name.starts_with(model) || name == lm_head;
}

uint64_t HfTextNames::parameters(const TensorStore& store) const {
  uint64_t n = 0;
  for (const auto& [name, t] : store.all())
    if (owns(name)) n += uint64_t(t.numel());
  return n;
}

HfTextNames hf_text_names(const ModelConfig& config, const TensorStore& store) {
  HfTextNames n;
  if (config.wrapper_architecture.empty()) return n;
  n.wrapped = true;
  for (const auto& [model, lm_head] : {std::pair{"model.language_model.", "lm_head.weight"},
                                       std::pair{"language_model.model.", "language_model.lm_head.weight"}}) {
    if (!store.has(std::string(model) + "embed_tokens.weight")) continue;
    n.model = model;
    n.lm_head = lm_head;
    return n;
  }
  throw InputError(store.files.empty() ? config.wrapper_architecture : store.files.front(),
                   config.wrapper_architecture +
                       " checkpoint without its text model's embeddings (looked for "
                       "'model.language_model.embed_tokens.weight' and 'language_model.model.embed_tokens.weight')");
}

}  // namespace specscope
