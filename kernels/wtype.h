#pragma once
// The storage type of a weight on the GPU, shared by the launchers (llama_kernels.h) and their CPU references
// (kernel_refs.h). Plain C++ with no CUDA headers, so the references build and run on machines without CUDA.
#include "engine/util/host_device.h"

namespace specscope::cuda {

// f32/f16/bf16, or GGUF blocks (decoded by kernels/quant_decode.h, same order as its Block).
enum class WType : int { F32 = 0, F16 = 1, BF16 = 2, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };

SPEC_HD bool is_block(WType t) { return int(t) >= int(WType::Q8_0); }
// Bytes of one element of a dense (non-block) type: f32 4, f16/bf16 2.
inline unsigned dense_element_bytes(WType t) { return t == WType::F32 ? 4u : 2u; }

}  // namespace specscope::cuda
