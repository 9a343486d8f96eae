#include "engine/cpu/q4k_lanes.h"

#include <cstring>

namespace specscope::cpu {

void q4k_super_block_to_lanes(const uint8_t* in, uint8_t* out) {
  // ggml: code e of sub-block s is nibble s % 2 of byte 32 (s / 2) + e of the codes.
  uint8_t codes[8][32];
  for (int s = 0; s < 8; ++s)
    for (int e = 0; e < 32; ++e) codes[s][e] = (in[16 + 32 * (s / 2) + e] >> (4 * (s % 2))) & 15;
  if (out != in) std::memcpy(out, in, 16);
  for (int k = 0; k < 4; ++k)
    for (int c = 0; c < 8; ++c)
      for (int i = 0; i < 4; ++i) out[16 + 32 * k + 4 * c + i] = uint8_t(codes[c][4 * k + i] | codes[c][16 + 4 * k + i] << 4);
}

void q4k_to_lanes_in_place(uint8_t* bytes, size_t count) {
  for (size_t i = 0; i < count; ++i) q4k_super_block_to_lanes(bytes + i * kQ4KSuperBlockBytes, bytes + i * kQ4KSuperBlockBytes);
}

}  // namespace specscope::cpu
