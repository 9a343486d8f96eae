#include "engine/util/dtype.h"

#include "engine/util/half_float.h"

namespace specscope {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::BOOL: case DType::U8: return 1;
    case DType::Q8_0: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1:
    case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::MXFP4:
      return 0;
  }
  return 0;
}

bool dtype_is_block(DType t) { return dtype_block_elems(t) > 1; }

int64_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::Q8_0: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::MXFP4:
      return 32;
    case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: return 256;
    default: return 1;
  }
}

size_t dtype_row_bytes(DType t, int64_t n) {
  // Block bytes as ggml defines them (checked against ggml_type_size in gguf_model_test).
  switch (t) {
    case DType::Q8_0: return size_t(n / 32) * 34;   // f16 d + 32 x int8
    case DType::Q4_0: return size_t(n / 32) * 18;   // f16 d + 16 bytes of nibbles
    case DType::Q4_1: return size_t(n / 32) * 20;   // f16 d, f16 m + 16 bytes of nibbles
    case DType::Q5_0: return size_t(n / 32) * 22;   // f16 d + 4 bytes of 5th bits + 16 bytes of nibbles
    case DType::Q5_1: return size_t(n / 32) * 24;   // f16 d, f16 m + 4 bytes of 5th bits + 16 bytes of nibbles
    case DType::Q4_K: return size_t(n / 256) * 144; // 2 x f16 + 12 scale bytes + 128 nibble bytes
    case DType::Q5_K: return size_t(n / 256) * 176; // Q4_K + 32 bytes of high bits
    case DType::Q6_K: return size_t(n / 256) * 210; // 128 + 64 + 16 scales + f16 d
    case DType::MXFP4: return size_t(n / 32) * 17;  // E8M0 scale + 16 bytes of E2M1 nibbles
    default: return size_t(n) * dtype_size(t);
  }
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
    case DType::Q8_0: return "q8_0";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_1: return "q4_1";
    case DType::Q5_0: return "q5_0";
    case DType::Q5_1: return "q5_1";
    case DType::Q4_K: return "q4_k";
    case DType::Q5_K: return "q5_k";
    case DType::Q6_K: return "q6_k";
    case DType::MXFP4: return "mxfp4";
  }
  return "?";
}

// IEEE half conversions written out bit by bit so they are exact and portable (F16C is used in hot loops).
float f16_to_f32(uint16_t h) { return half_bits_to_float(h); }

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
