#pragma once
// The storage type of a weight on the GPU, shared by the launchers (llama_kernels.h) and their CPU references
// (kernel_refs.h). Plain C++ with no CUDA headers, so the references build and run on machines without CUDA.
#include <cstddef>

#include "engine/util/host_device.h"
#include "kernels/quant_decode.h"

namespace specscope::cuda {

// f32/f16/bf16, or GGUF blocks (decoded by kernels/quant_decode.h, same order as its Block).
enum class WType : int { F32 = 0, F16 = 1, BF16 = 2, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K };

SPEC_HD bool is_block(WType t) { return int(t) >= int(WType::Q8_0); }
// Bytes of one element of a dense (non-block) type: f32 4, f16/bf16 2.
SPEC_HD unsigned dense_element_bytes(WType t) { return t == WType::F32 ? 4u : 2u; }

// WType's block types and quant_decode::Block list the formats in the same order (block_of subtracts).
static_assert(int(WType::Q6_K) - int(WType::Q8_0) == int(quant_decode::Block::Q6_K));
static_assert(int(WType::Q4_K) - int(WType::Q8_0) == int(quant_decode::Block::Q4_K));
// The decoder's format of block type t.
SPEC_HD quant_decode::Block block_of(WType t) { return quant_decode::Block(int(t) - int(WType::Q8_0)); }
// Bytes of a row of `cols` weights of type t: the stride between a matrix's rows (and, times its rows, between
// matrices stacked in one upload, as a layer's experts are).
SPEC_HD size_t row_bytes(WType t, int cols) {
  return is_block(t) ? quant_decode::row_bytes(block_of(t), cols) : size_t(cols) * dense_element_bytes(t);
}

}  // namespace specscope::cuda
