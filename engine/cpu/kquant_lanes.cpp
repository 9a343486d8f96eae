#include "engine/cpu/kquant_lanes.h"

#include <cstring>

namespace specscope::cpu {

namespace {

// codes[b][e] (8 blocks of 32, 4 bits each) into the 128 bytes of lanes-layout low nibbles at `out`.
void put_low4(const uint8_t (&codes)[8][32], uint8_t* out) {
  for (int k = 0; k < 4; ++k)
    for (int c = 0; c < 8; ++c)
      for (int i = 0; i < 4; ++i)
        out[32 * k + 4 * c + i] = uint8_t((codes[c][4 * k + i] & 15) | (codes[c][16 + 4 * k + i] & 15) << 4);
}

}  // namespace

size_t lanes_super_block_bytes(DType t) {
  switch (t) {
    case DType::Q8_0: return 272;  // a unit of 8 blocks of 34 bytes
    case DType::Q4_0: return 144;  // a unit of 8 blocks of 18 bytes
    case DType::Q4_K: return 144;
    case DType::Q5_K: return 176;
    case DType::Q6_K: return 210;
    default: return 0;
  }
}

void q4k_super_block_to_lanes(const uint8_t* in, uint8_t* out) {
  // ggml: code e of block s is nibble s % 2 of byte 32 (s / 2) + e of the codes.
  uint8_t codes[8][32];
  for (int s = 0; s < 8; ++s)
    for (int e = 0; e < 32; ++e) codes[s][e] = (in[16 + 32 * (s / 2) + e] >> (4 * (s % 2))) & 15;
  if (out != in) std::memcpy(out, in, 16);
  put_low4(codes, out + 16);
}

void q5k_super_block_to_lanes(const uint8_t* in, uint8_t* out) {
  // ggml: code e of block s is nibble s % 2 of byte 32 (s / 2) + e of the codes, its fifth bit bit s of qh[e].
  uint8_t codes[8][32];
  for (int s = 0; s < 8; ++s)
    for (int e = 0; e < 32; ++e)
      codes[s][e] = uint8_t(((in[48 + 32 * (s / 2) + e] >> (4 * (s % 2))) & 15) | ((in[16 + e] >> s) & 1) << 4);
  if (out != in) std::memcpy(out, in, 16);
  put_low4(codes, out + 48);
  for (int c = 0; c < 8; ++c)
    for (int i = 0; i < 4; ++i) {
      uint8_t byte = 0;
      for (int s = 0; s < 8; ++s) byte |= uint8_t((codes[c][4 * s + i] >> 4) << s);
      out[16 + 4 * c + i] = byte;
    }
}

bool tensor_takes_lanes(DType t, int64_t row_elements) {
  // Q4_0's and Q8_0's units of 8 blocks must not cross a row's end; a K-quant row is whole super-blocks anyway.
  const bool units = t == DType::Q4_0 || t == DType::Q8_0;
  return lanes_super_block_bytes(t) > 0 && (!units || row_elements % 256 == 0);
}

void q4_0_unit_to_lanes(const uint8_t* in, uint8_t* out) {
  // ggml: block c is 18 bytes at 18c, f16 d then 16 bytes whose low nibbles are codes 0-15 and high ones 16-31.
  uint8_t codes[8][32], d[16];
  for (int c = 0; c < 8; ++c) {
    std::memcpy(d + 2 * c, in + 18 * c, 2);
    for (int e = 0; e < 16; ++e) {
      codes[c][e] = in[18 * c + 2 + e] & 15;
      codes[c][16 + e] = in[18 * c + 2 + e] >> 4;
    }
  }
  std::memcpy(out, d, 16);
  put_low4(codes, out + 16);
}

void q8_0_unit_to_lanes(const uint8_t* in, uint8_t* out) {
  // ggml: block c is 34 bytes at 34c, f16 d then 32 int8 codes. Lanes: step j's dword c is codes 4j..4j+3 of block c.
  uint8_t unit[272];
  for (int c = 0; c < 8; ++c) {
    std::memcpy(unit + 2 * c, in + 34 * c, 2);
    for (int j = 0; j < 8; ++j) std::memcpy(unit + 16 + 32 * j + 4 * c, in + 34 * c + 2 + 4 * j, 4);
  }
  std::memcpy(out, unit, sizeof unit);
}

void q6k_super_block_to_lanes(const uint8_t* in, uint8_t* out) {
  // ggml: code l of block 4h + r: low nibble r / 2 of ql[64h + 32 (r % 2) + l], high bits 2r..2r+1 of qh[32h + l].
  uint8_t codes[8][32];
  for (int b = 0; b < 8; ++b) {
    const int h = b / 4, r = b % 4;
    for (int l = 0; l < 32; ++l)
      codes[b][l] = uint8_t(((in[64 * h + 32 * (r & 1) + l] >> (4 * (r >> 1))) & 15) |
                            ((in[128 + 32 * h + l] >> (2 * r)) & 3) << 4);
  }
  if (out != in) std::memcpy(out + 192, in + 192, 18);
  put_low4(codes, out);
  for (int h = 0; h < 2; ++h)
    for (int c = 0; c < 8; ++c)
      for (int i = 0; i < 4; ++i) {
        uint8_t byte = 0;
        for (int s = 0; s < 4; ++s) byte |= uint8_t((codes[c][4 * (4 * h + s) + i] >> 4) << (2 * s));
        out[128 + 32 * h + 4 * c + i] = byte;
      }
}

void to_lanes(DType t, const uint8_t* in, uint8_t* out, size_t count) {
  const size_t bytes_each = lanes_super_block_bytes(t);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* from = in + i * bytes_each;
    uint8_t* to = out + i * bytes_each;
    if (t == DType::Q8_0) q8_0_unit_to_lanes(from, to);
    else if (t == DType::Q4_0) q4_0_unit_to_lanes(from, to);
    else if (t == DType::Q4_K) q4k_super_block_to_lanes(from, to);
    else if (t == DType::Q5_K) q5k_super_block_to_lanes(from, to);
    else if (t == DType::Q6_K) q6k_super_block_to_lanes(from, to);
  }
}

}  // namespace specscope::cpu
