#pragma once
// Element types of stored tensors and the scalar conversions between them.
#include <cstdint>
#include <cstring>
#include <string_view>

namespace specscope {

enum class DType : uint8_t { F32, F16, BF16, I64, I32, BOOL, U8 };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);

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
