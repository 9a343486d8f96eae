#pragma once
// MXFP4 (the OCP microscaling 4-bit float; GPT-OSS's expert weights): blocks of 32 E2M1 codes sharing one E8M0
// scale byte e. Code c is worth kMxfp4Twice[c] / 2 * 2^(e - 127), i.e. kMxfp4Twice[c] * 2^(e - 128), as ggml's
// kvalues_mxfp4 and GGML_E8M0_TO_FP32_HALF compute it.
// Two layouts reach SpecScope:
//   ggml (GGUF type MXFP4, 17 bytes a block): e, then 16 bytes with element j in the low nibble of byte j and
//     element j + 16 in its high nibble (Q4_0's order);
//   the published safetensors (`*_blocks` [.., 16] and `*_scales`, transformers' Mxfp4 integration): the scales
//     apart, element 2j in the low nibble of byte j and element 2j + 1 in its high nibble.
// SpecScope computes with them as Q5_0 (x = (q - 16) * d): every MXFP4 value is kMxfp4Twice[c] * 2^(e - 128), a
// 5-bit code q = kMxfp4Twice[c] + 16 times an f16 scale d = 2^(e - 128) whenever that power of two is an f16
// (e in 104..143, every published checkpoint's range): the same numbers exactly, in 22 bytes a block instead of
// 17, read by the Q5_0 kernels. A tensor with a scale outside that range is widened to bf16 instead (also exact).
#include <cstdint>

namespace specscope {

constexpr int kMxfp4Block = 32;
constexpr int8_t kMxfp4Twice[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): what a code's doubled value is multiplied by.
float mxfp4_half_scale(uint8_t e);
// Whether every scale of a ggml-layout tensor (blocks of 17 bytes) / of a scales array fits Q5_0's f16.
bool mxfp4_ggml_fits_q5_0(const uint8_t* blocks, int64_t n_blocks);
bool mxfp4_scales_fit_q5_0(const uint8_t* scales, int64_t n_blocks);
// n_blocks blocks to Q5_0 blocks (22 bytes each) holding the same values; the scales must fit (above).
void mxfp4_ggml_to_q5_0(const uint8_t* blocks, int64_t n_blocks, uint8_t* q5_0);
void mxfp4_split_to_q5_0(const uint8_t* codes, const uint8_t* scales, int64_t n_blocks, uint8_t* q5_0);
// n_blocks blocks to 32 f32 values each (ggml's dequantize_row_mxfp4); to bf16 bits (exact: a code's value has at
// most 2 significant bits).
void mxfp4_ggml_to_f32(const uint8_t* blocks, int64_t n_blocks, float* out);
void mxfp4_split_to_f32(const uint8_t* codes, const uint8_t* scales, int64_t n_blocks, float* out);

}  // namespace specscope
