#pragma once
// IEEE half -> float, the one widening the engine, the GGUF dequantizers and the CUDA block decoder share.
// Exact for every one of the 65536 halves (subnormals, infinities, NaN payloads; matmul_test's
// DTypeConversion.F16ToF32AllValues checks all of them against an ldexp oracle). Written with selects rather
// than branches so that loops over it vectorize on the CPU; on a GPU it is a handful of integer ops. A normal
// half only needs its exponent rebiased (15 -> 127); a subnormal is man * 2^-24, computed from an integer so that
// denormals-are-zero modes cannot touch it.
// Plain C++17 and no intrinsics, so nvcc compiles it too (F16C/AVX-512 code converts with its own instructions).
#include <cstdint>
#include <cstring>

#include "engine/util/host_device.h"

namespace specscope {

SPEC_HD float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  const uint32_t normal = (em + ((127u - 15u) << 10)) << 13;
  const uint32_t special = 0x7f800000u | ((em & 0x3ffu) << 13);  // inf, NaN (payload kept)
  const float sub_f = float(int32_t(em)) * 0x1p-24f;
  uint32_t sub;
  std::memcpy(&sub, &sub_f, 4);
  const uint32_t is_special = 0u - uint32_t(em >= 0x7c00u), is_sub = 0u - uint32_t(em < 0x0400u);
  const uint32_t u = sign | (special & is_special) | (sub & is_sub) | (normal & ~(is_special | is_sub));
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A little-endian half stored at any byte address (GGUF blocks put their scales at odd offsets).
SPEC_HD float load_half(const uint8_t* p) { return half_bits_to_float(uint16_t(p[0] | (p[1] << 8))); }

}  // namespace specscope
