#pragma once
// Finding and opening the weight file of a published head directory: safetensors, or a PyTorch zip
// checkpoint (.bin / .pt) read without executing pickle code.
#include <memory>
#include <string>
#include <vector>

#include "engine/formats/safetensors.h"

namespace specscope {

// Opens the first of `names` that exists in `dir`; InputError listing them when none does.
std::shared_ptr<TensorStore> open_head_weights(const std::string& dir, const std::vector<std::string>& names);
// Reads a head's config.json as JSON text; InputError when missing or invalid.
std::string read_head_config(const std::string& dir);

}  // namespace specscope
