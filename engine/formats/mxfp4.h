#pragma once
// MXFP4 (the OCP microscaling 4-bit float; GPT-OSS's expert weights): blocks of 32 E2M1 codes sharing one E8M0
// scale byte e. Code c is worth kMxfp4Twice[c] / 2 * 2^(e - 127), i.e. kMxfp4Twice[c] * 2^(e - 128), as ggml's
// kvalues_mxfp4 and GGML_E8M0_TO_FP32_HALF compute it.
// Two layouts reach SpecScope:
//   ggml (GGUF type MXFP4, DType::MXFP4, 17 bytes a block): e, then 16 bytes with element j in the low nibble of
//     byte j and element j + 16 in its high nibble (Q4_0's order); the engine computes with this one
//     (cpu/quant_int8.h's Int8Type::MXFP4);
//   the published safetensors (`*_blocks` [.., 16] and `*_scales`, transformers' Mxfp4 integration): the scales
//     apart, element 2j in the low nibble of byte j and element 2j + 1 in its high nibble; repacked into ggml's at
//     load.
#include <cstdint>

namespace specscope {

constexpr int kMxfp4Block = 32;
constexpr int8_t kMxfp4Twice[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): what a code's doubled value is multiplied by.
float mxfp4_half_scale(uint8_t e);
// n_blocks blocks of the published layout (16 bytes of codes each, and a scale byte each) in ggml's (17 bytes each).
void mxfp4_split_to_ggml(const uint8_t* codes, const uint8_t* scales, int64_t n_blocks, uint8_t* ggml);
// n_blocks blocks to 32 f32 values each (ggml's dequantize_row_mxfp4).
void mxfp4_ggml_to_f32(const uint8_t* blocks, int64_t n_blocks, float* out);

}  // namespace specscope
