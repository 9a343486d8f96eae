#pragma once
// What a GGUF file's quantization is called, as llama.cpp's file types (llama_ftype) name it, lower-cased: "q4_k_m",
// "q8_0", "bf16". A Q4_K_M file holds Q4_K and Q6_K matrices (llama-quantize keeps the embedding, the value
// projections and half of the down projections in Q6_K), so no single tensor's type names it: the type of the
// embedding said "q6_k" for every Llama-3.2 Q4_K_M download.
#include <string>

#include "engine/formats/gguf.h"

namespace specscope {

// From general.file_type when the file has it (an integer llama.cpp knows); else the ggml type that holds most of
// the layers' bytes ("blk.*" tensors, or all tensors in a file without layers); "" for a file without tensors.
std::string gguf_file_type_name(const GgufFile& g);

}  // namespace specscope
