// cpu::convert_to_f32 for the fuzz targets, which compile the parsers without engine/cpu/matmul.cpp and the kernels
// behind it (lora_adapter.cpp widens f16/bf16 weights with it). Widening is exact, so this element-by-element copy
// gives the very floats the SIMD one does (tests/matmul_test.cpp checks that one).
#include <cstring>
#include <string>

#include "engine/cpu/matmul.h"
#include "engine/util/dtype.h"
#include "engine/util/error.h"

namespace specscope::cpu {

void convert_to_f32(DType t, const void* src, float* dst, size_t count) {
  const auto* h = static_cast<const uint16_t*>(src);
  switch (t) {
    case DType::F32: std::memcpy(dst, src, count * sizeof(float)); return;
    case DType::F16:
      for (size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(h[i]);
      return;
    case DType::BF16:
      for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    default: throw InputError("", "convert_to_f32: unsupported type " + std::string(dtype_name(t)));
  }
}

}  // namespace specscope::cpu
