#pragma once
// The ModelConfig of a GGUF file, from its <arch>.* metadata (see gguf_model.h for what else loading involves).
#include "engine/model/config.h"

namespace specscope {

class GgufFile;

// The ModelConfig a GGUF file's metadata describes (rope_freq_factors left empty; the loader fills it from the
// rope_freqs.weight tensor). `tied`: whether the file has no output.weight. Throws InputError naming the file for
// an unsupported architecture or a missing, mistyped or absurd key (each size is checked against a range far
// past any released model before anything is allocated from it).
ModelConfig config_from_gguf(const GgufFile& g, bool tied);

}  // namespace specscope
