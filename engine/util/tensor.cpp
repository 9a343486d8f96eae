#include "engine/util/tensor.h"

#include <cstring>
#include <stdexcept>

namespace specscope {

std::string TensorView::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {
// Element i of type T. Copied out rather than dereferenced: a tensor inside a zip entry (PyTorch checkpoints)
// starts wherever the entry's data does, so its elements need not be aligned for T.
template <typename T>
T element(const void* data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * int64_t(sizeof(T)), sizeof(T));
  return v;
}
}  // namespace

float TensorView::at(int64_t i) const {
  switch (dtype) {
    case DType::F32: return element<float>(data, i);
    case DType::F16: return f16_to_f32(element<uint16_t>(data, i));
    case DType::BF16: return bf16_to_f32(element<uint16_t>(data, i));
    case DType::I64: return float(element<int64_t>(data, i));
    case DType::I32: return float(element<int32_t>(data, i));
    case DType::BOOL: case DType::U8: return float(static_cast<const uint8_t*>(data)[i]);
    case DType::Q8_0: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1:
    case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::MXFP4:
      throw std::invalid_argument("TensorView::at on block-quantized tensor '" + name + "'");
  }
  return 0.f;
}

std::vector<float> TensorView::to_f32() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[size_t(i)] = at(i);
  return out;
}

TensorView TensorView::rows_view(int64_t first, int64_t count, const std::string& part) const {
  if (shape.size() != 2 || first < 0 || count < 0 || first + count > rows() || requantized || lanes)
    throw std::invalid_argument("TensorView::rows_view: rows [" + std::to_string(first) + ", " +
                                std::to_string(first + count) + ") of '" + name + "' " + shape_str());
  const size_t row_bytes = dtype_is_block(dtype) ? dtype_row_bytes(dtype, cols()) : size_t(cols()) * dtype_size(dtype);
  TensorView v = *this;
  v.name = name + part;
  v.shape = {count, cols()};
  // A dry binder's views (gguf_load_problem) hold no data: no offset on a null pointer.
  v.data = data ? static_cast<const char*>(data) + size_t(first) * row_bytes : nullptr;
  return v;
}

}  // namespace specscope
