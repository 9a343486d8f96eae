#include "engine/util/widen.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace specscope {

void widen_to_f32(DType t, const void* src, float* dst, size_t count) {
  const auto* s = static_cast<const uint16_t*>(src);
  switch (t) {
    case DType::F32: std::memcpy(dst, src, count * sizeof(float)); break;
    case DType::F16: {
      static const std::vector<float> table = [] {
        std::vector<float> v(65536);
        for (uint32_t h = 0; h < 65536; ++h) v[h] = f16_to_f32(uint16_t(h));
        return v;
      }();
      for (size_t i = 0; i < count; ++i) dst[i] = table[s[i]];
      break;
    }
    case DType::BF16:
      for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(s[i]);
      break;
    default: break;
  }
}

}  // namespace specscope
