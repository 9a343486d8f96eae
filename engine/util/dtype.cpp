#include "engine/util/dtype.h"

namespace specscope {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::BOOL: case DType::U8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::BOOL: return "bool";
    case DType::U8: return "u8";
  }
  return "?";
}

// IEEE half conversions written out bit by bit so they are exact and portable (F16C is used in hot loops).
float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do { man <<= 1; ++e; } while (!(man & 0x400u));
      u = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | man << 13;
  } else {
    u = sign | (exp + 112) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return uint16_t(sign | 0x7e00u);           // NaN
  if (absu >= 0x477ff000u) return uint16_t(sign | 0x7c00u);          // overflow -> inf (rounding included)
  if (absu < 0x38800000u) {                                           // subnormal or zero in half
    if (absu < 0x33000000u) return uint16_t(sign);
    uint32_t e = absu >> 23;
    uint32_t m = (absu & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // half subnormal = m * 2^(e-150) / 2^-24 = m >> (126 - e)
    uint32_t half_m = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1))) ++half_m;
    return uint16_t(sign | half_m);
  }
  uint32_t r = absu + 0xfffu + ((absu >> 13) & 1u) - 0x38000000u;
  return uint16_t(sign | (r >> 13));
}

}  // namespace specscope
