#pragma once
// The two halves of probe_model (model_probe.h): one per on-disk format.
#include <string>

#include "engine/discovery/model_probe.h"

namespace specscope::discovery {

ModelFacts probe_gguf(const std::string& path);
ModelFacts probe_hf_folder(const std::string& path);
// "mistral" and "llama" are one network to a drafter; other model types are themselves.
std::string family_of(const std::string& model_type);

}  // namespace specscope::discovery
