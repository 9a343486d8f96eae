#pragma once
// Element types of stored tensors and the scalar conversions between them.
#include <cstdint>
#include <cstring>
#include <string_view>

namespace specscope {

// Q8_0 ... Q6_K are ggml's block-quantized formats (engine/formats/gguf_quant.h), held by GGUF weight views:
// rows of `cols` elements stored as cols / block elements blocks of block bytes each; only 2-D weights whose
// row length is a multiple of the block are valid. cpu::linear and cpu::embedding_row compute with them.
// MXFP4 is GPT-OSS's expert type in ggml's layout (engine/formats/mxfp4.h).
enum class DType : uint8_t { F32, F16, BF16, I64, I32, BOOL, U8, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4 };

// Bytes per element; 0 for the block-quantized types (see dtype_row_bytes).
size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
bool dtype_is_block(DType t);          // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4
int64_t dtype_block_elems(DType t);    // elements per block (1 for the others)
// Bytes of a row of n elements (n a multiple of the block size for block types).
size_t dtype_row_bytes(DType t, int64_t n);

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round-to-nearest-even, NaN kept as NaN (as torch does).
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

}  // namespace specscope
