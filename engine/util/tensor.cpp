#include "engine/util/tensor.h"

#include <stdexcept>

namespace specscope {

std::string TensorView::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

float TensorView::at(int64_t i) const {
  switch (dtype) {
    case DType::F32: return static_cast<const float*>(data)[i];
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::I64: return float(static_cast<const int64_t*>(data)[i]);
    case DType::I32: return float(static_cast<const int32_t*>(data)[i]);
    case DType::BOOL: case DType::U8: return float(static_cast<const uint8_t*>(data)[i]);
    case DType::Q8_0: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1:
    case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
      throw std::invalid_argument("TensorView::at on block-quantized tensor '" + name + "'");
  }
  return 0.f;
}

std::vector<float> TensorView::to_f32() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[size_t(i)] = at(i);
  return out;
}

}  // namespace specscope
