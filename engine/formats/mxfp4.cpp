#include "engine/formats/mxfp4.h"

#include <cstring>

namespace specscope {
namespace {

void ggml_codes(const uint8_t* block, uint8_t* codes) {
  for (int j = 0; j < 16; ++j) {
    codes[j] = block[1 + j] & 0x0F;
    codes[j + 16] = block[1 + j] >> 4;
  }
}
void split_codes(const uint8_t* bytes, uint8_t* codes) {
  for (int j = 0; j < 16; ++j) {
    codes[2 * j] = bytes[j] & 0x0F;
    codes[2 * j + 1] = bytes[j] >> 4;
  }
}

void block_to_f32(const uint8_t* codes, uint8_t e, float* out) {
  const float d = mxfp4_half_scale(e);
  for (int j = 0; j < kMxfp4Block; ++j) out[j] = float(kMxfp4Twice[codes[j]]) * d;
}

}  // namespace

float mxfp4_half_scale(uint8_t e) {
  // GGML_E8M0_TO_FP32_HALF: 2^(e - 128); e 0 and 1 are f32 subnormals.
  const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void mxfp4_split_to_ggml(const uint8_t* bytes, const uint8_t* scales, int64_t n_blocks, uint8_t* ggml) {
  uint8_t codes[kMxfp4Block];
  for (int64_t b = 0; b < n_blocks; ++b) {
    split_codes(bytes + b * 16, codes);
    uint8_t* out = ggml + b * 17;
    out[0] = scales[b];
    for (int j = 0; j < 16; ++j) out[1 + j] = uint8_t(codes[j] | codes[j + 16] << 4);
  }
}

void mxfp4_ggml_to_f32(const uint8_t* blocks, int64_t n_blocks, float* out) {
  uint8_t codes[kMxfp4Block];
  for (int64_t b = 0; b < n_blocks; ++b) {
    ggml_codes(blocks + b * 17, codes);
    block_to_f32(codes, blocks[b * 17], out + b * kMxfp4Block);
  }
}
}  // namespace specscope
