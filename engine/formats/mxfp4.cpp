#include "engine/formats/mxfp4.h"

#include <cstring>

namespace specscope {
namespace {

// Q5_0's f16 scale for 2^(e - 128): a normal f16 down to 2^-14, a subnormal down to 2^-24.
bool fits_f16(uint8_t e) { return e >= 104 && e <= 143; }
uint16_t f16_power_of_two(uint8_t e) {
  const int p = int(e) - 128;
  return p >= -14 ? uint16_t((p + 15) << 10) : uint16_t(1u << (p + 24));
}

// One block from its 32 codes (element order) and scale.
void q5_0_block(const uint8_t* codes, uint8_t e, uint8_t* out) {
  const uint16_t d = f16_power_of_two(e);
  std::memcpy(out, &d, 2);
  uint32_t qh = 0;
  uint8_t q[kMxfp4Block];
  for (int j = 0; j < kMxfp4Block; ++j) {
    q[j] = uint8_t(kMxfp4Twice[codes[j] & 0x0F] + 16);
    qh |= uint32_t(q[j] >> 4) << j;
  }
  for (int b = 0; b < 4; ++b) out[2 + b] = uint8_t(qh >> (8 * b));  // little-endian, as ggml stores it
  for (int j = 0; j < 16; ++j) out[6 + j] = uint8_t((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
}

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

bool mxfp4_ggml_fits_q5_0(const uint8_t* blocks, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b)
    if (!fits_f16(blocks[b * 17])) return false;
  return true;
}
bool mxfp4_scales_fit_q5_0(const uint8_t* scales, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b)
    if (!fits_f16(scales[b])) return false;
  return true;
}

void mxfp4_ggml_to_q5_0(const uint8_t* blocks, int64_t n_blocks, uint8_t* q5_0) {
  uint8_t codes[kMxfp4Block];
  for (int64_t b = 0; b < n_blocks; ++b) {
    ggml_codes(blocks + b * 17, codes);
    q5_0_block(codes, blocks[b * 17], q5_0 + b * 22);
  }
}
void mxfp4_split_to_q5_0(const uint8_t* bytes, const uint8_t* scales, int64_t n_blocks, uint8_t* q5_0) {
  uint8_t codes[kMxfp4Block];
  for (int64_t b = 0; b < n_blocks; ++b) {
    split_codes(bytes + b * 16, codes);
    q5_0_block(codes, scales[b], q5_0 + b * 22);
  }
}

void mxfp4_ggml_to_f32(const uint8_t* blocks, int64_t n_blocks, float* out) {
  uint8_t codes[kMxfp4Block];
  for (int64_t b = 0; b < n_blocks; ++b) {
    ggml_codes(blocks + b * 17, codes);
    block_to_f32(codes, blocks[b * 17], out + b * kMxfp4Block);
  }
}
void mxfp4_split_to_f32(const uint8_t* bytes, const uint8_t* scales, int64_t n_blocks, float* out) {
  uint8_t codes[kMxfp4Block];
  for (int64_t b = 0; b < n_blocks; ++b) {
    split_codes(bytes + b * 16, codes);
    block_to_f32(codes, scales[b], out + b * kMxfp4Block);
  }
}

}  // namespace specscope
