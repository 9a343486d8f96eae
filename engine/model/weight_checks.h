#pragma once
// Load-time sanity checks on weights, shared by the safetensors and GGUF loaders.
#include <string>

#include "engine/util/tensor.h"

namespace specscope {

// NaN or Inf anywhere in the weights means a corrupt or badly converted file: refuse it rather than generate
// garbage. `t` must be F32, F16 or BF16 (other dtypes are not scanned). Scans in parallel at memory speed.
// Throws InputError(file, ...) naming the tensor.
void check_finite(const TensorView& t, const std::string& file);

}  // namespace specscope
